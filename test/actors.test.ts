/**
 * The policy and tool actors (src/actors.ts) seen from outside: retry back-off and the time it
 * counts, what a policy and a tool are handed, cancellation and timeouts reaching the tool's
 * signal, and a call in flight at resume (pure, idempotent, side effect). Time is a ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { Agent, type Tool } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { gate, idLike, recorder, sequence, until } from './support/helpers.js';

/** A policy that throws `failures` times, then answers; it records each call's attempt and time. */
function flaky(clock: ManualClock, failures: number) {
  const calls: { attempt: number; at: number }[] = [];
  const policy = (_history: unknown, ctx: { attempt: number }) => {
    calls.push({ attempt: ctx.attempt, at: clock.now() });
    if (calls.length <= failures) throw new Error(`boom ${calls.length}`);
    return { final: 'ok' };
  };
  return { policy, calls };
}

describe('policy retries', () => {
  it('back off by retryDelayMs × 2^attempt, counting the time waited as active', async () => {
    const clock = new ManualClock(1_000);
    const { policy, calls } = flaky(clock, 3);
    const agent = new Agent({ clock, policy, tools: [], policyRetries: 3, retryDelayMs: 100 });
    const done = agent.start('go');
    for (const delay of [100, 200, 400]) {
      await until(() => clock.sleepers === 1);
      const before = calls.length;
      clock.advance(delay - 1);
      await new Promise((r) => setImmediate(r));
      expect(calls).toHaveLength(before);
      clock.advance(1);
    }
    expect(await done).toBe('done');
    expect(calls).toEqual([
      { attempt: 0, at: 1_000 },
      { attempt: 1, at: 1_100 },
      { attempt: 2, at: 1_300 },
      { attempt: 3, at: 1_700 },
    ]);
    expect(agent.state).toMatchObject({ steps: 1, activeMs: 700, error: null, answer: 'ok' });
  });

  it('never waits more than 30 s between tries', async () => {
    const clock = new ManualClock();
    const { policy, calls } = flaky(clock, 2);
    const agent = new Agent({ clock, policy, tools: [], policyRetries: 2, retryDelayMs: 20_000 });
    const done = agent.start('go');
    await until(() => clock.sleepers === 1);
    clock.advance(20_000);
    await until(() => calls.length === 2 && clock.sleepers === 1);
    clock.advance(29_999);
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(2);
    clock.advance(1);
    expect(await done).toBe('done');
    expect(calls.map((c) => c.at)).toEqual([0, 20_000, 50_000]);
  });

  it('a run that fails after its retries keeps the last error and counts the time spent', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(40);
        throw new RangeError('too far');
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'RangeError: too far', activeMs: 40, steps: 0 });
  });

  it('a thrown object with a message keeps its name and message, and its time', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(15);
        throw { name: 'RateLimit', message: 'slow down' };
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'RateLimit: slow down', activeMs: 15 });
  });

  it('a thrown primitive is recorded once as an Error, with its time', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(25);
        throw 'no model';
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'Error: no model', activeMs: 25 });
  });

  it('a thrown frozen object still counts its time', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(30);
        throw Object.freeze({ code: 7 });
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'Error: <an object>', activeMs: 30 });
  });

  it('a thrown null is recorded as an Error, with its time', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(9);
        throw null;
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'Error: null', activeMs: 9 });
  });

  it('a thrown symbol is recorded as an Error with its description', async () => {
    const agent = new Agent({
      policyRetries: 0,
      tools: [],
      policy: () => {
        throw Symbol('quota');
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toBe('Error: Symbol(quota)');
  });

  // Was a bug (found by the mutation work, fixed in src/actors.ts withElapsed): a frozen Error
  // was recorded as 'Error: RangeError: frozen'.
  it('a thrown frozen Error keeps its name and message', async () => {
    const agent = new Agent({
      policyRetries: 0,
      tools: [],
      policy: () => {
        throw Object.freeze(new RangeError('frozen'));
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state.error).toBe('RangeError: frozen');
  });

  it('a thrown frozen object with a message, with and without a name, keeps them and its time', async () => {
    for (const [thrownValue, recorded] of [
      [Object.freeze({ name: 'Quota', message: 'spent' }), 'Quota: spent'],
      [Object.freeze({ message: 'spent' }), 'Error: spent'],
    ] as const) {
      const clock = new ManualClock();
      const agent = new Agent({
        clock,
        policyRetries: 0,
        tools: [],
        policy: () => {
          clock.advance(12);
          throw thrownValue;
        },
      });
      expect(await agent.start('go')).toBe('failed');
      expect(agent.state).toMatchObject({ error: recorded, activeMs: 12 });
    }
  });

  it('an error whose elapsedMs is read-only keeps its name and message, and counts the real time', async () => {
    const clock = new ManualClock();
    const agent = new Agent({
      clock,
      policyRetries: 0,
      tools: [],
      policy: () => {
        clock.advance(20);
        throw Object.defineProperty(new RangeError('fixed'), 'elapsedMs', { value: 5, writable: false });
      },
    });
    expect(await agent.start('go')).toBe('failed');
    expect(agent.state).toMatchObject({ error: 'RangeError: fixed', activeMs: 20 });
  });

  it('a policy whose clock runs backwards counts no negative time', async () => {
    const clock = new ManualClock(10_000);
    const agent = new Agent({
      clock,
      tools: [],
      policy: () => {
        clock.advance(-500);
        return { final: 'ok' };
      },
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.activeMs).toBe(0);
  });

  it('the policy is told the run id and step, and the time of its decision is the request time', async () => {
    const clock = new ManualClock(Date.parse('2026-12-02T10:00:00.000Z'));
    const seen: unknown[] = [];
    const agent = new Agent({
      clock,
      runId: 'r',
      approvalTtlMs: 60_000,
      tools: [recorder('look').tool, recorder('send', { sideEffect: true }).tool],
      policy: (_h, ctx) => {
        seen.push({ runId: ctx.runId, step: ctx.step, attempt: ctx.attempt, aborted: ctx.signal.aborted });
        clock.advance(1_000);
        return seen.length === 1 ? { tool: 'look' } : { tool: 'send' };
      },
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    expect(seen).toEqual([
      { runId: 'r', step: 1, attempt: 0, aborted: false },
      { runId: 'r', step: 2, attempt: 0, aborted: false },
    ]);
    expect(agent.state.pending).toMatchObject({
      requestedAt: '2026-12-02T10:00:02.000Z',
      expiresAt: '2026-12-02T10:01:02.000Z',
    });
  });
});

describe('cancel reaches calls in flight', () => {
  it('a cancel right after start stops the policy call before it is made', async () => {
    const policy = sequence({ final: 1 });
    const agent = new Agent({ policy, tools: [] });
    const started = agent.start('go');
    expect(await agent.cancel('stop')).toBe('cancelled');
    expect(await started).toBe('cancelled');
    expect(policy.calls).toEqual([]);
  });

  it('a cancel as a tool call starts stops it before the tool runs', async () => {
    const look = recorder('look');
    const agent = new Agent({ policy: sequence({ tool: 'look' }, { final: 1 }), tools: [look.tool] });
    agent.observe((e) => {
      if (e.type === 'executing') void agent.cancel('stop');
    });
    expect(await agent.start('go')).toBe('cancelled');
    expect(look.calls).toEqual([]);
  });

  it('a cancel during a tool without a timeout aborts the signal the tool was given', async () => {
    let signal: AbortSignal | undefined;
    const tool: Tool = {
      name: 'hold',
      fn: (_a, _k, ctx) => {
        signal = ctx.signal;
        return new Promise(() => {});
      },
    };
    const agent = new Agent({ policy: sequence({ tool: 'hold' }), tools: [tool] });
    const done = agent.start('go');
    await until(() => signal !== undefined);
    expect(signal?.aborted).toBe(false);
    await agent.cancel('stop');
    expect(signal?.aborted).toBe(true);
    expect(await done).toBe('cancelled');
  });

  it('a cancel during a timed tool aborts the signal the tool was given', async () => {
    const clock = new ManualClock();
    let signal: AbortSignal | undefined;
    const tool: Tool = {
      name: 'slow',
      timeoutMs: 1_000,
      fn: (_a, _k, ctx) => {
        signal = ctx.signal;
        return new Promise(() => {});
      },
    };
    const agent = new Agent({ clock, policy: sequence({ tool: 'slow' }), tools: [tool] });
    const done = agent.start('go');
    await until(() => signal !== undefined);
    expect(signal?.aborted).toBe(false);
    await agent.cancel('stop');
    expect(signal?.aborted).toBe(true);
    expect(await done).toBe('cancelled');
  });

  /** A timed tool whose async needsApproval cancels the run the second time it is asked. */
  function cancelledWhileAsked() {
    const seen: { signal?: AbortSignal; asked: number } = { asked: 0 };
    let agent!: Agent;
    const tool: Tool = {
      name: 'slow',
      timeoutMs: 1_000,
      // Asked twice: when the policy's action is classified, then by the tool actor just
      // before the call (defence in depth); the cancel comes during the second.
      needsApproval: async () => {
        seen.asked++;
        if (seen.asked === 2) await agent.cancel('stop');
        return false;
      },
      fn: (_a, _k, ctx) => {
        seen.signal = ctx.signal;
        return 'late';
      },
    };
    agent = new Agent({ clock: new ManualClock(), policy: sequence({ tool: 'slow' }), tools: [tool] });
    return { agent, seen };
  }

  // Was a bug (found by the mutation work, fixed in src/actors.ts): the tool actor checked
  // `signal.aborted` after the write-ahead save but not after awaiting an async `needsApproval`.
  it('a cancel while an async needsApproval is deciding: the tool is not called', async () => {
    const { agent, seen } = cancelledWhileAsked();
    expect(await agent.start('go')).toBe('cancelled');
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(seen.signal).toBeUndefined();
  });

  it('a tool that finishes keeps no abort listener: a later cancel does not reach its signal', async () => {
    const clock = new ManualClock();
    let signal: AbortSignal | undefined;
    const tool: Tool = {
      name: 'quick',
      timeoutMs: 1_000,
      fn: (_a, _k, ctx) => {
        signal = ctx.signal;
        return 1;
      },
    };
    const agent = new Agent({
      clock,
      policy: sequence({ tool: 'quick' }, { tool: 'send' }),
      tools: [tool, recorder('send', { sideEffect: true }).tool],
    });
    expect(await agent.start('go')).toBe('awaiting_approval');
    await agent.cancel('stop');
    expect(signal?.aborted).toBe(false);
  });
});

describe('what a tool is given', () => {
  it('an approved call carries the approved call id; its own copy of the args', async () => {
    const seen: unknown[] = [];
    const tool: Tool = {
      name: 'send',
      sideEffect: true,
      fn: (args, key, ctx) => {
        args.to = 'changed';
        seen.push({ args, key, step: ctx.step, runId: ctx.runId, approvedCallId: ctx.approvedCallId });
        return 'sent';
      },
    };
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'send', args: { to: 'ops' } }, { final: 1 }),
      tools: [tool],
    });
    await agent.start('go');
    expect(await agent.decide(true)).toBe('done');
    expect(seen).toEqual([
      { args: { to: 'changed' }, key: 'r:1', step: 1, runId: 'r', approvedCallId: idLike('r:1#1') },
    ]);
    expect(agent.state.history[1]).toEqual({ role: 'assistant', tool: 'send', args: { to: 'ops' } });
  });

  it('a tool without timeoutMs may take its time (real clock): no timer races it', async () => {
    const tool: Tool = { name: 'wait', fn: () => new Promise((r) => setTimeout(() => r('late'), 15)) };
    const agent = new Agent({ policy: sequence({ tool: 'wait' }, { final: 1 }), tools: [tool] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'wait', result: 'late' });
  });

  it('a tool whose clock runs backwards counts no negative time', async () => {
    const clock = new ManualClock(5_000);
    const tool: Tool = { name: 'back', fn: () => clock.advance(-100) ?? 'ok' };
    const agent = new Agent({ clock, policy: sequence({ tool: 'back' }, { final: 1 }), tools: [tool] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.activeMs).toBe(0);
  });

  it('a tool call counts its time and is recorded at the clock time', async () => {
    const clock = new ManualClock();
    const tool: Tool = {
      name: 'work',
      fn: () => {
        clock.advance(70);
        return 'ok';
      },
    };
    const agent = new Agent({ clock, policy: sequence({ tool: 'work' }, { final: 1 }), tools: [tool] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.activeMs).toBe(70);
  });
});

/** A checkpoint taken while `tool` ran (the write-ahead record), run id 'r', step 1. */
async function midCall(tool: Omit<Tool, 'fn'>, approve: boolean) {
  const held = gate();
  let calls = 0;
  const agent = new Agent({
    runId: 'r',
    policy: sequence({ tool: tool.name, args: { n: 1 } }),
    tools: [
      {
        ...tool,
        fn: () => {
          calls++;
          return held.promise;
        },
      },
    ],
  });
  const started = agent.start('go');
  if (approve) {
    expect(await started).toBe('awaiting_approval');
    void agent.decide(true);
  }
  await until(() => calls === 1);
  const blob = agent.checkpoint();
  await agent.cancel('crash');
  return blob;
}

describe('a call in flight at resume', () => {
  it('a pure tool is simply called again with the same key', async () => {
    const blob = await midCall({ name: 'look' }, false);
    const look = recorder('look');
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [look.tool] });
    expect(await agent.run()).toBe('done');
    expect(look.calls).toEqual([{ args: { n: 1 }, key: 'r:1' }]);
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'look', result: 'ok' });
  });

  it('an idempotent side effect is called again with the same key', async () => {
    const blob = await midCall({ name: 'pay', sideEffect: true, idempotent: true }, true);
    const pay = recorder('pay', { sideEffect: true, idempotent: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [pay.tool] });
    expect(await agent.run()).toBe('done');
    expect(pay.calls).toEqual([{ args: { n: 1 }, key: 'r:1' }]);
  });

  it('another side effect asks a human again, then runs once when approved', async () => {
    const blob = await midCall({ name: 'pay', sideEffect: true }, true);
    const pay = recorder('pay', { sideEffect: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [pay.tool] });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ id: idLike('r:1#2'), key: 'r:1', outcome: 'unknown' });
    expect(pay.calls).toEqual([]);
    expect(await agent.decide(true)).toBe('done');
    expect(pay.calls).toEqual([{ args: { n: 1 }, key: 'r:1' }]);
    expect(agent.state.history[2]).toMatchObject({ role: 'tool', tool: 'pay', result: 'ok' });
  });

  it('denying a call whose outcome is unknown records the denial as outcome unknown', async () => {
    const blob = await midCall({ name: 'pay', sideEffect: true }, true);
    const pay = recorder('pay', { sideEffect: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [pay.tool] });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(await agent.decide(false, 'check first', { by: 'ann' })).toBe('done');
    expect(pay.calls).toEqual([]);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'pay',
      error: 'denied by human: check first',
      approval: expect.objectContaining({ approved: false, by: 'ann', callId: idLike('r:1#2') }),
      outcome: 'unknown',
    });
  });

  it('a tool missing from the tools given at resume becomes an unknown-tool observation', async () => {
    const blob = await midCall({ name: 'look' }, false);
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [] });
    expect(await agent.run()).toBe('done');
    expect(agent.state.history[2]).toEqual({ role: 'tool', tool: 'look', error: 'unknown tool look' });
  });

  it('a call decided without approval is refused if the tool given at resume needs one', async () => {
    const blob = await midCall({ name: 'look' }, false);
    const look = recorder('look', { needsApproval: true });
    const agent = Agent.resume(blob, { policy: sequence({ final: 'ok' }), tools: [look.tool] });
    expect(await agent.run()).toBe('done');
    expect(look.calls).toEqual([]);
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'look',
      error: 'refused: look needs approval and this call has none',
    });
  });
});

