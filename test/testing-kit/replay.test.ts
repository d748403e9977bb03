/**
 * `recordedPolicy` and `replayRun` of tollgate/testing: a stored run replays under its own
 * definition with no divergence and no tool called; a changed rule, a removed tool or another
 * tool error is reported at the first entry that differs.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { recordedPolicy, replayRun, scriptedPolicy } from '../../src/testing/index.js';
import type { Tool } from '../../src/types.js';

const lookup: Tool = { name: 'lookup', fn: () => ({ cents: 12_000 }) };
const flaky: Tool = {
  name: 'notify',
  fn: () => {
    throw new TypeError('mail server down');
  },
};
const refund = (needsApproval: Tool['needsApproval']): Tool => ({
  name: 'refund',
  sideEffect: true,
  needsApproval,
  fn: ({ cents }: { cents: number }) => ({ refunded: cents }),
});
const asks = ({ cents }: { cents: number }) => (cents > 50_000 ? { deny: 'over the limit' } : true);

/** A stored run: a lookup, two refunds (one approved with an edit, one denied), a failed notify, a standing grant. */
async function recorded() {
  const store = new MemoryStore();
  const agent = new Agent({
    runId: 'rec-1',
    store,
    tools: [lookup, refund(asks), flaky],
    policy: scriptedPolicy([
      { tool: 'lookup', args: {}, id: 'call_a' },
      {
        calls: [
          { tool: 'refund', args: { cents: 100 } },
          { tool: 'refund', args: { cents: 200 } },
        ],
        text: 'refunding',
      },
      { tool: 'notify', args: { to: 'customer' } },
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
  return (await store.load('rec-1')) as NonNullable<Awaited<ReturnType<MemoryStore['load']>>>;
}

const untouchable = (tool: Tool): Tool => ({
  ...tool,
  fn: () => {
    throw new Error(`${tool.name} must not run in a replay`);
  },
});

describe('replayRun', () => {
  it('replays a stored run under its own definition: the same history, no tool run, no divergence', async () => {
    const run = await recorded();
    const report = await replayRun(run, { tools: [lookup, refund(asks), flaky].map(untouchable) });
    expect(report.divergence).toBeNull();
    expect(report.status).toBe('done');
    expect(report.agent.state.history.length).toBe(JSON.parse(`[${run.entries.join(',')}]`).length);
  });

  it('reports the first entry where a changed rule decides otherwise', async () => {
    const run = await recorded();
    // The new rule lets small refunds through without a human.
    const lenient = refund(({ cents }: { cents: number }) => cents > 150);
    const { divergence } = await replayRun(run, { tools: [lookup, lenient, flaky] });
    expect(divergence?.at).toBe(4);
    expect(divergence?.why).toBe('history[4] differs');
    expect(divergence?.recorded).toMatchObject({
      role: 'tool',
      tool: 'refund',
      approval: { approved: true, args: { cents: 90 } },
    });
    // The result is the recording's (no tool runs); nobody was asked this time.
    expect(divergence?.replayed).toEqual({ role: 'tool', tool: 'refund', id: 'rec-1:2.1', result: { refunded: 90 } });
  });

  it('reports a tool the definition no longer has, and a step the recording never took', async () => {
    const run = await recorded();
    const { divergence } = await replayRun(run, { tools: [refund(asks), flaky] });
    expect(divergence).toMatchObject({
      at: 2,
      replayed: { role: 'tool', tool: 'lookup', error: 'unknown tool lookup' },
    });
    const policy = recordedPolicy(run);
    expect(() => policy([], { step: 7 } as never)).toThrow('the recording ends after step 6; step 7 was asked for');
    expect(policy([], { step: 2 } as never)).toEqual({
      calls: [
        { id: 'rec-1:2.1', tool: 'refund', args: { cents: 100 } },
        { id: 'rec-1:2.2', tool: 'refund', args: { cents: 200 } },
      ],
      text: 'refunding',
    });
    expect(policy([], { step: 1 } as never)).toEqual({ tool: 'lookup', args: {}, id: 'call_a' });
  });

  it('replays a malformed action right after a step of several calls (a run read from an agent)', async () => {
    const agent = new Agent({
      runId: 'rec-2',
      tools: [lookup],
      policy: scriptedPolicy([
        {
          calls: [
            { tool: 'lookup', args: { n: 1 } },
            { tool: 'lookup', args: { n: 2 } },
          ],
        },
        { tool: 'lookup', args: 'not an object' } as never,
        { final: 'ok' },
      ]),
    });
    expect(await agent.start('look twice')).toBe('done');
    expect(agent.state.history[4]).toMatchObject({ role: 'tool', error: 'malformed action: args must be an object' });
    expect(recordedPolicy(agent)([], { step: 2 } as never)).toEqual({});
    expect(recordedPolicy(agent)([], { step: 3 } as never)).toEqual({ final: 'ok' });
    const { divergence } = await replayRun(agent, { tools: [untouchable(lookup)] });
    // The malformed action replays as `{}`: the same kind of entry, its reason told otherwise.
    expect(divergence).toMatchObject({ at: 4, replayed: { error: 'malformed action: has neither tool nor final' } });
  });

  it('gives each recorded decision again under its own approver: calls of one step decided by two people', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      runId: 'two',
      store,
      tools: [refund(true)],
      policy: scriptedPolicy([
        {
          calls: [
            { tool: 'refund', args: { cents: 100 } },
            { tool: 'refund', args: { cents: 200 } },
          ],
        },
        { final: 'ok' },
      ]),
    });
    await agent.start('go');
    const [a, b] = agent.state.pendingCalls;
    // Erin denies the second first; Dana approves the first later.
    await agent.decide({ [b?.id as string]: { approve: false, note: 'too much' } }, { by: 'erin' });
    expect(await agent.decide({ [a?.id as string]: { approve: true } }, { by: 'dana' })).toBe('done');
    const { divergence, status } = await replayRun(
      (await store.load('two')) as NonNullable<Awaited<ReturnType<MemoryStore['load']>>>,
      {
        tools: [untouchable(refund(true))],
      },
    );
    expect(divergence).toBeNull();
    expect(status).toBe('done');
  });
});
