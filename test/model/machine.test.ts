/**
 * The machine on its own, through the pure `transition()`: guards and actions that the Agent
 * never exercises because it checks first (a stale call id, a decision map naming a call twice,
 * an early EXPIRE), inputs that only a hand-made actor can send (an error without elapsed time),
 * and the placeholder actors that `setup` registers. Stately tooling and other hosts drive the
 * machine directly: these hold there too.
 */

import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, initialTransition, transition } from 'xstate';
import { agentMachine, callIdOf, type MachineEvent } from '../../machines/index.js';
import {
  type AgentInput,
  type CallDecision,
  type ClassifiedCall,
  type Decision,
  STATUSES,
  type Verdict,
} from '../../machines/types.js';

const input: AgentInput = {
  runId: 'r',
  limits: { maxSteps: 4, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
  approvalTtlMs: 1_000,
};
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
const ask: Verdict = { kind: 'ask' };
const runs: Verdict = { kind: 'run' };
const call = (
  tool: string,
  args: ClassifiedCall['args'],
  verdict: Verdict = ask,
  toolCallId: string | null = null,
) => ({
  tool,
  args,
  toolCallId,
  verdict,
});
const calls = (list: ClassifiedCall[], ms = 0, text: string | null = null, elapsedMs = 0): MachineEvent => ({
  type: 'xstate.done.actor.policy',
  output: { type: 'calls', calls: list, text, usage: null, elapsedMs, at: at(ms) },
});
const send = (): MachineEvent => calls([call('send', { to: 'x' })]);
const decide = (decisions: CallDecision[], ms = 0, by = 'a'): MachineEvent => ({
  type: 'DECIDE',
  decisions,
  by,
  at: at(ms),
});
const yes = (callId: string, extra: Partial<CallDecision> = {}): CallDecision => ({
  callId,
  approve: true,
  note: '',
  ...extra,
});
const no = (callId: string): CallDecision => ({ callId, approve: false, note: 'n' });
const result = (ms: number, value: unknown = 'ok'): MachineEvent => ({
  type: 'xstate.done.actor.tool',
  output: { type: 'result', result: value as never, elapsedMs: 1, at: at(ms) },
});

function run(events: MachineEvent[], given: AgentInput = input) {
  let [s] = initialTransition(agentMachine, given);
  for (const e of events) [s] = transition(agentMachine, s, e);
  return s;
}
const pending = (s: ReturnType<typeof run>) => s.context.calls.filter((c) => c.state === 'pending');

/** The ids the machine gives the first and second request for the one-call send step. */
const first = callIdOf('r:1', 1, 'send', { to: 'x' });
const second = callIdOf('r:1', 2, 'send', { to: 'x' });

const awaiting = (): MachineEvent[] => [{ type: 'START', goal: 'g' }, send()];

/** A step of two calls that need approval: send (r:1.1) and charge (r:1.2). */
const pair = (): MachineEvent[] => [
  { type: 'START', goal: 'g' },
  calls([call('send', { to: 'x' }), call('charge', { amount: 1 })]),
];
const sendId = callIdOf('r:1.1', 1, 'send', { to: 'x' });
const chargeId = callIdOf('r:1.2', 1, 'charge', { amount: 1 });

describe('decisions at the machine level: by exact id, atomically', () => {
  it('ignores a DECIDE that names no pending call (another attempt, the v1 form, a key), leaving the run as it was', () => {
    const s = run(awaiting());
    expect(s.value).toBe('awaiting_approval');
    for (const callId of [second, 'r:1#1', 'r:1', '']) {
      for (const d of [yes(callId), no(callId)]) {
        const after = transition(agentMachine, s, decide([d]))[0];
        // No transition at all (the same snapshot): the runtime has nothing to save.
        expect(after).toBe(s);
      }
    }
  });

  it('ignores a whole DECIDE with one bad decision in it: an unknown id, a call named twice, no decision at all', () => {
    const s = run(pair());
    for (const decisions of [[yes(sendId), yes(second)], [yes(sendId), no(sendId)], []]) {
      const after = transition(agentMachine, s, decide(decisions))[0];
      expect(after).toBe(s);
    }
  });

  it('ignores a decision about a call that was already decided', () => {
    const s = run([...pair(), decide([no(sendId)])]);
    expect(pending(s).map((c) => c.id)).toEqual([chargeId]);
    const after = transition(agentMachine, s, decide([yes(sendId)]))[0];
    expect(after).toBe(s);
  });

  it('applies each decision to the call it names, whatever the order of the list', () => {
    const s = run([...pair(), decide([yes(chargeId, { args: { amount: 2 } }), no(sendId)], 5, 'eve')]);
    expect(s.value).toEqual({ running: 'executing' });
    const [sent, charged] = s.context.calls;
    expect(sent?.done).toEqual({
      error: 'denied by human: n',
      approval: { approved: false, by: 'eve', note: 'n', at: at(5), callId: sendId },
    });
    expect(charged?.state).toBe('running');
    expect(charged?.args).toEqual({ amount: 1 }); // the model's, kept; the edit is the approval's
    expect(charged?.approval).toEqual({
      approved: true,
      by: 'eve',
      note: '',
      at: at(5),
      callId: chargeId,
      args: { amount: 2 },
    });
  });

  it('leaves the undecided calls pending, each with its own request time and expiry', () => {
    const s = run([...pair(), decide([yes(sendId)]), result(7)]);
    expect(s.value).toBe('awaiting_approval');
    expect(pending(s).map((c) => [c.id, c.requestedAt, c.expiresAt])).toEqual([[chargeId, at(0), at(1_000)]]);
    expect(s.context.history).toHaveLength(2); // the step's tool entries come when every call has its outcome
  });
});

describe('expiry at the machine level', () => {
  it('ignores an EXPIRE before the expiry, and any EXPIRE without a TTL', () => {
    // Ignored means no transition at all (the same snapshot): the runtime has nothing to save.
    const waiting = run(awaiting());
    expect(transition(agentMachine, waiting, { type: 'EXPIRE', at: at(999) })[0]).toBe(waiting);
    const noTtl = run(awaiting(), { ...input, approvalTtlMs: null });
    expect(transition(agentMachine, noTtl, { type: 'EXPIRE', at: at(10_000_000) })[0]).toBe(noTtl);
    const late = run([...awaiting(), { type: 'EXPIRE', at: at(1_000) }]);
    expect(late.value).toEqual({ running: 'deciding' });
    expect(late.context.history.at(-1)).toEqual({ role: 'tool', tool: 'send', error: 'approval expired' });
  });

  it('runs nothing for a decision given at or after the expiry, and says so with the decision', () => {
    for (const approve of [true, false]) {
      const s = run([...awaiting(), decide([{ callId: first, approve, note: 'n' }], 1_000, 'ann')]);
      expect(s.value).toEqual({ running: 'deciding' });
      expect(s.context.calls).toEqual([]);
      expect(s.context.history.at(-1)).toEqual({
        role: 'tool',
        tool: 'send',
        error: 'approval expired',
        approval: { approved: approve, by: 'ann', note: 'n', at: at(1_000), callId: first },
      });
    }
  });

  it('expires only the calls whose own time is up', () => {
    // send is approved, in flight at a crash, and asked again at 400: its deadline moves to 1 400.
    const s = run([
      ...pair(),
      decide([yes(sendId)]),
      { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: at(400) } },
      { type: 'EXPIRE', at: at(1_000) },
    ]);
    expect(s.value).toBe('awaiting_approval');
    expect(pending(s).map((c) => [c.key, c.attempt, c.expiresAt, c.outcome])).toEqual([
      ['r:1.1', 2, at(1_400), 'unknown'],
    ]);
    expect(s.context.calls[1]?.done).toEqual({ error: 'approval expired' });
  });
});

