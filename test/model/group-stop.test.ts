/**
 * The machine's one way of hearing that a budget kept outside the run is spent (its group's, in
 * the store): the policy actor's `{ type: 'exhausted', budget: 'group' }` outcome. Through the
 * pure `transition()`: it stops the run without counting a step, `RUN` asks the policy again
 * (the runtime checks the group again), a change of the run's own limits does not lift it, and
 * the checkpoint of a group stop validates and round-trips.
 */
import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, transition } from 'xstate';
import { agentMachine, type MachineEvent } from '../../machines/index.js';
import type { AgentInput } from '../../machines/types.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../src/checkpoint/index.js';

const input: AgentInput = {
  runId: 'r',
  limits: { maxSteps: 4, maxTokens: 100, maxActiveMs: null, maxCostUsd: 1 },
  approvalTtlMs: null,
};
const at = new Date(Date.UTC(2026, 0, 1)).toISOString();
const groupOut: MachineEvent = {
  type: 'xstate.done.actor.policy',
  output: { type: 'exhausted', budget: 'group', usage: null, elapsedMs: 5, at },
};
const step: MachineEvent = {
  type: 'xstate.done.actor.policy',
  output: {
    type: 'malformed',
    tool: 't',
    error: 'malformed action: x',
    usage: { inputTokens: 1, outputTokens: 1 },
    cost: { usd: 0.1 },
    elapsedMs: 1,
    at,
  },
};

function run(events: MachineEvent[]) {
  let [s] = initialTransition(agentMachine, input);
  for (const e of events) [s] = transition(agentMachine, s, e);
  return s;
}

describe('a group stop in the machine', () => {
  it('stops budget_exhausted with stoppedBy group, counting no step, no usage and no time', () => {
    const s = run([{ type: 'START', goal: 'g' }, step, groupOut]);
    expect(s.value).toBe('budget_exhausted');
    expect(s.context).toMatchObject({
      stoppedBy: 'group',
      steps: 1,
      activeMs: 1,
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.1 },
      error: null,
    });
    expect(s.context.history).toHaveLength(2); // the goal and the malformed step's observation: nothing for the stop
  });

  it('RUN asks the policy again (the runtime checks the group again) and clears the stop', () => {
    const s = run([{ type: 'START', goal: 'g' }, groupOut, { type: 'RUN' }]);
    expect(s.value).toEqual({ running: 'deciding' });
    expect(s.context.stoppedBy).toBeNull();
    expect(transition(agentMachine, s, groupOut)[0].context.stoppedBy).toBe('group');
  });

  it("EXTEND_BUDGET of the run's own limits keeps the group stop; a spent run budget takes its place", () => {
    const s = run([{ type: 'START', goal: 'g' }, step, groupOut]);
    const [raised] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxCostUsd: 5, maxSteps: 10 } });
    expect(raised.value).toBe('budget_exhausted');
    expect(raised.context.stoppedBy).toBe('group');
    const [lowered] = transition(agentMachine, s, { type: 'EXTEND_BUDGET', limits: { maxSteps: 1 } });
    expect(lowered.context.stoppedBy).toBe('steps');
    // A run whose own budget is spent is not sent back to its group: RUN is refused.
    expect(transition(agentMachine, lowered, { type: 'RUN' })[0].value).toBe('budget_exhausted');
  });

  it('a group stop is a valid checkpoint that round-trips exactly', () => {
    const s = run([{ type: 'START', goal: 'g' }, groupOut]);
    const actor = createActor(agentMachine, { snapshot: s, input });
    const blob = encodeCheckpoint(actor.getPersistedSnapshot());
    const decoded = decodeCheckpoint(blob);
    expect(decoded.context.stoppedBy).toBe('group');
    expect(encodeCheckpoint(decoded as never)).toBe(blob);
    // Any other name is still refused.
    expect(() => decodeCheckpoint(blob.replace('"stoppedBy":"group"', '"stoppedBy":"tenant"'))).toThrow(/stoppedBy/);
  });
});
