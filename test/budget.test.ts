import { describe, expect, it } from 'vitest';
import { type Action, Agent, estimateTokens, OptionsError, RunStateError } from '../src/index.js';
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

  it("extendBudget on a cancelled run throws RunStateError; on a run that answered it sets the next turns' limits", async () => {
    const agent = new Agent({ policy: sequence({ final: 1 }), tools: [] });
    await agent.start('go');
    expect(agent.extendBudget({ maxSteps: 9 })).toMatchObject({ maxSteps: 9 });
    await agent.cancel();
    expect(() => agent.extendBudget({ maxSteps: 10 })).toThrow(RunStateError);
  });
});

describe('token budget', () => {
  it('reserves before each call: a call whose estimated request does not fit is not made, and usage never passes the limit', async () => {
    const policy = loop(); // 15 tokens a step as reported
    const agent = new Agent({ policy, tools: [recorder('t').tool], maxTokens: 100, maxSteps: 50 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    const { usage, steps, stoppedBy, error } = agent.state;
    expect(stoppedBy).toBe('tokens');
    expect(usage.inputTokens + usage.outputTokens).toBe(15 * steps);
    expect(usage.inputTokens + usage.outputTokens).toBeLessThanOrEqual(100);
    // The next call's request (the view, a quarter token a character) did not fit what was left.
    const left = 100 - 15 * steps;
    expect(estimateTokens(agent.view())).toBeGreaterThan(left - 1);
    expect(error).toMatch(/^the next call does not fit the token budget: its request is estimated at \d+ tokens/);
    expect(policy.calls).toHaveLength(steps);
    agent.extendBudget({ maxTokens: 200 });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state.steps).toBeGreaterThan(steps);
  });

  it('the model is told the output it may produce: what is left after the estimated request', async () => {
    const seen: (number | null | undefined)[] = [];
    const agent = new Agent({
      policy: (_view, ctx) => {
        seen.push(ctx.maxOutputTokens);
        return { final: 'ok', usage: { inputTokens: 10, outputTokens: 2 } };
      },
      tools: [],
      maxTokens: 100,
    });
    expect(await agent.start('go')).toBe('done');
    expect(seen).toEqual([100 - estimateTokens([{ role: 'user', content: 'go' }])]);
    const free = new Agent({ policy: (_v, ctx) => ({ final: ctx.maxOutputTokens ?? 'none' }), tools: [] });
    await free.start('go');
    expect(free.state.answer).toBe('none'); // no budget: no cap
  });

  it('usage it cannot read is charged at the estimate, never 0: the run stops for tokens, not at its step budget', async () => {
    const agent = new Agent({
      policy: () => ({ tool: 't', usage: { inputTokens: -1, outputTokens: 'x' } }) as unknown as Action,
      tools: [recorder('t').tool],
      maxTokens: 100,
      maxSteps: 50,
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    const { usage, steps, stoppedBy, error } = agent.state;
    expect(stoppedBy).toBe('tokens');
    expect(steps).toBeLessThan(10);
    expect(usage.inputTokens + usage.outputTokens).toBeGreaterThan(0);
    expect(usage.inputTokens + usage.outputTokens).toBeLessThanOrEqual(100);
    expect(usage.estimatedTokens).toBe(usage.inputTokens + usage.outputTokens);
    expect(agent.state.history.length).toBeGreaterThan(1);
    expect(error).toMatch(/does not fit|could not be read/);
  });

  it('usage that is missing is estimated and marked; hostile counts (1e300, -1, "lots") are not read', async () => {
    for (const usage of [
      undefined,
      { inputTokens: 1e300, outputTokens: 1 },
      { inputTokens: -1, outputTokens: 1 },
      { inputTokens: 'lots', outputTokens: 2 },
    ]) {
      const agent = new Agent({
        policy: sequence({ final: 'ok', ...(usage === undefined ? {} : { usage }) }),
        tools: [],
        maxTokens: 1_000,
      });
      expect(await agent.start('go')).toBe('done');
      const u = agent.state.usage;
      const estimate = estimateTokens([{ role: 'user', content: 'go' }]) + Math.ceil(JSON.stringify('ok').length / 4);
      expect([u.inputTokens + u.outputTokens, u.estimatedTokens]).toEqual([estimate, estimate]);
      if (usage === undefined) expect(agent.state.error).toBeNull();
      else expect(agent.state.error).toMatch(/could not be read/);
    }
  });

  it('a report of more than the call could spend is charged what it could, and the run says so', async () => {
    const agent = new Agent({
      policy: sequence({ final: 'ok', usage: { inputTokens: 5_000, outputTokens: 5_000 } }),
      tools: [],
      maxTokens: 1_000,
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.usage).toMatchObject({ inputTokens: 1_000, outputTokens: 0 });
    expect(agent.state.error).toBe('the call reported 10000 tokens, more than the 1000 it could spend: charged 1000');
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
