/**
 * `forkRun` of tollgate/testing: a new run holding a stored run's history up to a step, its calls
 * renamed to the fork's keys, the standing approvals of those steps and no later ones, the
 * original's spending; the original untouched; every bad argument refused with nothing stored.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { ConflictError, OptionsError, RunNotFoundError } from '../../src/errors.js';
import type { StoredRun } from '../../src/store/contract.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { checkInvariants, forkRun, scriptedPolicy } from '../../src/testing/index.js';
import type { Action, Policy, Tool } from '../../src/types.js';

const refunded: number[] = [];
const tools: Tool[] = [
  { name: 'lookup', fn: () => ({ cents: 12_000 }) },
  {
    name: 'refund',
    sideEffect: true,
    fn: ({ cents }: { cents: number }) => {
      refunded.push(cents);
      return { refunded: cents };
    },
  },
];

/**
 * A stored run: 1 lookup, 2 two refunds (one approved with an edit, one denied), 3 a refund
 * approved for good (a standing grant), 4 a refund under it, 5 the answer.
 */
async function original() {
  const store = new MemoryStore();
  const agent = new Agent({
    runId: 'orig',
    store,
    tools,
    maxSteps: 20,
    policy: scriptedPolicy([
      { tool: 'lookup', args: {}, id: 'call_a', usage: { inputTokens: 10, outputTokens: 5 } },
      {
        calls: [
          { tool: 'refund', args: { cents: 100 } },
          { tool: 'refund', args: { cents: 200 } },
        ],
      },
      { tool: 'refund', args: { cents: 300 } },
      { tool: 'refund', args: { cents: 400 } },
      { final: 'done' },
    ]),
  });
  await agent.start('refund order 7');
  const [a, b] = agent.state.pendingCalls;
  await agent.decide(
    { [a?.id as string]: { approve: true, args: { cents: 90 } }, [b?.id as string]: { approve: false, note: 'no' } },
    { by: 'dana' },
  );
  expect(await agent.decide({ [agent.state.pending?.id as string]: { approve: true, always: true } })).toBe('done');
  return { store, state: agent.state };
}

/** Answers with `actions` in order, whatever step the run is at (a fork starts past step 1). */
const inOrder =
  (...actions: Action[]): Policy =>
  () => {
    const next = actions.shift();
    if (!next) throw new Error('no more actions');
    return next;
  };
const refundPolicy = (cents: number) => inOrder({ tool: 'refund', args: { cents } }, { final: 'ok' });