describe('what policies and tools return', () => {
  it('an explicit final: undefined beside a tool is a tool call; alone it is malformed', async () => {
    const look = recorder('look');
    const agent = new Agent({
      policy: sequence({ tool: 'look', final: undefined }, { final: undefined }, { final: 'ok' }),
      tools: [look.tool],
    });
    expect(await agent.start('go')).toBe('done');
    expect(look.calls).toHaveLength(1);
    expect(agent.state.history.slice(1, 4)).toEqual([
      { role: 'assistant', tool: 'look', args: {} },
      { role: 'tool', tool: 'look', result: 'ok' },
      { role: 'tool', tool: '', error: 'malformed action: has neither tool nor final' },
    ]);
  });

  it('an object whose prototype has no constructor is described as an object', async () => {
    const odd = Object.create(Object.create(null));
    const agent = new Agent({
      policy: sequence({ tool: 'odd' }, { final: 1 }),
      tools: [{ name: 'odd', fn: () => odd }],
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[2]).toEqual({
      role: 'tool',
      tool: 'odd',
      error: 'TypeError: tool result is not JSON: result is an object, not a plain object',
    });
  });
});

describe('class instances from the policy are not plain objects', () => {
  class Args {
    n = 1;
  }
  class Action {
    tool = 't';
  }

  it('args that are a class instance make a malformed action; the tool is not called', async () => {
    const t = recorder('t');
    const agent = new Agent({
      policy: sequence({ tool: 't', args: new Args() } as never, { final: 1 }),
      tools: [t.tool],
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: 't',
      error: 'malformed action: args must be an object',
    });
    expect(t.calls).toEqual([]);
  });

  it('an action that is a class instance is malformed, whatever its fields', async () => {
    const t = recorder('t');
    const agent = new Agent({ policy: sequence(new Action() as never, { final: 1 }), tools: [t.tool] });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: 'malformed action: expected an object, got object',
    });
    expect(t.calls).toEqual([]);
  });
});
