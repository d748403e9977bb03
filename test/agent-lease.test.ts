// Leases seen from the Agent, end to end on a reachable store: an agent that lost its run to
// another owner while a call was in flight has its result refused and calls nothing more; an
// agent in a call longer than its lease keeps the run by renewing it. The store's own lease
// rules are in the conformance suite; the LeaseHolder's in test/lease-holder.test.ts.
import { describe, expect, it } from 'vitest';
import { LOAD_WAIT_MS } from '../src/agent.js';
import {
  Agent,
  type CheckpointStore,
  LeaseLostError,
  type ProcessIdentity,
  RunBusyError,
  RunNotFoundError,
  type Tool,
  thisProcess,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { gate, idLike, sequence, until } from './support/helpers.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an agent’s lease on a reachable store', () => {
  it('lost while a call is in flight: its result save is refused, and it calls neither the policy nor a tool again', async () => {
    // The store's clock is moved by hand: A's lease lapses on it while A's tool call hangs,
    // though A itself (its renewal timer) is alive and the store answers.
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = new MemoryStore({ now: () => now });
    const held = gate();
    let paid = 0;
    const pay: Tool = {
      name: 'pay',
      sideEffect: true,
      fn: async () => {
        paid++;
        await held.promise;
        return 'paid';
      },
    };
    const policyA = sequence(
      { tool: 'pay', args: { cents: 500 } },
      { tool: 'pay', args: { cents: 1 } },
      { final: 'paid' },
    );
    const a = new Agent({ runId: 'r', store, owner: 'a', leaseMs: 60_000, policy: policyA, tools: [pay] });
    expect(await a.start('pay')).toBe('awaiting_approval');
    const deciding = a.decide(true, 'ok', { callId: a.state.pending?.id as string });
    await until(() => paid === 1); // A saved "r:1 in flight" and is paying
    const policyCalls = policyA.calls.length;

    now += 120_000; // A's lease lapsed: B, another worker, takes the run over (and holds it)
    const policyB = sequence({ final: 'unused' });
    const b = await Agent.load(store, 'r', { owner: 'b', leaseMs: 60_000, policy: policyB, tools: [pay] });
    const taken = await store.load('r');

    held.resolve(undefined); // A's call returns; its result is not A's to save any more
    await expect(deciding).rejects.toBeInstanceOf(LeaseLostError);
    await pause(50);
    expect(policyA.calls).toHaveLength(policyCalls);
    expect(paid).toBe(1);
    expect(await store.load('r')).toEqual(taken); // nothing of A's was written

    // B goes on by the crash rules: the call was in flight, so a human is asked again.
    expect(await b.run()).toBe('awaiting_approval');
    expect(b.state.pending).toMatchObject({ id: idLike('r:1#2'), outcome: 'unknown' });
    expect(policyB.calls).toEqual([]);
    await pause(50);
    expect(policyA.calls).toHaveLength(policyCalls);
    expect(paid).toBe(1);
  });

  it('renewed through a call three times its length: a second Agent.load is refused with RunBusyError until it ends', async () => {
    const store = new MemoryStore();
    const leaseMs = 600;
    let calls = 0;
    const slow: Tool = {
      name: 'slow',
      fn: async () => {
        calls++;
        await pause(3 * leaseMs + 150);
        return 'slow done';
      },
    };
    const policy = () => sequence({ tool: 'slow' }, { final: 'ok' });
    const a = new Agent({ runId: 'r', store, owner: 'a', leaseMs, policy: policy(), tools: [slow] });
    const running = a.start('wait');
    await until(() => calls === 1);
    const started = performance.now();
    const refusals: unknown[] = [];
    // Past the lease from the write-ahead save, then past two more lengths of it.
    for (const at of [leaseMs + 100, 2 * leaseMs + 100, 3 * leaseMs]) {
      await pause(Math.max(0, at - (performance.now() - started)));
      const load = Agent.load(store, 'r', { owner: 'b', leaseWaitMs: 0, policy: policy(), tools: [slow] });
      refusals.push(await load.catch((e) => e));
    }
    expect(refusals).toHaveLength(3);
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(RunBusyError);
      expect(refusal).toMatchObject({ holder: 'a' });
    }
    expect(await running).toBe('done');
    expect(calls).toBe(1);
    // Settled, A gave the run up: B may load it now, and finds it done.
    expect((await Agent.load(store, 'r', { owner: 'b', policy: policy(), tools: [slow] })).status).toBe('done');
  });

  describe('a run loaded `running` (its owner died mid-call)', () => {
    /** A store holding run 'r' as a killed owner left it: saved with its idempotent call in flight, no live lease. */
    async function orphaned(): Promise<MemoryStore> {
      const first = new MemoryStore();
      let called = false;
      const hung: Tool = {
        name: 'ship',
        sideEffect: true,
        idempotent: true,
        fn: () => {
          called = true; // after the write-ahead save that records the call in flight
          return new Promise(() => {});
        },
      };
      const dying = new Agent({
        runId: 'r',
        store: first,
        owner: 'dead',
        policy: sequence({ tool: 'ship' }),
        tools: [hung],
      });
      expect(await dying.start('ship it')).toBe('awaiting_approval');
      void dying.decide(true, 'ok');
      await until(() => called);
      const record = await first.load('r');
      if (record?.status !== 'running') throw new Error('no run in flight to copy');
      const store = new MemoryStore();
      await store.save(
        'r',
        {
          status: record.status,
          head: record.head,
          ...(record.base ? { base: record.base } : {}),
          from: 0,
          append: record.entries,
          pendingCalls: [],
        },
        0,
      );
      return store;
    }

    it('and never run: its lease is not renewed, so it lapses and another owner takes the run; a late run() calls nothing', async () => {
      const store = await orphaned();
      let shipped = 0;
      const ship: Tool = { name: 'ship', sideEffect: true, idempotent: true, fn: () => ++shipped };
      const policy = () => sequence({ final: 'shipped' });
      const leaseMs = 300;
      const abandoned = await Agent.load(store, 'r', { owner: 'b', leaseMs, policy: policy(), tools: [ship] });
      expect(abandoned.status).toBe('running');
      const refused = await Agent.load(store, 'r', {
        owner: 'c',
        leaseWaitMs: 0,
        policy: policy(),
        tools: [ship],
      }).catch((e) => e);
      expect(refused).toBeInstanceOf(RunBusyError); // held while its lease lasts
      await pause(3 * leaseMs); // renewed, it would be held for as long as this process lives
      const taker = await Agent.load(store, 'r', { owner: 'c', policy: policy(), tools: [ship] });
      expect(await abandoned.run().catch((e) => e)).toBeInstanceOf(LeaseLostError);
      expect(shipped).toBe(0);
      expect(await taker.run()).toBe('done');
      expect(shipped).toBe(1);
    });

    it('and run: its lease is renewed from then on, through a call three times its length', async () => {
      const store = await orphaned();
      const leaseMs = 300;
      let shipped = 0;
      const ship: Tool = {
        name: 'ship',
        sideEffect: true,
        idempotent: true,
        fn: async () => {
          await pause(3 * leaseMs);
          return ++shipped;
        },
      };
      const policy = () => sequence({ final: 'shipped' });
      const loaded = await Agent.load(store, 'r', { owner: 'b', leaseMs, policy: policy(), tools: [ship] });
      const running = loaded.run();
      await pause(2 * leaseMs);
      const refused = await Agent.load(store, 'r', {
        owner: 'c',
        leaseWaitMs: 0,
        policy: policy(),
        tools: [ship],
      }).catch((e) => e);
      expect(refused).toBeInstanceOf(RunBusyError);
      expect(refused).toMatchObject({ holder: 'b' });
      expect(await running).toBe('done');
      expect(shipped).toBe(1);
    });
  });
});

