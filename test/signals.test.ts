/**
 * Signals beyond `run` (test/run-signal.test.ts): `start(goal, { signal })` and
 * `decide(…, { signal })` stop the run in this process as a crash at that moment would;
 * `Agent.load`, `submitRun` and `recordDecision` reject with the reason and leave the store as a
 * crash at that point would. A property: abort `start` and each `decide` after any number of turns
 * of the event loop, resume from the store each time, and every promise of the design holds on the
 * finished run (checkInvariants, with every effect seen).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, defineAgent, OptionsError, type Status, type Tool } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { checkInvariants, recordEffects, scriptedPolicy } from '../src/testing/index.js';
import { recordDecision, submitRun } from '../src/worker/index.js';
import { gate, mortal, until } from './support/helpers.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A signal aborted after `turns` turns of the event loop. */
function abortedAfter(turns: number): AbortSignal {
  const controller = new AbortController();
  void (async () => {
    for (let i = 0; i < turns; i++) await tick();
    controller.abort(new Error(`aborted after ${turns} turns`));
  })();
  return controller.signal;
}

describe('Agent.load, submitRun and recordDecision take a signal', () => {
  const pay: Tool = { name: 'pay', sideEffect: true, fn: () => 'paid' };
  const policy = scriptedPolicy([{ tool: 'pay', args: {} }, { final: 'paid' }]);

  it('Agent.load: stopped while it claims, it rejects with the reason and gives up the lease it gets late', async () => {
    // A run whose owner died in a call: stored running, so a load claims it and keeps the lease.
    const store = new MemoryStore();
    let called = false;
    const lookup: Tool = {
      name: 'lookup',
      fn: () => {
        called = true;
        return new Promise(() => {});
      },
    };
    const tools = [lookup];
    const policy = scriptedPolicy([{ tool: 'lookup', args: {} }, { final: 'found' }]);
    const first = mortal(store);
    void new Agent({ runId: 'r', store: first.store, tools, policy, leaseMs: 60 }).start('go').catch(() => {});
    await until(() => called);
    first.die();
    await new Promise((resolve) => setTimeout(resolve, 80)); // its lease lapses
    const open = store.open.bind(store);
    const release = store.release.bind(store);
    const slow = gate<void>();
    const released: string[] = [];
    // A store that does not stop at the signal (one of your own, say): its claim lands late.
    store.open = async (runId, { signal: _ignored, ...options }) => {
      if (options.owner === 'b') await slow.promise;
      return open(runId, options);
    };
    store.release = async (lease) => {
      released.push(lease.owner);
      return release(lease);
    };
    const controller = new AbortController();
    const loading = Agent.load(store, 'r', { tools, policy, owner: 'b', signal: controller.signal });
    const reason = new Error('not now');
    controller.abort(reason);
    await expect(loading).rejects.toBe(reason);
    slow.resolve();
    await until(() => released.includes('b'));
    // Not held: another owner loads it at once, and an aborted signal changes nothing.
    await expect(Agent.load(store, 'r', { tools, policy, signal: AbortSignal.abort(new Error('no')) })).rejects.toThrow(
      'no',
    );
    const next = await Agent.load(store, 'r', { tools, policy, leaseWaitMs: 0 });
    expect(next.status).toBe('running');
    await expect(Agent.load(store, 'r', { tools, policy, signal: 'x' } as never)).rejects.toThrow(
      /Agent.load: signal must be an AbortSignal/,
    );
  });

  it('Agent.load: a claim waiting out a live owner stops at the signal, in the store too', async () => {
    const store = new MemoryStore();
    const held = gate<unknown>();
    let called = false;
    const lookup: Tool = {
      name: 'lookup',
      fn: () => {
        called = true;
        return held.promise;
      },
    };
    const tools = [lookup, pay];
    const policy = scriptedPolicy([
      { tool: 'lookup', args: {} },
      { tool: 'pay', args: {} },
    ]);
    const owner = new Agent({ runId: 'w', store, tools, policy });
    const working = owner.start('go');
    await until(() => called);
    const open = store.open.bind(store);
    const opened: string[] = [];
    store.open = async (runId, options) => {
      const result = await open(runId, options);
      opened.push(options.owner);
      return result;
    };
    const controller = new AbortController();
    const loading = Agent.load(store, 'w', {
      tools,
      policy,
      owner: 'b',
      leaseWaitMs: 60_000,
      signal: controller.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    controller.abort(new Error('waited enough'));
    await expect(loading).rejects.toThrow('waited enough');
    // The owner settles and lets the run go; the stopped claim never takes it.
    held.resolve({ found: true });
    expect(await working).toBe('awaiting_approval');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(opened).toEqual([]);
  });

  it('submitRun and recordDecision: aborted before the store is asked, nothing is stored; during, it may be (as a crash)', async () => {
    const store = new MemoryStore();
    const payer = defineAgent({ name: 'payer', tools: [pay], policy });
    const no = () => AbortSignal.abort(new Error('no'));
    await expect(submitRun(store, { agent: payer, goal: 'go', runId: 's', signal: no() })).rejects.toThrow('no');
    expect(await store.load('s')).toBeNull();
    await expect(submitRun(store, { agent: payer, goal: 'go', signal: 1 } as never)).rejects.toBeInstanceOf(
      OptionsError,
    );
    // A run awaiting approval, and a decision on it.
    expect(await new Agent({ runId: 'r', store, agent: 'payer', tools: [pay], policy }).start('go')).toBe(
      'awaiting_approval',
    );
    await expect(recordDecision(store, 'r', true, { by: 'dana', signal: no() })).rejects.toThrow('no');
    expect((await store.load('r'))?.decision).toBeNull();
    const queue = store.queueDecision.bind(store);
    const slow = gate<void>();
    store.queueDecision = async (...args) => {
      await slow.promise;
      return queue(...args);
    };
    const controller = new AbortController();
    const recording = recordDecision(store, 'r', true, { by: 'dana', signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error('closed'));
    await expect(recording).rejects.toThrow('closed');
    slow.resolve();
    for (let i = 0; i < 100 && !(await store.load('r'))?.decision; i++) await tick();
    expect((await store.load('r'))?.decision).toMatchObject({ by: 'dana' });
  });
});

describe('start and decide take a signal', () => {
  it('start: aborted in a call, it rejects with the reason and the stored run resumes elsewhere', async () => {
    const store = new MemoryStore();
    const held = gate<unknown>();
    const signals: AbortSignal[] = [];
    const slow: Tool = {
      name: 'lookup',
      fn: (_args, _key, ctx) => {
        signals.push(ctx.signal);
        return signals.length === 1 ? held.promise : { cents: 5 };
      },
    };
    const policy = scriptedPolicy([{ tool: 'lookup', args: {} }, { final: 'found' }]);
    const agent = new Agent({ runId: 'r', store, tools: [slow], policy });
    const controller = new AbortController();
    const started = agent.start('go', { signal: controller.signal });
    await until(() => signals.length === 1);
    const reason = new Error('gave up');
    controller.abort(reason);
    await expect(started).rejects.toBe(reason);
    expect(signals[0]?.aborted).toBe(true);
    held.resolve({ cents: 1 }); // ends late: nothing of it is saved
    await tick();
    expect((await store.load('r'))?.status).toBe('running');
    await expect(agent.run()).rejects.toBe(reason);
    const again = await Agent.load(store, 'r', { tools: [slow], policy, leaseWaitMs: 0 });
    expect(await again.run()).toBe('done');
    expect(again.state.history[2]).toMatchObject({ role: 'tool', result: { cents: 5 } });
  });

  it('decide: aborted while the approved effect runs, the effect is not run again on resume; a human decides again', async () => {
    const store = new MemoryStore();
    const held = gate<unknown>();
    const paid: string[] = [];
    const pay: Tool = {
      name: 'pay',
      sideEffect: true,
      fn: (_args, key) => {
        paid.push(key);
        return held.promise;
      },
    };
    const policy = scriptedPolicy([{ tool: 'pay', args: { cents: 5 } }, { final: 'paid' }]);
    const agent = new Agent({ runId: 'd', store, tools: [pay], policy });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const controller = new AbortController();
    const deciding = agent.decide(true, 'ok', { by: 'dana', signal: controller.signal });
    await until(() => paid.length === 1);
    controller.abort(new Error('gone'));
    await expect(deciding).rejects.toThrow('gone');
    const again = await Agent.load(store, 'd', { tools: [pay], policy, leaseWaitMs: 0 });
    // The write-ahead record says the call started: its outcome is unknown, and a human is asked again.
    expect(await again.run()).toBe('awaiting_approval');
    expect(again.state.pending).toMatchObject({ key: 'd:1', outcome: 'unknown' });
    expect(paid).toEqual(['d:1']);
  });

  it('an aborted signal rejects at once and changes nothing; a signal that is not one is an OptionsError', async () => {
    const store = new MemoryStore();
    const pay: Tool = { name: 'pay', sideEffect: true, fn: () => 'paid' };
    const policy = scriptedPolicy([{ tool: 'pay', args: {} }, { final: 'paid' }]);
    const fresh = new Agent({ runId: 'x', store, tools: [pay], policy });
    await expect(fresh.start('go', { signal: AbortSignal.abort(new Error('no')) })).rejects.toThrow('no');
    expect(await store.load('x')).toBeNull();
    await expect(fresh.start('go', { signal: 'soon' } as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(fresh.start('go', { sigal: 1 } as never)).rejects.toThrow(/did you mean "signal"/);
    expect(await fresh.start('go')).toBe('awaiting_approval');
    const before = await store.load('x');
    await expect(fresh.decide(true, 'ok', { signal: AbortSignal.abort(new Error('no')) })).rejects.toThrow('no');
    await expect(fresh.decide({}, { signal: 'soon' } as never)).rejects.toThrow(
      /decide: signal must be an AbortSignal, got "soon"/,
    );
    expect(await store.load('x')).toEqual(before);
    // The Agent was not stopped by a signal that never took effect.
    expect(await fresh.decide(true)).toBe('done');
  });

  it('property: start and decisions aborted after any number of turns, each resumed from the store, keep every promise', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 8 }), async (given) => {
        const turns = [...given];
        const store = new MemoryStore();
        const slowly = async <T>(value: T) => {
          await tick();
          await tick();
          return value;
        };
        const recorded = recordEffects([
          { name: 'lookup', fn: () => slowly({ cents: 300 }) },
          { name: 'refund', sideEffect: true, fn: ({ cents }: { cents: number }) => slowly({ refunded: cents }) },
          { name: 'note', sideEffect: true, idempotent: true, needsApproval: false, fn: () => slowly('noted') },
        ] satisfies Tool[]);
        const policy = scriptedPolicy([
          { tool: 'lookup', args: {} },
          {
            calls: [
              { tool: 'refund', args: { cents: 100 } },
              { tool: 'note', args: {} },
              { tool: 'refund', args: { cents: 200 } },
            ],
          },
          { final: 'done' },
        ]);
        const options = { tools: recorded.tools, policy, leaseWaitMs: 0, maxSteps: 10 };
        const next = () => abortedAfter(turns.shift() ?? 1_000_000);
        let agent = new Agent({ ...options, runId: 'p', store });
        let status: Status | 'stopped' = await agent.start('go', { signal: next() }).catch(() => 'stopped' as const);
        for (let round = 0; round < 40 && status !== 'done'; round++) {
          if (status === 'stopped') {
            if (await store.load('p')) {
              agent = await Agent.load(store, 'p', options);
              status = await agent.run().catch(() => 'stopped' as const);
            } else {
              // Stopped before its first save: nothing was stored, so it starts again.
              agent = new Agent({ ...options, runId: 'p', store });
              status = await agent.start('go', { signal: next() }).catch(() => 'stopped' as const);
            }
            continue;
          }
          expect(status).toBe('awaiting_approval');
          const decisions = Object.fromEntries(agent.state.pendingCalls.map((c) => [c.id, { approve: true }]));
          status = await agent.decide(decisions, { signal: next() }).catch(() => 'stopped' as const);
        }
        expect(status).toBe('done');
        expect(await checkInvariants(agent, recorded)).toEqual([]);
        // Each refund ran at most once per approval (again only under a new one, after an unknown
        // outcome); the idempotent note may have run again.
        const refunds = recorded.effects.filter((e) => e.tool === 'refund');
        expect(new Set(refunds.map((e) => e.approvedCallId)).size).toBe(refunds.length);
      }),
      { numRuns: 60, seed: 20_261_207 },
    );
  });
});
