/**
 * The machine on its own, through the pure `transition()`: guards and actions that the Agent
 * never exercises because it checks first (a stale call id, an early EXPIRE), inputs that only
 * a hand-made actor can send (an error without elapsed time), and the placeholder actors that
 * `setup` registers. Stately tooling and other hosts drive the machine directly: these hold
 * there too.
 */

import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, initialTransition, transition } from 'xstate';
import { agentMachine, callIdOf, type MachineEvent } from '../../machines/index.js';
import { type AgentInput, type Decision, STATUSES } from '../../machines/types.js';

const input: AgentInput = {
  runId: 'r',
  limits: { maxSteps: 4, maxTokens: null, maxActiveMs: null },
  approvalTtlMs: 1_000,
};
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
const send = (tool = 'send'): Decision => ({
  type: 'call',
  tool,
  args: { to: 'x' },
  needsApproval: true,
  usage: null,
  elapsedMs: 0,
  at: at(0),
});

function run(events: MachineEvent[], given: AgentInput = input) {
  let [s] = initialTransition(agentMachine, given);
  for (const e of events) [s] = transition(agentMachine, s, e);
  return s;
}

/** The ids the machine gives the first and second request for the send call. */
const first = callIdOf('r:1', 1, 'send', { to: 'x' });
const second = callIdOf('r:1', 2, 'send', { to: 'x' });

const awaiting = (): MachineEvent[] => [
  { type: 'START', goal: 'g' },
  { type: 'xstate.done.actor.policy', output: send() },
];

describe('approvals at the machine level', () => {
  it('ignores an APPROVE or DENY for a call id that is not the pending one', () => {
    const s = run(awaiting());
    expect(s.value).toBe('awaiting_approval');
    for (const type of ['APPROVE', 'DENY'] as const) {
      // The second request's id, and the first's in the format of version 1: neither is this call.
      for (const callId of [second, 'r:1#1']) {
        const after = transition(agentMachine, s, { type, callId, by: 'a', note: '', at: at(0) })[0];
        expect(after.value).toBe('awaiting_approval');
        expect(after.context).toEqual(s.context);
      }
      const after = transition(agentMachine, s, { type, callId: second, by: 'a', note: '', at: at(0) })[0];
      expect(after.value).toBe('awaiting_approval');
      expect(after.context).toEqual(s.context);
    }
  });

  it('ignores a stale call id even once the call has expired', () => {
    const s = run(awaiting());
    for (const type of ['APPROVE', 'DENY'] as const) {
      const after = transition(agentMachine, s, { type, callId: second, by: 'a', note: '', at: at(5_000) })[0];
      expect(after.value).toBe('awaiting_approval');
      expect(after.context).toEqual(s.context);
    }
  });

  it('ignores an EXPIRE before the expiry, and any EXPIRE without a TTL', () => {
    const early = run([...awaiting(), { type: 'EXPIRE', at: at(999) }]);
    expect(early.value).toBe('awaiting_approval');
    const noTtl = run([...awaiting(), { type: 'EXPIRE', at: at(10_000_000) }], { ...input, approvalTtlMs: null });
    expect(noTtl.value).toBe('awaiting_approval');
    const late = run([...awaiting(), { type: 'EXPIRE', at: at(1_000) }]);
    expect(late.value).toEqual({ running: 'deciding' });
    expect(late.context.history.at(-1)).toEqual({ role: 'tool', tool: 'send', error: 'approval expired' });
  });

  it('runs nothing for an approval given at or after the expiry, and says so with the approval', () => {
    for (const event of ['APPROVE', 'DENY'] as const) {
      const s = run([...awaiting(), { type: event, callId: first, by: 'ann', note: 'n', at: at(1_000) }]);
      expect(s.value).toEqual({ running: 'deciding' });
      expect(s.context.inflight).toBeNull();
      expect(s.context.pending).toBeNull();
      expect(s.context.history.at(-1)).toEqual({
        role: 'tool',
        tool: 'send',
        error: 'approval expired',
        approval: { approved: event === 'APPROVE', by: 'ann', note: 'n', at: at(1_000), callId: first },
      });
    }
  });

  it('asks again, outcome unknown, for a side effect whose outcome is unknown', () => {
    const s = run([
      ...awaiting(),
      { type: 'APPROVE', callId: first, by: 'a', note: '', at: at(5) },
      { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: at(50) } },
    ]);
    expect(s.value).toBe('awaiting_approval');
    expect(s.context.pending).toEqual({
      id: second,
      key: 'r:1',
      step: 1,
      tool: 'send',
      args: { to: 'x' },
      attempt: 2,
      requestedAt: at(50),
      expiresAt: at(1_050),
      outcome: 'unknown',
    });
  });
});

describe('policy failures at the machine level', () => {
  const fail = (error: unknown) =>
    run([
      { type: 'START', goal: 'g' },
      { type: 'xstate.error.actor.policy', error },
    ]);

  it('keeps the error as "<name>: <message>" whatever was thrown', () => {
    expect(fail(new TypeError('bad')).context.error).toBe('TypeError: bad');
    expect(fail({ message: 'plain' }).context.error).toBe('Error: plain');
    expect(fail({ name: 42, message: 'odd name' }).context.error).toBe('Error: odd name');
    expect(fail({ name: 'Custom', message: 'named' }).context.error).toBe('Custom: named');
    expect(fail('a string').context.error).toBe('Error: a string');
    expect(fail(null).context.error).toBe('Error: null');
  });

  it('counts the time an error carries, and only a positive finite time', () => {
    expect(fail(Object.assign(new Error('x'), { elapsedMs: 7 })).context.activeMs).toBe(7);
    for (const elapsedMs of [undefined, 0, -5, Number.NaN, Number.POSITIVE_INFINITY, '7']) {
      expect(fail({ message: 'x', elapsedMs }).context.activeMs).toBe(0);
    }
    expect(fail(null).context.activeMs).toBe(0);
    expect(fail(undefined).value).toBe('failed');
  });
});