describe('the calls of a step at the machine level', () => {
  it('refuses, queues and asks per call, runs them in call order, and runs nothing after a call that waits', () => {
    const s = run([
      { type: 'START', goal: 'g' },
      calls(
        [
          call('lookup', { q: 1 }, runs),
          call('send', { to: 'x' }, ask, 'm1'),
          call('teleport', {}, { kind: 'refuse', error: 'unknown tool teleport' }),
          call('lookup', { q: 2 }, runs),
        ],
        0,
        'two lookups',
      ),
    ]);
    expect(s.value).toEqual({ running: 'executing' });
    expect(s.context.calls.map((c) => [c.key, c.state, c.toolCallId])).toEqual([
      ['r:1.1', 'running', 'r:1.1'],
      ['r:1.2', 'pending', 'm1'],
      ['r:1.3', 'done', 'r:1.3'],
      ['r:1.4', 'queued', 'r:1.4'],
    ]);
    expect(s.context.history.at(-1)).toEqual({
      role: 'assistant',
      calls: [
        { id: 'r:1.1', tool: 'lookup', args: { q: 1 } },
        { id: 'm1', tool: 'send', args: { to: 'x' } },
        { id: 'r:1.3', tool: 'teleport', args: {} },
        { id: 'r:1.4', tool: 'lookup', args: { q: 2 } },
      ],
      text: 'two lookups',
    });
    // Call 2 waits for a human: call 4, queued behind it, waits too (calls take effect in order).
    const waiting = transition(agentMachine, s, result(3))[0];
    expect(waiting.value).toBe('awaiting_approval');
    expect(waiting.context.calls.map((c) => c.state)).toEqual(['done', 'pending', 'done', 'queued']);
    const sendId = callIdOf('r:1.2', 1, 'send', { to: 'x' });
    const approved = transition(agentMachine, waiting, decide([yes(sendId)], 4))[0];
    expect(approved.value).toEqual({ running: 'executing' });
    expect(approved.context.calls.map((c) => c.state)).toEqual(['done', 'running', 'done', 'queued']);
    const last = transition(agentMachine, approved, result(5))[0];
    expect(last.context.calls.map((c) => c.state)).toEqual(['done', 'done', 'done', 'running']);
  });

  it('a step whose first call waits for a human runs nothing until it is decided', () => {
    const s = run([{ type: 'START', goal: 'g' }, calls([call('send', { to: 'x' }, ask), call('lookup', {}, runs)])]);
    expect(s.value).toBe('awaiting_approval');
    expect(s.context.calls.map((c) => c.state)).toEqual(['pending', 'queued']);
  });

  it('asks again, outcome unknown, for a side effect in flight at a crash, and runs nothing after it meanwhile', () => {
    const s = run([
      { type: 'START', goal: 'g' },
      calls([call('send', { to: 'x' }, runs), call('lookup', {}, runs)]),
      { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: at(50) } },
    ]);
    expect(s.value).toBe('awaiting_approval');
    expect(s.context.calls.map((c) => [c.state, c.attempt, c.outcome])).toEqual([
      ['pending', 2, 'unknown'],
      ['queued', 1, null],
    ]);
    expect(s.context.calls[0]?.id).toBe(callIdOf('r:1.1', 2, 'send', { to: 'x' }));
    expect(s.context.calls[0]?.requestedAt).toBe(at(50));
  });

  it('asked again because verify said not done but the approval is too old: pending, and not marked unknown', () => {
    const s = run([
      { type: 'START', goal: 'g' },
      calls([call('send', { to: 'x' }, runs)]),
      { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: at(50), notDone: true } },
    ]);
    expect(s.value).toBe('awaiting_approval');
    expect(s.context.calls.map((c) => [c.state, c.attempt, c.outcome])).toEqual([['pending', 2, null]]);
  });

  it('records a result that verify found as verified', () => {
    const s = run([
      { type: 'START', goal: 'g' },
      calls([call('send', { to: 'x' }, runs)]),
      {
        type: 'xstate.done.actor.tool',
        output: { type: 'result', result: 'sent', verified: true, elapsedMs: 1, at: at(50) },
      },
    ]);
    expect(s.context.history.at(-1)).toEqual({ role: 'tool', tool: 'send', result: 'sent', verified: true });
  });

  it('keeps a standing approval for later steps only, without the edit it was given with', () => {
    const s = run([
      ...pair(),
      decide([yes(sendId, { always: true, args: { to: 'y' } })], 3),
      result(4),
      decide([no(chargeId)], 5),
      calls([call('send', { to: 'z' }), call('charge', { amount: 9 })], 6),
    ]);
    expect(s.context.standing).toEqual({
      send: { approved: true, by: 'a', note: '', at: at(3), callId: sendId, args: { to: 'y' }, always: true },
    });
    const [later, other] = s.context.calls;
    expect(later?.state).toBe('running');
    expect(later?.approval).toEqual({
      approved: true,
      by: 'a',
      note: '',
      at: at(3),
      callId: callIdOf('r:2.1', 1, 'send', { to: 'z' }),
      standing: sendId,
    });
    expect(other?.state).toBe('pending');
  });

  it('records the calls that finished when cancelled mid-step, and nothing pending', () => {
    const s = run([...pair(), decide([no(sendId)]), { type: 'CANCEL', reason: 'stop' }]);
    expect(s.value).toBe('cancelled');
    expect(s.context.calls).toEqual([]);
    expect(s.context.history.slice(2)).toEqual([
      {
        role: 'tool',
        tool: 'send',
        id: 'r:1.1',
        error: 'denied by human: n',
        approval: { approved: false, by: 'a', note: 'n', at: at(0), callId: sendId },
      },
    ]);
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
    const s = run([
      { type: 'START', goal: 'g' },
      calls([call('lookup', {}, runs)], 1, null, 1),
      { type: 'xstate.error.actor.tool', error: { name: 'Fault', message: 'broke', elapsedMs: 4 } },
    ]);
    expect(s.value).toEqual({ running: 'deciding' });
    expect(s.context.activeMs).toBe(5);
    expect(s.context.history.at(-1)).toEqual({ role: 'tool', tool: 'lookup', error: 'Fault: broke' });
  });

  it('keeps the approval of an approved call whose tool actor failed, beside the error', () => {
    const s = run([...awaiting(), decide([yes(first)], 3, 'ann'), { type: 'xstate.error.actor.tool', error: 'gone' }]);
    expect(s.value).toEqual({ running: 'deciding' });
    expect(s.context.history.at(-1)).toEqual({
      role: 'tool',
      tool: 'send',
      error: 'Error: gone',
      approval: { approved: true, by: 'ann', note: '', at: at(3), callId: first },
    });
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
      type: 'calls',
      calls: [call('lookup', {}, runs)],
      text: null,
      usage: null,
      elapsedMs: 3,
      at: at(3),
    };
    let count = 0;
    const machine = agentMachine.provide({
      actors: {
        policy: fromPromise(async () =>
          count++ === 0 ? decision : ({ type: 'final', final: 'ok', usage: null, elapsedMs: 3, at: at(6) } as Decision),
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
    expect(c.calls).toEqual([]);
    expect(c.activeMs).toBe(6);
    actor.stop();
  });
});

describe('budgets at the machine level', () => {
  it('RUN does not leave budget_exhausted while the budget is still spent', () => {
    const s = run([{ type: 'START', goal: 'g' }], {
      ...input,
      limits: { maxSteps: 0, maxTokens: null, maxActiveMs: null, maxCostUsd: null },
    });
    expect(s.value).toBe('budget_exhausted');
    const again = transition(agentMachine, s, { type: 'RUN' })[0];
    expect(again.value).toBe('budget_exhausted');
    expect(again.context.stoppedBy).toBe('steps');
  });

  it('RUN continues once every budget has room again', () => {
    const limits = { maxSteps: 1, maxTokens: 10, maxActiveMs: 10, maxCostUsd: null };
    const spent = run([{ type: 'START', goal: 'g' }], { ...input, limits });
    const refused: Decision = {
      type: 'calls',
      calls: [call('t', {}, { kind: 'refuse', error: 'unknown tool t' })],
      text: null,
      usage: { inputTokens: 5, outputTokens: 5 },
      elapsedMs: 10,
      at: at(10),
    };
    const s = run(
      [
        { type: 'START', goal: 'g' },
        { type: 'xstate.done.actor.policy', output: refused },
      ],
      {
        ...input,
        limits,
      },
    );
    expect(spent.value).toEqual({ running: 'deciding' });
    expect(s.value).toBe('budget_exhausted');
    for (const [given, moves] of [
      [{ maxSteps: 2 }, false],
      [{ maxSteps: 2, maxTokens: 11 }, false],
      [{ maxSteps: 2, maxTokens: 11, maxActiveMs: 11 }, true],
      [{ maxSteps: 2, maxTokens: null, maxActiveMs: null, maxCostUsd: null }, true],
    ] as const) {
      const [extended] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: given });
      const [after] = transition(agentMachine, extended, { type: 'RUN' });
      expect(after.value, JSON.stringify(given)).toEqual(moves ? { running: 'deciding' } : 'budget_exhausted');
    }
  });
});

