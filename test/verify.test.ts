/**
 * A tool's `verify`: asked, when a side effect's outcome is unknown (in flight at a crash, or timed
 * out), whether it took effect — done: its result is recorded, nothing runs; not done: after a
 * crash it runs again under its approval while that is younger than the approval TTL, after a
 * timeout the timeout stands; anything else: a human decides, as without `verify`.
 */
import { describe, expect, it } from 'vitest';
import { Agent, type JsonObject, type Policy, type Tool, type VerifyAnswer, type VerifyContext } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { idLike, until } from './support/helpers.js';

const never = () => new Promise<never>(() => {});
const policy = (): Policy => (history) =>
  history.some((e) => e.role === 'tool') ? { final: 'paid' } : { tool: 'pay', args: { cents: 500 } };

/** A payment tool whose provider records payments by key, and whose verify says what `answer` says. */
function payTool(answer: (ctx: VerifyContext) => unknown, options: { hang?: boolean; timeoutMs?: number } = {}) {
  const made: string[] = [];
  const asked: VerifyContext[] = [];
  const tool: Tool = {
    name: 'pay',
    sideEffect: true,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    fn: (_args, key) => {
      made.push(key);
      return options.hang ? never() : { paid: true };
    },
    verify: (ctx) => {
      asked.push(ctx);
      return answer(ctx) as VerifyAnswer;
    },
  };
  return { tool, made, asked };
}

/** A checkpoint taken while an approved `pay` call was in flight (the process then died). */
async function inFlight(clock: ManualClock, ttl: number | null = null): Promise<string> {
  const dying = payTool(() => ({ unknown: true }), { hang: true });
  const first = new Agent({ runId: 'inv', policy: policy(), tools: [dying.tool], clock, approvalTtlMs: ttl });
  expect(await first.start('pay')).toBe('awaiting_approval');
  void first.decide(true, 'ok', { by: 'erin' });
  await until(() => dying.made.length === 1);
  const blob = first.checkpoint();
  await first.cancel('crash');
  return blob;
}

