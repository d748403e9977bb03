/**
 * `agent.run({ signal })`: aborting stops the run in this process exactly as a crash at that
 * moment would — the calls' own signals abort, nothing more is saved, the lease is given up, and
 * `run()` rejects with the signal's reason; the stored run resumes under the crash rules.
 */
import { describe, expect, it } from 'vitest';
import { Agent, OptionsError, type Tool } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { scriptedPolicy } from '../src/testing/index.js';
import { gate, mortal, until } from './support/helpers.js';

/** A run whose first owner died in an idempotent `pay` call: stored `running`, the call in flight. */
async function diedInCall() {
  const store = new MemoryStore();
  const calls: { key: string; signal: AbortSignal }[] = [];
  const held = gate<string>();
  const pay: Tool = {
    name: 'pay',
    sideEffect: true,
    needsApproval: false,
    idempotent: true,
    fn: (_args, key, ctx) => {
      calls.push({ key, signal: ctx.signal });
      return held.promise;
    },
  };
  const policy = scriptedPolicy([{ tool: 'pay' }, { final: 'paid' }]);
  const first = mortal(store);
  void new Agent({ policy, tools: [pay], store: first.store, runId: 'r', leaseMs: 60 }).start('go').catch(() => {});
  await until(() => calls.length === 1);
  first.die();
  const options = { policy, tools: [pay], leaseMs: 60_000, leaseWaitMs: 2_000 };
  return { store, calls, held, options };
}

describe('run({ signal })', () => {
  it('aborted in a call: rejects with the reason, the call is told, the stored run stays in flight and is free at once', async () => {
    const { store, calls, held, options } = await diedInCall();
    const agent = await Agent.load(store, 'r', options);
    const controller = new AbortController();
    const running = agent.run({ signal: controller.signal });
    await until(() => calls.length === 2); // called again with its key (idempotent)
    const before = await store.load('r');
    const reason = new Error('the caller gave up');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(calls[1]?.signal.aborted).toBe(true);
    held.resolve('paid'); // the call ends late: nothing of it is saved
    await new Promise((r) => setTimeout(r, 10));
    expect(await store.load('r')).toEqual(before);
    expect(before?.status).toBe('running');
    // Every later operation says why, and the run is not held: another owner loads it at once.
    await expect(agent.run()).rejects.toBe(reason);
    const next = await Agent.load(store, 'r', { ...options, leaseWaitMs: 0 });
    expect(await next.run()).toBe('done');
    expect(calls.map((c) => c.key)).toEqual(['r:1', 'r:1', 'r:1']);
  });

  it('an aborted signal rejects at once and changes nothing; a signal that is not one is an OptionsError', async () => {
    const { store, calls, options } = await diedInCall();
    const agent = await Agent.load(store, 'r', options);
    const before = await store.load('r');
    await expect(agent.run({ signal: AbortSignal.abort(new Error('no')) })).rejects.toThrow('no');
    await expect(agent.run({ signal: 'soon' as never })).rejects.toBeInstanceOf(OptionsError);
    await expect(agent.run({ sigal: undefined } as never)).rejects.toThrow(/signal/);
    expect(calls).toHaveLength(1);
    expect(await store.load('r')).toEqual(before);
  });
});