describe('forkRun', () => {
  it('keeps the history of the steps asked for, renamed to the fork, and leaves the original as it was', async () => {
    const { store, state } = await original();
    const before = await store.load('orig');
    const fork = await forkRun(store, 'orig', { atStep: 2, runId: 'orig-b' });
    expect(fork).toEqual({ runId: 'orig-b', steps: 2, entries: 6 });
    expect(await store.load('orig')).toEqual(before);

    const forked = await Agent.load(store, 'orig-b', { tools, policy: refundPolicy(1) });
    const { history } = forked.state;
    expect(history).toHaveLength(6);
    expect(history.slice(0, 3)).toEqual(state.history.slice(0, 3));
    expect(history[3]).toEqual({
      role: 'assistant',
      calls: [
        { id: 'orig-b:2.1', tool: 'refund', args: { cents: 100 } },
        { id: 'orig-b:2.2', tool: 'refund', args: { cents: 200 } },
      ],
    });
    expect(history[4]).toMatchObject({
      role: 'tool',
      id: 'orig-b:2.1',
      result: { refunded: 90 },
      approval: { approved: true, by: 'dana', args: { cents: 90 }, callId: expect.stringMatching(/^orig-b:2\.1#1@/) },
    });
    expect(history[5]).toMatchObject({ id: 'orig-b:2.2', approval: { approved: false, note: 'no' } });
    expect(forked.state).toMatchObject({ status: 'running', steps: 2, answer: null, standing: {} });
    // The original's spending goes with it; its limits too.
    expect(forked.state.usage).toEqual(state.usage);
    expect(forked.state.usage.inputTokens).toBeGreaterThan(0);
    expect(forked.state.limits).toEqual(state.limits);
    expect(await checkInvariants((await store.load('orig-b')) as StoredRun)).toEqual([]);
  });

  it('carries the standing approvals given in the kept steps, and none given later', async () => {
    const { store } = await original();
    refunded.length = 0;
    // Forked after step 3 (the grant): a refund of step 4 runs without asking, under the fork's key.
    await forkRun(store, 'orig', { atStep: 3, runId: 'with-grant' });
    const a = await Agent.load(store, 'with-grant', { tools, policy: refundPolicy(7) });
    expect(await a.run()).toBe('done');
    expect(refunded).toEqual([7]);
    expect(a.state.history.at(-2)).toMatchObject({
      role: 'tool',
      approval: {
        standing: expect.stringMatching(/^with-grant:3#1@/),
        callId: expect.stringMatching(/^with-grant:4#/),
      },
    });
    expect(await checkInvariants(a, { tools })).toEqual([]);
    // Forked before it: the same refund waits for a human.
    await forkRun(store, 'orig', { atStep: 2, runId: 'no-grant' });
    const b = await Agent.load(store, 'no-grant', { tools, policy: refundPolicy(7) });
    expect(await b.run()).toBe('awaiting_approval');
    expect(b.state.pending).toMatchObject({ key: 'no-grant:3', tool: 'refund' });
    expect(refunded).toEqual([7]);
  });

  it('forks at 0 (the goal alone) and at the last finished step, never at the answer', async () => {
    const { store } = await original();
    expect(await forkRun(store, 'orig', { atStep: 0, runId: 'f0' })).toEqual({ runId: 'f0', steps: 0, entries: 1 });
    expect(await forkRun(store, 'orig', { atStep: 4, runId: 'f4' })).toMatchObject({ steps: 4 });
    const f4 = await Agent.load(store, 'f4', { tools, policy: inOrder({ final: 'again' }) });
    expect(await f4.run()).toBe('done');
    expect(f4.state).toMatchObject({ steps: 5, answer: 'again' });
    await expect(forkRun(store, 'orig', { atStep: 5, runId: 'f5' })).rejects.toThrow(
      /forkRun: run "orig" has no finished step 5 to fork at \(it finished 4\)/,
    );
    expect(await store.load('f5')).toBeNull();
  });

  it('a run waiting on a step forks only before that step', async () => {
    const store = new MemoryStore();
    const agent = new Agent({ runId: 'w', store, tools, policy: refundPolicy(5) });
    expect(await agent.start('go')).toBe('awaiting_approval');
    await expect(forkRun(store, 'w', { atStep: 1 })).rejects.toThrow(/no finished step 1 to fork at \(it finished 0\)/);
    const { runId } = await forkRun(store, 'w', { atStep: 0 });
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await store.load(runId))?.status).toBe('running');
  });

  it('refuses an unknown run, a taken id and bad options with a typed error, storing nothing', async () => {
    const { store } = await original();
    const count = async () => (await store.list()).length;
    const n = await count();
    await expect(forkRun(store, 'nope', { atStep: 0 })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(forkRun(store, 'orig', { atStep: 0, runId: 'orig' })).rejects.toBeInstanceOf(ConflictError);
    for (const bad of [
      { atStep: -1 },
      { atStep: 1.5 },
      { atStep: '2' },
      { atStep: 1, runId: '' },
      { atStep: 1, runId: 'a\nb' },
      { atStep: 1, at: 2 },
      null,
    ]) {
      await expect(forkRun(store, 'orig', bad as never)).rejects.toBeInstanceOf(OptionsError);
    }
    expect(await count()).toBe(n);
  });
});
