/**
 * Issue 10, "Time limits on calls": a policy that never answers cannot hang a run, the active-time
 * budget bounds the call in flight, and the policy is told what it has left. Time is a ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { Agent, type PolicyContext } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

const never = () => new Promise<never>(() => {});

describe('policyTimeoutMs', () => {
  it('aborts a policy that never answers: each try times out, then the run fails with the timeout', async () => {
    const clock = new ManualClock(0);
    const signals: AbortSignal[] = [];
    const agent = new Agent({
      clock,
      tools: [],
      policyRetries: 1,
      retryDelayMs: 10,
      policyTimeoutMs: 1_000,
      policy: (_h, ctx) => {
        signals.push(ctx.signal);
        return never();
      },
    });
    const done = agent.start('go');
    await until(() => signals.length === 1);
    clock.advance(999);
    await new Promise((r) => setImmediate(r));
    expect(signals[0]?.aborted).toBe(false);
    clock.advance(1); // the first try times out
    await until(() => clock.sleepers === 1); // the back-off
    expect(signals[0]?.aborted).toBe(true);
    clock.advance(10);
    await until(() => signals.length === 2);
    clock.advance(1_000);
    expect(await done).toBe('failed');
    expect(agent.state).toMatchObject({
      error: 'TimeoutError: policy timed out after 1000 ms',
      steps: 0,
      activeMs: 2_010,
    });
  });

  it("a failed try's retry-after (a rate limit) lengthens the back-off; a second try times out on its own clock", async () => {
    const clock = new ManualClock(0);
    const signals: AbortSignal[] = [];
    const agent = new Agent({
      clock,
      tools: [],
      policyRetries: 2,
      retryDelayMs: 10,
      policyTimeoutMs: 1_000,
      policy: (_h, ctx) => {
        signals.push(ctx.signal);
        if (ctx.attempt === 0)
          throw Object.assign(new Error('429'), { headers: new Headers({ 'retry-after-ms': '700' }) });
        return never();
      },
    });
    const done = agent.start('go');
    await until(() => clock.sleepers === 1);
    clock.advance(699);
    await new Promise((r) => setImmediate(r));
    expect(signals).toHaveLength(1); // not after retryDelayMs: the server asked for 700 ms
    clock.advance(1);
    await until(() => signals.length === 2);
    // The second try has its full policyTimeoutMs, counted from its own start.
    clock.advance(999);
    await new Promise((r) => setImmediate(r));
    expect(signals[1]?.aborted).toBe(false);
    clock.advance(1);
    await until(() => signals[1]?.aborted === true);
    await until(() => clock.sleepers === 1);
    clock.advance(40);
    await until(() => signals.length === 3);
    clock.advance(1_000);
    expect(await done).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'TimeoutError: policy timed out after 1000 ms', activeMs: 2_740 });
  });

  it('a policy that answers in time is not affected, and leaves no timer behind', async () => {
    const clock = new ManualClock(0);
    const agent = new Agent({ clock, tools: [], policyTimeoutMs: 1_000, policy: sequence({ final: 'ok' }) });
    expect(await agent.start('go')).toBe('done');
    expect(clock.sleepers).toBe(0);
  });
});

describe('maxActiveMs bounds the call in flight', () => {
  it('a policy call in flight is stopped at the end of the budget: budget_exhausted for time, no step', async () => {
    const clock = new ManualClock(0);
    let signal: AbortSignal | undefined;
    const agent = new Agent({
      clock,
      tools: [],
      maxActiveMs: 500,
      policy: (_h, ctx) => {
        signal = ctx.signal;
        return never();
      },
    });
    const done = agent.start('go');
    await until(() => signal !== undefined);
    clock.advance(500);
    expect(await done).toBe('budget_exhausted');
    expect(signal?.aborted).toBe(true);
    expect(agent.state).toMatchObject({ stoppedBy: 'time', activeMs: 500, steps: 0, error: null });
    // More time, and run() asks the policy again.
    agent.extendBudget({ maxActiveMs: 2_000 });
    const again = agent.run();
    await until(() => signal?.aborted === false);
    clock.advance(1_500);
    expect(await again).toBe('budget_exhausted');
    expect(agent.state.activeMs).toBe(2_000);
  });

  it('a budget raised while the call runs moves its deadline instead of cutting it', async () => {
    const clock = new ManualClock(0);
    let signal: AbortSignal | undefined;
    const answer = gate<{ final: string }>();
    const agent = new Agent({
      clock,
      tools: [],
      maxActiveMs: 500,
      policy: (_h, ctx) => {
        signal = ctx.signal;
        return answer.promise;
      },
    });
    const done = agent.start('go');
    await until(() => signal !== undefined);
    clock.advance(300);
    agent.extendBudget({ maxActiveMs: 1_000 });
    clock.advance(300); // past the old deadline, before the new one
    await new Promise((r) => setImmediate(r));
    expect(signal?.aborted).toBe(false);
    answer.resolve({ final: 'in time' });
    expect(await done).toBe('done');
    expect(agent.state.activeMs).toBe(600);
  });

  it('a retry back-off that reaches the end of the budget stops there', async () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const agent = new Agent({
      clock,
      tools: [],
      maxActiveMs: 300,
      policyRetries: 3,
      retryDelayMs: 1_000,
      policy: () => {
        calls++;
        clock.advance(100);
        throw new Error('down');
      },
    });
    const done = agent.start('go');
    await until(() => clock.sleepers > 0 && calls === 1);
    clock.advance(200);
    expect(await done).toBe('budget_exhausted');
    expect(calls).toBe(1);
    expect(agent.state).toMatchObject({ stoppedBy: 'time', activeMs: 300 });
  });

  it('a tool without timeoutMs gets the active time left as its deadline', async () => {
    const clock = new ManualClock(0);
    let toolSignal: AbortSignal | undefined;
    const agent = new Agent({
      clock,
      maxActiveMs: 1_000,
      policy: (history) => {
        clock.advance(100);
        return history.length === 1 ? { tool: 'slow' } : { final: 'ok' };
      },
      tools: [
        {
          name: 'slow',
          fn: (_args, _key, ctx) => {
            toolSignal = ctx.signal;
            return never();
          },
        },
      ],
    });
    const done = agent.start('go');
    await until(() => toolSignal !== undefined);
    clock.advance(900);
    expect(await done).toBe('budget_exhausted');
    expect(toolSignal?.aborted).toBe(true);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'slow',
      error: 'TimeoutError: tool slow stopped after 900 ms: the active-time budget (maxActiveMs) ran out',
    });
    expect(agent.state).toMatchObject({ stoppedBy: 'time', activeMs: 1_000 });
  });

  it('a tool timeout shorter than the time left still wins', async () => {
    const clock = new ManualClock(0);
    let started = false;
    const agent = new Agent({
      clock,
      maxActiveMs: 10_000,
      policy: sequence({ tool: 'slow' }, { final: 'ok' }),
      tools: [
        {
          name: 'slow',
          timeoutMs: 50,
          fn: () => {
            started = true;
            return never();
          },
        },
      ],
    });
    const done = agent.start('go');
    await until(() => started);
    clock.advance(50);
    expect(await done).toBe('done');
    expect(agent.state.history[2]).toMatchObject({ error: 'TimeoutError: tool slow timed out after 50 ms' });
  });

  it('an approved call is not started once the active time is spent (after a lower limit at resume)', async () => {
    const clock = new ManualClock(0);
    const pay = recorder('pay', { sideEffect: true });
    const policy = (history: unknown[]) => {
      clock.advance(100);
      return history.length === 1 ? { tool: 'pay' } : { final: 'ok' };
    };
    const agent = new Agent({ clock, maxActiveMs: 1_000, policy, tools: [pay.tool] });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const lowered = Agent.resume(agent.checkpoint(), { clock, policy, tools: [pay.tool], maxActiveMs: 100 });
    expect(await lowered.decide(true)).toBe('budget_exhausted');
    expect(pay.calls).toEqual([]);
    expect(lowered.state.history[2]).toMatchObject({
      error: 'not run: the active-time budget (maxActiveMs) was spent before pay started',
      approval: { approved: true },
    });
  });
});

describe('ctx.remaining', () => {
  it('tells the policy the steps, tokens and active time left, null where unlimited', async () => {
    const clock = new ManualClock(0);
    const seen: PolicyContext['remaining'][] = [];
    const agent = new Agent({
      clock,
      maxSteps: 5,
      maxTokens: 1_000,
      maxActiveMs: 10_000,
      tools: [{ name: 't', fn: () => clock.advance(250) }],
      policy: (history, ctx) => {
        seen.push(ctx.remaining);
        clock.advance(100);
        return history.length === 1
          ? { tool: 't', usage: { inputTokens: 300, outputTokens: 20 } }
          : { final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } };
      },
    });
    await agent.start('go');
    expect(seen).toEqual([
      { steps: 5, tokens: 1_000, activeMs: 10_000, costUsd: null },
      { steps: 4, tokens: 680, activeMs: 9_650, costUsd: null },
    ]);
    const unlimited: PolicyContext['remaining'][] = [];
    await new Agent({
      tools: [],
      policy: (_h, ctx) => {
        unlimited.push(ctx.remaining);
        return { final: 1 };
      },
    }).start('go');
    expect(unlimited).toEqual([{ steps: 8, tokens: null, activeMs: null, costUsd: null }]);
  });
});