describe('the cost budget at the machine level', () => {
  const limits = { maxSteps: 10, maxTokens: null, maxActiveMs: null, maxCostUsd: 0.3 };
  const decided = (cost: Decision['cost'], n = 1): Decision => ({
    type: 'calls',
    calls: [call('t', {}, { kind: 'refuse', error: 'unknown tool t' })],
    text: null,
    usage: null,
    ...(cost === undefined ? {} : { cost }),
    elapsedMs: 0,
    at: at(n),
  });
  const steps = (...costs: Decision['cost'][]) =>
    run(
      [
        { type: 'START', goal: 'g' },
        ...costs.map((cost, i) => ({ type: 'xstate.done.actor.policy' as const, output: decided(cost, i) })),
      ],
      { ...input, limits },
    );

  it('adds whole micro-dollars and stops before the call that would start at the limit, reached exactly', () => {
    const s = steps({ usd: 0.1 }, { usd: 0.2 });
    expect(s.context.usage.costUsd).toBe(0.3);
    expect(s.value).toBe('budget_exhausted');
    expect(s.context.stoppedBy).toBe('cost');
    expect(steps({ usd: 0.1 }, { usd: 0.199999 }).value).toEqual({ running: 'deciding' });
  });

  it('a decision without a cost adds nothing; an unknown one spends the rest of the budget and says why', () => {
    expect(steps(undefined, undefined).context.usage.costUsd).toBe(0);
    const s = steps({ usd: 0.05 }, { unknown: 'no price for model "x"' });
    expect(s.value).toBe('budget_exhausted');
    expect(s.context).toMatchObject({
      stoppedBy: 'cost',
      usage: { costUsd: 0.3 },
      error: 'cost unknown: no price for model "x"',
    });
    // Without a cost budget an unknown cost is no stop and no error.
    const free = run(
      [
        { type: 'START', goal: 'g' },
        { type: 'xstate.done.actor.policy', output: decided({ unknown: 'why' }) },
      ],
      { ...input, limits: { ...limits, maxCostUsd: null } },
    );
    expect(free.value).toEqual({ running: 'deciding' });
    expect(free.context).toMatchObject({ usage: { costUsd: 0 }, error: null });
  });

  it('EXTEND_BUDGET after a stop for cost: a higher maxCostUsd lets RUN go on and clears the reason', () => {
    const s = steps({ unknown: 'why' });
    const [same] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxCostUsd: 0.3 } });
    expect(transition(agentMachine, same, { type: 'RUN' })[0].value).toBe('budget_exhausted');
    const [raised] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxCostUsd: 0.31 } });
    const [after] = transition(agentMachine, raised, { type: 'RUN' });
    expect(after.value).toEqual({ running: 'deciding' });
    expect(after.context).toMatchObject({ stoppedBy: null, error: null });
    // Lifting it (null) also lets the run go on.
    const [lifted] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxCostUsd: null } });
    expect(transition(agentMachine, lifted, { type: 'RUN' })[0].value).toEqual({ running: 'deciding' });
  });

  it('names the budget that stops it now: tokens before cost before time', () => {
    const s = run(
      [
        { type: 'START', goal: 'g' },
        {
          type: 'xstate.done.actor.policy',
          output: { ...decided({ usd: 1 }), usage: { inputTokens: 5, outputTokens: 5 }, elapsedMs: 10 },
        },
      ],
      { ...input, limits: { maxSteps: 10, maxTokens: 10, maxActiveMs: 10, maxCostUsd: 1 } },
    );
    expect(s.context.stoppedBy).toBe('tokens');
    const [a] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxTokens: 11 } });
    expect(a.context.stoppedBy).toBe('cost');
    const [b] = transition(agentMachine, a, { type: 'EXTEND_BUDGET', limits: { maxCostUsd: 2 } });
    expect(b.context.stoppedBy).toBe('time');
  });
});

describe('START from messages at the machine level', () => {
  it('records the messages as given, in order, and asks the policy as a goal would', () => {
    const messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ] as const;
    const s = run([{ type: 'START', messages }]);
    expect(s.value).toEqual({ running: 'deciding' });
    expect(s.context.history).toEqual(messages);
    expect(s.context.history[0]).not.toBe(messages[0]); // copies: the caller's objects are not frozen
    expect(Object.isFrozen(messages[0])).toBe(false);
    const g = run([{ type: 'START', goal: 'g' }]);
    expect(g.context.history).toEqual([{ role: 'user', content: 'g' }]);
  });
});
