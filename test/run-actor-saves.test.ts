/**
 * When the run actor saves outside a settle (src/runtime/run-actor.ts `save`): a change of
 * limits on a working run keeps its lease, and a save that changes nothing writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { Agent, RunBusyError } from '../src/index.js';
import { viewOf } from '../src/runtime/run-actor.js';
import { MemoryStore } from '../src/stores/memory.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

/** A memory store that counts its writes. */
function counting() {
  const store = new MemoryStore();
  const save = store.save.bind(store);
  const seen = { saves: 0 };
  store.save = (...args: Parameters<MemoryStore['save']>) => {
    seen.saves++;
    return save(...args);
  };
  return { store, seen };
}

describe('the run actor’s saves between settles', () => {
  it('extendBudget on a run at work saves the new limits and keeps the lease: no other owner may take the run', async () => {
    const { store } = counting();
    const held = gate<string>();
    let started = false;
    const agent = new Agent({
      runId: 'r',
      store,
      maxSteps: 5,
      policy: sequence({ tool: 'slow' }, { final: 'ok' }),
      tools: [
        {
          name: 'slow',
          fn: () => {
            started = true;
            return held.promise;
          },
        },
      ],
    });
    const done = agent.start('go');
    await until(() => started);
    agent.extendBudget({ maxSteps: 9 });
    await until(() => agent.version !== null && agent.version >= 3);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await expect(store.claim('r', { owner: 'other', leaseMs: 1_000 })).rejects.toBeInstanceOf(RunBusyError);
    const stored = await store.load('r');
    expect(stored?.status).toBe('running');
    held.resolve('done');
    expect(await done).toBe('done');
    expect(agent.state.limits.maxSteps).toBe(9);
  });

  it('extendBudget to the limits a run at rest already has writes nothing', async () => {
    const { store, seen } = counting();
    const agent = new Agent({
      runId: 'r',
      store,
      maxSteps: 5,
      policy: sequence({ tool: 'mail' }),
      tools: [recorder('mail', { sideEffect: true }).tool],
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const saves = seen.saves;
    const version = agent.version;
    agent.extendBudget({ maxSteps: 5 });
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(seen.saves).toBe(saves);
    expect(agent.version).toBe(version);
    agent.extendBudget({ maxSteps: 6 });
    await until(() => seen.saves > saves);
    expect((await store.load('r'))?.version).toBe((version ?? 0) + 1);
  });

  it('a failed or stopped actor has nothing to save: its last snapshot is not the run', () => {
    const context = { history: [], calls: [] };
    const snapshot = (status: string) =>
      ({ status, value: 'done', context }) as unknown as Parameters<typeof viewOf>[0];
    expect(viewOf(snapshot('error'))).toBeNull();
    expect(viewOf(snapshot('stopped'))).toBeNull();
    expect(viewOf(snapshot('done'))).toMatchObject({ status: 'done', pendingCalls: [], history: [] });
    expect(viewOf(snapshot('active'))).toMatchObject({ status: 'done', run: { status: 'active', value: 'done' } });
  });
});
