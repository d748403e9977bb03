import { describe, expect, it } from 'vitest';
import { type Action, Agent, OptionsError, RunStateError } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

const loop = () => sequence({ tool: 't', usage: { inputTokens: 10, outputTokens: 5 } });

describe('step budget', () => {
  it('counts policy calls and stops at maxSteps without another call', async () => {
    const policy = loop();
    const t = recorder('t');
    const agent = new Agent({ policy, tools: [t.tool], maxSteps: 3 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(3);
    expect(t.calls).toHaveLength(3);
    expect(agent.state).toMatchObject({ steps: 3, stoppedBy: 'steps', limits: { maxSteps: 3 } });
  });

  it('maxSteps 0 takes no step at all', async () => {
    const policy = loop();
    const agent = new Agent({ policy, tools: [], maxSteps: 0 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(0);
  });

  it('carries the count across checkpoint and resume; a smaller maxSteps stops sooner', async () => {
    const t = recorder('t', { sideEffect: true });
    const agent = new Agent({ policy: loop(), tools: [t.tool], maxSteps: 10 });
    await agent.start('go'); // pauses at step 1
    await agent.decide(true); // step 2 pauses again
    expect(agent.state.steps).toBe(2);
    const blob = agent.checkpoint();

    const policy = loop();
    const resumed = Agent.resume(blob, { policy, tools: [t.tool], maxSteps: 2 });
    expect(await resumed.decide(true)).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(0);
    expect(resumed.state.steps).toBe(2);

    const kept = Agent.resume(blob, { policy, tools: [t.tool] });
    expect(kept.state.limits.maxSteps).toBe(10);
  });

  it('extendBudget raises the limit and run() continues', async () => {
    const policy = loop();
    const agent = new Agent({ policy, tools: [recorder('t').tool], maxSteps: 2 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(await agent.run()).toBe('budget_exhausted'); // nothing raised: stays
    expect(policy.calls).toHaveLength(2);
    expect(agent.extendBudget({ maxSteps: 4 })).toMatchObject({ maxSteps: 4 });
    expect(agent.status).toBe('budget_exhausted');
    expect(await agent.run()).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(4);
    expect(agent.state.steps).toBe(4);
  });

  it('a limit lowered while the policy is asked applies from the next step: the call in flight counts', async () => {
    const held = gate<Action>();
    const t = recorder('t');
    let asked = 0;
    const policy = (): Action | Promise<Action> => {
      asked++;
      return asked === 2 ? held.promise : { tool: 't', usage: { inputTokens: 10, outputTokens: 5 } };
    };
    const agent = new Agent({ policy, tools: [t.tool], maxSteps: 5 });
    const status = agent.start('go');
    await until(() => asked === 2);
    expect(agent.extendBudget({ maxSteps: 1 })).toMatchObject({ maxSteps: 1 });
    expect(agent.status).toBe('running');
    held.resolve({ tool: 't', usage: { inputTokens: 7, outputTokens: 3 } });
    expect(await status).toBe('budget_exhausted');
    // Not aborted: its usage is spent and its call ran; no third policy call.
    expect(asked).toBe(2);
    expect(t.calls).toHaveLength(2);
    expect(agent.state).toMatchObject({ steps: 2, stoppedBy: 'steps', usage: { inputTokens: 17, outputTokens: 8 } });
  });

  it('extendBudget works on a resumed run before it is started, and survives checkpoint', async () => {
    const agent = new Agent({ policy: loop(), tools: [recorder('t').tool], maxSteps: 1 });
    await agent.start('go');
    const resumed = Agent.resume(agent.checkpoint(), { policy: sequence({ final: 'x' }), tools: [] });
    resumed.extendBudget({ maxSteps: 5 });
    const again = Agent.resume(resumed.checkpoint(), { policy: sequence({ final: 'x' }), tools: [] });
    expect(again.state.limits.maxSteps).toBe(5);
    expect(await again.run()).toBe('done');
  });

  it('rejects bad limits with OptionsError and changes nothing', async () => {
    const agent = new Agent({ policy: loop(), tools: [], maxSteps: 1 });
    for (const bad of [
      { maxSteps: -1 },
      { maxSteps: 1.5 },
      { maxTokens: 'x' },
      { maxSteps: Number.NaN },
      { other: 1 },
    ]) {
      expect(() => agent.extendBudget(bad as never)).toThrow(OptionsError);
    }
    expect(agent.state.limits).toEqual({ maxSteps: 1, maxTokens: null, maxActiveMs: null, maxCostUsd: null });
  });

  it('extendBudget on an ended run throws RunStateError', async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    expect(() => agent.extendBudget({ maxSteps: 9 })).toThrow(RunStateError);
  });
});

describe('token budget', () => {
  it('sums usage and stops before the call that would start over the limit', async () => {
    const policy = loop();
    const agent = new Agent({ policy, tools: [recorder('t').tool], maxTokens: 40 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    // 15 tokens a step: after 3 steps 45 >= 40.
    expect(agent.state).toMatchObject({ steps: 3, usage: { inputTokens: 30, outputTokens: 15 }, stoppedBy: 'tokens' });
    agent.extendBudget({ maxTokens: 60 });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state.steps).toBe(4);
  });

  it('ignores invalid usage rather than failing the run', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't', usage: { inputTokens: -1, outputTokens: 'x' } }, { final: 1 }),
      tools: [recorder('t').tool],
      maxTokens: 1,
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.usage).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 });
  });
});

describe('active time budget', () => {
  it('counts time spent in policy and tool calls, not time paused for a human', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    const tool = { name: 'slow', sideEffect: true, fn: () => void clock.advance(300) };
    const policy = () => {
      clock.advance(100);
      return { tool: 'slow' };
    };
    const agent = new Agent({ clock, policy, tools: [tool], maxActiveMs: 800 });
    expect(await agent.start('go')).toBe('awaiting_approval');
    expect(agent.state.activeMs).toBe(100);
    clock.advance(3_600_000); // an hour waiting for the human
    expect(await agent.decide(true)).toBe('awaiting_approval');
    expect(agent.state.activeMs).toBe(500);
    expect(await agent.decide(true)).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ activeMs: 800, stoppedBy: 'time', steps: 2 });
  });
});
