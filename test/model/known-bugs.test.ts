/**
 * Regressions for the runtime bugs the model-based suites found (listed in support/known-bugs.ts
 * while they were open): each asserts what the contract (issue 12) says. All three are fixed; they
 * stay here so they cannot come back.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { EditRejectedError, TollgateError } from '../../src/errors.js';
import type { Tool } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { ManualClock } from '../../src/testing/index.js';
import { KNOWN_BUGS } from './support/known-bugs.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 10));

it('no runtime bug found by these suites is open', () => {
  expect(KNOWN_BUGS).toEqual([]);
});

describe('fixed runtime bugs the model-based suites found', () => {
  it('decide-while-running-dropped: a decision made while a sibling call runs is applied, or refused with a typed error', async () => {
    let release: (value: unknown) => void = () => {};
    let asked = 0;
    const sent: unknown[] = [];
    const agent = new Agent({
      runId: 'r',
      clock: new ManualClock(0),
      policy: () =>
        asked++ === 0 ? { calls: [{ tool: 'lookup' }, { tool: 'send', args: { to: 'x' } }] } : { final: 'ok' },
      tools: [
        {
          name: 'lookup',
          fn: () =>
            new Promise((resolve) => {
              release = resolve;
            }),
        },
        { name: 'send', sideEffect: true, fn: (args) => sent.push(args) },
      ],
    });
    const started = agent.start('g');
    await tick();
    // lookup is in flight; send waits, and the state says so.
    expect(agent.status).toBe('running');
    const [send] = agent.state.pendingCalls;
    expect(send?.tool).toBe('send');
    let outcome: unknown = 'not settled';
    agent.decide({ [send?.id as string]: { approve: true } }).then(
      (status) => {
        outcome = status;
      },
      (error) => {
        outcome = error;
      },
    );
    await tick();
    if (outcome instanceof TollgateError) {
      // Refused: nothing changed, the call still waits.
      expect(agent.state.pendingCalls.map((p) => p.id)).toEqual([send?.id]);
      return;
    }
    release({ found: 1 });
    await started;
    await tick();
    // Accepted: the approval was applied, send ran, the run went on. (Today: awaiting_approval,
    // send still pending, the decision gone.)
    expect(sent).toEqual([{ to: 'x' }]);
    expect(agent.status).toBe('done');
  });

  it('allow-edit-rejected: a tool literal may say allowEdit: false, and an edit of its call is refused', async () => {
    const wipe: Tool = { name: 'wipe', sideEffect: true, allowEdit: false, fn: () => 'wiped' };
    const agent = new Agent({ runId: 'r', policy: () => ({ tool: 'wipe', args: { scope: 'cache' } }), tools: [wipe] });
    expect(await agent.start('g')).toBe('awaiting_approval');
    const id = agent.state.pendingCalls[0]?.id as string;
    await expect(agent.decide({ [id]: { approve: true, args: { scope: 'all' } } })).rejects.toBeInstanceOf(
      EditRejectedError,
    );
  });

  it('inbox-lists-one-pending-call: the approval inbox lists every pending call of a run', async () => {
    const store = new MemoryStore();
    const policy = () => ({
      calls: [
        { tool: 'send', args: { to: 'a' } },
        { tool: 'send', args: { to: 'b' } },
      ],
    });
    const agent = new Agent({
      runId: 'r',
      store,
      policy,
      tools: [{ name: 'send', sideEffect: true, fn: () => 'sent' }],
    });
    expect(await agent.start('g')).toBe('awaiting_approval');
    expect(agent.state.pendingCalls).toHaveLength(2);
    const [listed] = await store.list({ status: 'awaiting_approval' });
    // Today a summary has `pending` (the first call) and nothing naming the second.
    const ids = JSON.stringify(listed);
    for (const call of agent.state.pendingCalls) expect(ids).toContain(call.id);
  });
});