describe('verify after a crash', () => {
  it('done: the result is recorded as verified, nothing runs again, nobody is asked', async () => {
    const clock = new ManualClock(0);
    const blob = await inFlight(clock);
    const pay = payTool(() => ({ done: { paid: true, receipt: 'r-1' } }));
    const again = Agent.resume(blob, { policy: policy(), tools: [pay.tool], clock });
    expect(await again.run()).toBe('done');
    expect(pay.made).toEqual([]);
    expect(pay.asked.map((a) => [a.key, a.args, a.fence, a.runId, a.step])).toEqual([
      ['inv:1', { cents: 500 }, null, 'inv', 1],
    ]);
    expect(pay.asked[0]?.signal).toBeInstanceOf(AbortSignal);
    expect(again.state.history[2]).toMatchObject({
      role: 'tool',
      tool: 'pay',
      result: { paid: true, receipt: 'r-1' },
      verified: true,
      approval: { approved: true, by: 'erin' },
    });
  });

  it('not done, the approval still young: the call runs again with its key, under its approval', async () => {
    const clock = new ManualClock(0);
    const blob = await inFlight(clock, 60_000);
    clock.advance(59_999);
    const pay = payTool(() => ({ notDone: true }));
    const again = Agent.resume(blob, { policy: policy(), tools: [pay.tool], clock });
    expect(await again.run()).toBe('done');
    expect(pay.made).toEqual(['inv:1']);
    expect(again.state.history[2]).toMatchObject({ result: { paid: true }, approval: { by: 'erin' } });
    expect(again.state.history[2]).not.toHaveProperty('verified');
  });

  it('not done, the approval older than approvalTtlMs: a human is asked again, the outcome known', async () => {
    const clock = new ManualClock(0);
    const blob = await inFlight(clock, 60_000);
    clock.advance(60_000);
    const pay = payTool(() => ({ notDone: true }));
    const again = Agent.resume(blob, { policy: policy(), tools: [pay.tool], clock });
    expect(await again.run()).toBe('awaiting_approval');
    expect(pay.made).toEqual([]);
    expect(again.state.pending).toMatchObject({ id: idLike('inv:1#2'), attempt: 2 });
    expect(again.state.pending).not.toHaveProperty('outcome'); // not done: nothing unknown about it
    expect(await again.decide(true, 'again')).toBe('done');
    expect(pay.made).toEqual(['inv:1']);
  });

  const unknowns: [string, (ctx: VerifyContext) => unknown][] = [
    ['unknown', () => ({ unknown: true })],
    [
      'a throw',
      () => {
        throw new Error('provider down');
      },
    ],
    ['a rejection', () => Promise.reject(new Error('provider down'))],
    ['a result that is not JSON', () => ({ done: new Date(0) })],
    ['both answers at once', () => ({ done: 1, notDone: true })],
    ['notDone: "yes"', () => ({ notDone: 'yes' })],
    ['a string', () => 'done'],
    ['null', () => null],
    [
      'a revoked Proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    ],
    [
      'an object whose getter throws',
      () => ({
        get done() {
          throw new Error('trap');
        },
      }),
    ],
  ];
  for (const [what, answer] of unknowns) {
    it(`${what}: a human decides, as without verify; nothing runs`, async () => {
      const clock = new ManualClock(0);
      const blob = await inFlight(clock);
      const pay = payTool(answer);
      const again = Agent.resume(blob, { policy: policy(), tools: [pay.tool], clock });
      expect(await again.run()).toBe('awaiting_approval');
      expect(pay.asked).toHaveLength(1);
      expect(pay.made).toEqual([]);
      expect(again.state.pending).toMatchObject({ id: idLike('inv:1#2'), outcome: 'unknown' });
    });
  }

  it('a verify that never answers is cut off at the tool timeout (30 s without one): a human decides', async () => {
    const clock = new ManualClock(0);
    const blob = await inFlight(clock);
    const pay = payTool((ctx) => new Promise(() => void ctx.signal));
    const again = Agent.resume(blob, { policy: policy(), tools: [pay.tool], clock });
    const running = again.run();
    await until(() => pay.asked.length === 1 && clock.sleepers === 1);
    clock.advance(29_999);
    await new Promise((r) => setImmediate(r));
    expect(pay.asked[0]?.signal.aborted).toBe(false);
    clock.advance(1);
    expect(await running).toBe('awaiting_approval');
    expect(pay.asked[0]?.signal.aborted).toBe(true);
    expect(again.state.pending).toMatchObject({ outcome: 'unknown' });
  });

  it('is not asked about an idempotent tool (called again) nor a pure one', async () => {
    const clock = new ManualClock(0);
    const blob = await inFlight(clock);
    const asked: string[] = [];
    const made: string[] = [];
    const idempotent: Tool = {
      name: 'pay',
      sideEffect: true,
      idempotent: true,
      fn: (_a, key) => made.push(key),
      verify: () => {
        asked.push('verify');
        return { done: 1 };
      },
    };
    const again = Agent.resume(blob, { policy: policy(), tools: [idempotent], clock });
    expect(await again.run()).toBe('done');
    expect(made).toEqual(['inv:1']);
    expect(asked).toEqual([]);
  });

  it('gets the arguments the call ran with (an approver edit) and, with a store, the fencing token', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(0);
    const dying = payTool(() => ({ unknown: true }), { hang: true });
    const cut = { dead: false };
    const storeOfA = new Proxy(store, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          cut.dead ? never() : (value as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const first = new Agent({
      runId: 'inv',
      policy: policy(),
      tools: [dying.tool],
      store: storeOfA,
      clock,
      leaseMs: 60,
    });
    expect(await first.start('pay')).toBe('awaiting_approval');
    const id = first.state.pending?.id as string;
    void first.decide({ [id]: { approve: true, args: { cents: 300 } } }).catch(() => {});
    await until(() => dying.made.length === 1);
    cut.dead = true;
    const pay = payTool(() => ({ done: 'paid 300' }));
    const again = await Agent.load(store, 'inv', { policy: policy(), tools: [pay.tool], clock, leaseWaitMs: 5_000 });
    expect(await again.run()).toBe('done');
    expect(pay.asked.map((a) => [a.args, typeof a.fence])).toEqual([[{ cents: 300 } as JsonObject, 'number']]);
    expect(pay.asked[0]?.fence).toBeGreaterThan(1);
  });
});

describe('verify after a timeout', () => {
  async function timedOut(answer: (ctx: VerifyContext) => unknown) {
    const clock = new ManualClock(0);
    const pay = payTool(answer, { hang: true, timeoutMs: 1_000 });
    const agent = new Agent({ runId: 't', policy: policy(), tools: [pay.tool], clock });
    expect(await agent.start('pay')).toBe('awaiting_approval');
    const deciding = agent.decide(true, 'ok');
    await until(() => pay.made.length === 1 && clock.sleepers === 1);
    clock.advance(1_000);
    return { status: await deciding, agent, pay };
  }

  it('done: the result is recorded as verified', async () => {
    const { status, agent, pay } = await timedOut(() => ({ done: { paid: true } }));
    expect(status).toBe('done');
    expect(pay.asked).toHaveLength(1);
    expect(agent.state.history[2]).toMatchObject({ result: { paid: true }, verified: true });
  });

  it('not done: the timeout is the observation, nothing runs again', async () => {
    const { status, agent, pay } = await timedOut(() => ({ notDone: true }));
    expect(status).toBe('done');
    expect(pay.made).toEqual(['t:1']);
    expect(agent.state.history[2]).toMatchObject({ error: 'TimeoutError: tool pay timed out after 1000 ms' });
  });

  it('unknown: a human decides, the outcome marked unknown', async () => {
    const { status, agent, pay } = await timedOut(() => ({ unknown: true }));
    expect(status).toBe('awaiting_approval');
    expect(pay.made).toEqual(['t:1']);
    expect(agent.state.pending).toMatchObject({ id: idLike('t:1#2'), outcome: 'unknown' });
  });
});