describe('the lease of a run at rest, given up after a save', () => {
  // Found by modelTest (tollgate/testing/fast-check): extendBudget at rest saves the new limits and
  // then gave the lease up, whatever had begun meanwhile — a decision sent a few microtasks later
  // had its approved call refused ("this process holds no lease on the run"), the run stopped.
  it('is kept when an operation began while the save was on its way: extendBudget then decide runs the call', async () => {
    for (let turns = 0; turns <= 30; turns++) {
      const paid: string[] = [];
      const agent = new Agent({
        store: new MemoryStore(),
        tools: [{ name: 'pay', sideEffect: true, fn: (_args, key) => paid.push(key) }],
        policy: (history) => (history.length === 1 ? { tool: 'pay' } : { final: 'paid' }),
      });
      expect(await agent.start('pay')).toBe('awaiting_approval');
      agent.extendBudget({ maxSteps: 9 });
      for (let i = 0; i < turns; i++) await Promise.resolve();
      expect(await agent.decide(true), `after ${turns} microtasks`).toBe('done');
      expect(paid).toEqual([`${agent.runId}:1`]);
    }
  });
});

describe('Agent.load of a run another owner holds', () => {
  /** A run at rest in `store`, held by `owner` in `process` (given, or this process). */
  async function held(store: MemoryStore, process: ProcessIdentity | null) {
    const agent = new Agent({ runId: 'p', store, policy: sequence({ tool: 't' }), tools: [], maxSteps: 0 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    return store.claim('p', { owner: 'holder', leaseMs: 60_000, process });
  }
  const options = (extra: object = {}) => ({ owner: 'me', policy: sequence({ final: 'x' }), tools: [], ...extra });
  /** This process's identity with another start time: its pid now belongs to a newer process, so that holder is dead. */
  const reused = (): ProcessIdentity => ({ ...thisProcess(), startTime: String(Number(thisProcess().startTime) + 1) });

  it('whose process is provably dead on this machine: that lease is released and the run claimed at once', async () => {
    const store = new MemoryStore();
    const lease = await held(store, reused());
    const loaded = await Agent.load(store, 'p', options({ leaseWaitMs: 0 }));
    expect(loaded.status).toBe('budget_exhausted');
    await expect(store.renew(lease)).rejects.toMatchObject({ name: 'LeaseLostError', currentToken: lease.token + 1 });
  });

  it('alive, or dead where it cannot be proven (another boot, an unknown process): refused with the holder, its token and process', async () => {
    for (const process of [thisProcess(), { ...reused(), bootId: 'another-boot' }, null]) {
      const store = new MemoryStore();
      const lease = await held(store, process);
      const refused = await Agent.load(store, 'p', options({ leaseWaitMs: 0 })).catch((e) => e);
      expect(refused).toBeInstanceOf(RunBusyError);
      expect(refused).toMatchObject({ holder: 'holder', token: lease.token, holderProcess: process });
      expect((await store.renew(lease)).token).toBe(lease.token); // left alone
    }
  });

  it('waits a second by default: a holder that lets go meanwhile is waited for, a live one refuses after it', async () => {
    const store = new MemoryStore();
    const lease = await held(store, thisProcess());
    setTimeout(() => void store.release(lease), 150); // another process's load, say, giving the run up
    expect((await Agent.load(store, 'p', options())).status).toBe('budget_exhausted');
    await store.claim('p', { owner: 'holder', leaseMs: 60_000, process: thisProcess() });
    const started = performance.now();
    expect(await Agent.load(store, 'p', options()).catch((e) => e)).toBeInstanceOf(RunBusyError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(LOAD_WAIT_MS - 50);
  });
});

describe('Agent.load of a run that has ended', () => {
  /** A memory store (with `summary`, or without it as a custom store may be) whose claims are counted. */
  function counted(summary = true) {
    const inner = new MemoryStore();
    const calls = { claim: 0, release: 0, summary: 0 };
    const store: CheckpointStore = {
      load: (runId) => inner.load(runId),
      save: (...args) => inner.save(...args),
      list: (options) => inner.list(options),
      delete: (...args) => inner.delete(...args),
      claim: (...args) => {
        calls.claim++;
        return inner.claim(...args);
      },
      renew: (...args) => inner.renew(...args),
      release: (lease) => {
        calls.release++;
        return inner.release(lease);
      },
      queueDecision: (...args) => inner.queueDecision(...args),
      claimNext: (options) => inner.claimNext(options),
      close: () => inner.close(),
      ...(summary
        ? {
            summary: (runId: string) => {
              calls.summary++;
              return inner.summary(runId);
            },
          }
        : {}),
    };
    const reset = () => Object.assign(calls, { claim: 0, release: 0, summary: 0 });
    return { store, calls, reset };
  }
  const options = (owner = 'me') => ({ owner, leaseWaitMs: 0, policy: sequence({ final: 'x' }), tools: [] });

  it('is read without a claim, writing nothing, even while another owner holds its lease', async () => {
    const { store, calls, reset } = counted();
    const done = new Agent({ runId: 'r', store, policy: sequence({ final: 'ok' }), tools: [] });
    expect(await done.start('go')).toBe('done');
    const before = await store.load('r');
    const other = await store.claim('r', { owner: 'other', leaseMs: 60_000 }); // giving it up, say
    reset();
    const loaded = await Agent.load(store, 'r', options());
    expect(loaded.status).toBe('done');
    expect(loaded.checkpoint()).toBe(done.checkpoint());
    expect(await loaded.run()).toBe('done'); // nothing to do, nothing written
    expect(calls).toEqual({ claim: 0, release: 0, summary: 1 });
    expect(await store.load('r')).toEqual(before);
    expect(await store.release(other)).toBe(true); // the other owner's lease was left alone
  });

  it('a cancelled run too; a run at rest that has not ended is claimed as before (and refused while held)', async () => {
    const { store, calls, reset } = counted();
    await new Agent({ runId: 'c', store, policy: sequence({ final: 'ok' }), tools: [] }).cancel('no');
    await new Agent({ runId: 'p', store, policy: sequence({ tool: 't' }), tools: [], maxSteps: 0 }).start('go');
    reset();
    expect((await Agent.load(store, 'c', options())).status).toBe('cancelled');
    expect(calls.claim).toBe(0);
    const held = await store.claim('p', { owner: 'other', leaseMs: 60_000 });
    reset();
    expect(await Agent.load(store, 'p', options()).catch((e) => e)).toBeInstanceOf(RunBusyError);
    expect(calls.claim).toBe(1);
    await store.release(held);
    reset();
    expect((await Agent.load(store, 'p', options())).status).toBe('budget_exhausted');
    expect(calls).toEqual({ claim: 1, release: 1, summary: 1 });
  });

  it('on a store without summary, every run is claimed before it is read, as before', async () => {
    const { store, calls, reset } = counted(false);
    await new Agent({ runId: 'r', store, policy: sequence({ final: 'ok' }), tools: [] }).start('go');
    reset();
    expect((await Agent.load(store, 'r', options())).status).toBe('done');
    expect(calls).toEqual({ claim: 1, release: 1, summary: 0 });
  });

  it('a run deleted and made again after its summary said it had ended is claimed and read again', async () => {
    const { store, calls } = counted();
    await new Agent({ runId: 'r', store, policy: sequence({ final: 'ok' }), tools: [] }).start('go');
    const summary = store.summary as NonNullable<CheckpointStore['summary']>;
    let claimsBefore = 0;
    store.summary = async (runId) => {
      const seen = await summary(runId);
      // Between the summary and the load: the ended run is deleted, and a new one paused under its id.
      await store.delete(runId);
      await new Agent({ runId, store, policy: sequence({ tool: 't' }), tools: [], maxSteps: 0 }).start('again');
      claimsBefore = calls.claim;
      return seen;
    };
    const loaded = await Agent.load(store, 'r', options());
    expect(loaded.status).toBe('budget_exhausted');
    expect(loaded.state.history[0]).toEqual({ role: 'user', content: 'again' });
    expect(calls.claim).toBe(claimsBefore + 1);
  });

  it('an unknown run is RunNotFoundError, and nothing is claimed for it', async () => {
    const { store, calls } = counted();
    await expect(Agent.load(store, 'nope', options())).rejects.toBeInstanceOf(RunNotFoundError);
    expect(calls).toEqual({ claim: 0, release: 0, summary: 1 });
  });
});