describe('decisions and outcomes at the machine level', () => {
  it('records a null answer, frozen like every entry', () => {
    const s = run([
      { type: 'START', goal: 'g' },
      {
        type: 'xstate.done.actor.policy',
        output: { type: 'final', final: null, usage: null, elapsedMs: 0, at: at(0) },
      },
    ]);
    expect(s.value).toBe('done');
    expect(s.context.answer).toBeNull();
    expect(s.context.history.at(-1)).toEqual({ role: 'assistant', final: null });
    for (const entry of s.context.history) expect(Object.isFrozen(entry)).toBe(true);
  });

  it('counts the time a failing tool actor reports', () => {
    const lookup: Decision = {
      type: 'call',
      tool: 'lookup',
      args: {},
      needsApproval: false,
      usage: null,
      elapsedMs: 1,
      at: at(1),
    };
    const s = run([
      { type: 'START', goal: 'g' },
      { type: 'xstate.done.actor.policy', output: lookup },
      { type: 'xstate.error.actor.tool', error: { name: 'Fault', message: 'broke', elapsedMs: 4 } },
    ]);
    expect(s.value).toEqual({ running: 'deciding' });
    expect(s.context.activeMs).toBe(5);
    expect(s.context.history.at(-1)).toEqual({ role: 'tool', tool: 'lookup', error: 'Fault: broke' });
  });

  it('names every top-level state in STATUSES', () => {
    expect([...STATUSES].sort()).toEqual(Object.keys(agentMachine.root.states).sort());
  });
});

describe('the placeholder actors of an unprovided machine', () => {
  it('fail the run with a message naming the missing policy actor', async () => {
    const actor = createActor(agentMachine, { input });
    actor.subscribe({ error: () => {} });
    actor.start();
    actor.send({ type: 'START', goal: 'g' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe('Error: the policy actor was not provided');
    actor.stop();
  });

  it('turn a failing tool actor into an observation (nothing in flight, no time counted)', async () => {
    const decision: Decision = {
      type: 'call',
      tool: 'lookup',
      args: {},
      needsApproval: false,
      usage: null,
      elapsedMs: 3,
      at: at(3),
    };
    let calls = 0;
    const machine = agentMachine.provide({
      actors: {
        policy: fromPromise(async () =>
          calls++ === 0 ? decision : ({ ...decision, type: 'final', final: 'ok' } as Decision),
        ),
      },
    });
    const actor = createActor(machine, { input });
    actor.subscribe({ error: () => {} });
    actor.start();
    actor.send({ type: 'START', goal: 'g' });
    for (let i = 0; i < 20 && actor.getSnapshot().value !== 'done'; i++)
      await new Promise((resolve) => setTimeout(resolve, 0));
    const c = actor.getSnapshot().context;
    expect(actor.getSnapshot().value).toBe('done');
    expect(c.history[2]).toEqual({ role: 'tool', tool: 'lookup', error: 'Error: the tool actor was not provided' });
    expect(c.inflight).toBeNull();
    expect(c.activeMs).toBe(6);
    actor.stop();
  });
});

describe('budgets at the machine level', () => {
  it('RUN does not leave budget_exhausted while the budget is still spent', () => {
    const s = run([{ type: 'START', goal: 'g' }], {
      ...input,
      limits: { maxSteps: 0, maxTokens: null, maxActiveMs: null },
    });
    expect(s.value).toBe('budget_exhausted');
    const again = transition(agentMachine, s, { type: 'RUN' })[0];
    expect(again.value).toBe('budget_exhausted');
    expect(again.context.stoppedBy).toBe('steps');
  });

  it('RUN continues once every budget has room again', () => {
    const spent = run([{ type: 'START', goal: 'g' }], {
      ...input,
      limits: { maxSteps: 1, maxTokens: 10, maxActiveMs: 10 },
    });
    const s = run(
      [
        { type: 'START', goal: 'g' },
        {
          type: 'xstate.done.actor.policy',
          output: {
            type: 'unknown_tool',
            tool: 't',
            args: {},
            usage: { inputTokens: 5, outputTokens: 5 },
            elapsedMs: 10,
            at: at(10),
          },
        },
      ],
      { ...input, limits: { maxSteps: 1, maxTokens: 10, maxActiveMs: 10 } },
    );
    expect(spent.value).toEqual({ running: 'deciding' });
    expect(s.value).toBe('budget_exhausted');
    for (const [limits, moves] of [
      [{ maxSteps: 2 }, false],
      [{ maxSteps: 2, maxTokens: 11 }, false],
      [{ maxSteps: 2, maxTokens: 11, maxActiveMs: 11 }, true],
      [{ maxSteps: 2, maxTokens: null, maxActiveMs: null }, true],
    ] as const) {
      const [extended] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits });
      const [after] = transition(agentMachine, extended, { type: 'RUN' });
      expect(after.value, JSON.stringify(limits)).toEqual(moves ? { running: 'deciding' } : 'budget_exhausted');
    }
  });
});
