/** Lease rules that need no durable store: the bounds of a waiting claim, and the error classes. */
import { describe, expect, it } from 'vitest';
import {
  Agent,
  type Lease,
  LeaseLostError,
  RunBusyError,
  StoreUnavailableError,
  SystemError,
  TollgateError,
  UserError,
} from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { recorder, sequence } from '../support/helpers.js';

describe('claim with wait', () => {
  it('is bounded by the process’s clock too: with the store’s clock frozen, it gives up once wait ms have passed', async () => {
    const store = new MemoryStore({ now: () => Date.parse('2026-01-01T00:00:00.000Z') });
    await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    const started = performance.now();
    const error = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000, wait: 60 }).catch((e: unknown) => e);
    const waited = performance.now() - started;
    expect(error).toBeInstanceOf(RunBusyError);
    expect(error).toMatchObject({ holder: 'worker-a', until: '2026-01-01T00:01:00.000Z', runId: 'r' });
    expect((error as Error).message).toBe(
      'claim: run "r" is held by "worker-a" until 2026-01-01T00:01:00.000Z; waited 60 ms in vain',
    );
    expect(waited).toBeGreaterThanOrEqual(59);
    expect(waited).toBeLessThan(2_000);
  });

  it('does not wait for anything but a busy run: another error ends it at once', async () => {
    let calls = 0;
    const store = new MemoryStore({
      now: () => {
        calls++;
        return calls > 2 ? Number.NaN : 0;
      },
    });
    await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    await expect(store.claim('r', { owner: 'worker-b', leaseMs: 1_000, wait: 60_000 })).rejects.toMatchObject({
      name: 'OptionsError',
      message: expect.stringMatching(/the store's now\(\) returned NaN/),
    });
  });
});

describe('lease errors', () => {
  it('RunBusyError and LeaseLostError are TollgateErrors, neither the caller’s mistake nor a fault', async () => {
    const store = new MemoryStore();
    const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
    const busy = await store.claim('r', { owner: 'worker-b', leaseMs: 60_000 }).catch((e: unknown) => e);
    await store.release(lease);
    await store.claim('r', { owner: 'worker-b', leaseMs: 60_000 });
    const lost = await store.renew(lease).catch((e: unknown) => e);
    for (const [error, type] of [
      [busy, RunBusyError],
      [lost, LeaseLostError],
    ] as const) {
      expect(error).toBeInstanceOf(type);
      expect(error).toBeInstanceOf(TollgateError);
      expect(error).not.toBeInstanceOf(UserError);
      expect(error).not.toBeInstanceOf(SystemError);
      expect((error as Error).name).toBe(type.name);
    }
    expect((lost as Error).message).toBe(
      'renew: the lease of run "r" held by "worker-a" (token 1) is no longer current: the run was claimed again (token 2) by "worker-b"; stop working on the run, and claim it again to go on',
    );
  });
});

describe('a save that fails', () => {
  /** A memory store whose `failAt`-th save fails as a dropped connection would, and whose release takes a while. */
  class FlakyStore extends MemoryStore {
    saves = 0;
    constructor(readonly failAt: number) {
      super();
    }
    override async save(...args: Parameters<MemoryStore['save']>): Promise<number> {
      if (++this.saves === this.failAt) throw new StoreUnavailableError('save: the connection was dropped');
      return super.save(...args);
    }
    override async release(lease: Lease): Promise<boolean> {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return super.release(lease);
    }
  }

  it('gives the lease up before the caller hears of it: a reload right after the rejection is not refused as busy', async () => {
    const store = new FlakyStore(2);
    // A side effect, so the failing second save is its write-ahead record (a pure call is saved
    // with its result: it would have run once before the failure, and again after the reload).
    const look = recorder('look', { sideEffect: true, needsApproval: false });
    const agent = new Agent({
      runId: 'r',
      store,
      policy: sequence({ tool: 'look' }, { final: 'ok' }),
      tools: [look.tool],
    });
    await expect(agent.start('go')).rejects.toBeInstanceOf(StoreUnavailableError);
    const again = await Agent.load(store, 'r', {
      policy: sequence({ tool: 'look' }, { final: 'ok' }),
      tools: [look.tool],
    });
    expect(await again.run()).toBe('done');
    expect(look.calls).toHaveLength(1);
  });
});
