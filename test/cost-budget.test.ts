/**
 * The cost budget (issue 16): `maxCostUsd` with a `price` table or function, the usage a policy
 * reports priced in the runtime, the machine adding whole micro-dollars, checked before every
 * policy call; unknown costs fail closed; hostile usages and prices never open the budget.
 */
import { describe, expect, it } from 'vitest';
import { resumeOptionsOf } from '../src/define.js';
import {
  Agent,
  defineAgent,
  OptionsError,
  type Policy,
  type PolicyContext,
  type Price,
  RunStateError,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { submitRun, Worker } from '../src/worker/index.js';
import { gate, recorder, sequence, until } from './support/helpers.js';

const price: Price = {
  'gpt-4.1': { inputUsdPerMTok: 2, cachedInputUsdPerMTok: 0.5, outputUsdPerMTok: 8 },
  'gpt-4.1-mini': { inputUsdPerMTok: 0.4, outputUsdPerMTok: 1.6 },
};
/** 1,000 input and 100 output tokens of gpt-4.1: 0.002 + 0.0008 dollars. */
const used = { inputTokens: 1000, outputTokens: 100, model: 'gpt-4.1' };
const loop = (usage: unknown = used) => sequence({ tool: 't', usage });

/** A policy that records what each call was told it has left. */
function telling(usage: unknown) {
  const remaining: PolicyContext['remaining'][] = [];
  const policy: Policy = (_h, ctx) => {
    remaining.push(ctx.remaining);
    return { tool: 't', usage } as never;
  };
  return { policy, remaining };
}

describe('pricing', () => {
  it('prices input, cached input and output by the model the usage names, to the micro-dollar', async () => {
    const agent = new Agent({
      policy: sequence(
        { tool: 't', usage: used },
        // 4,000 of 10,000 input tokens read from the cache: 6,000 × 2 + 4,000 × 0.5 + 500 × 8 µ$.
        { tool: 't', usage: { inputTokens: 10_000, cachedInputTokens: 4000, outputTokens: 500, model: 'gpt-4.1' } },
        // A dated snapshot takes its name's price; no cached rate: cached tokens at the input rate.
        {
          final: 'ok',
          usage: { inputTokens: 1000, cachedInputTokens: 1000, outputTokens: 10, model: 'gpt-4.1-mini-2025-04-14' },
        },
      ),
      tools: [recorder('t').tool],
      price,
    });
    expect(await agent.start('go')).toBe('done');
    expect(agent.state.usage).toEqual({ inputTokens: 12_000, outputTokens: 610, costUsd: 0.0028 + 0.018 + 0.000416 });
    expect(agent.state.usage.costUsd).toBe(0.021216);
  });

  it('takes a price function of the checked usage, and a reported costUsd as it is', async () => {
    const seen: unknown[] = [];
    const agent = new Agent({
      policy: sequence(
        { tool: 't', usage: { inputTokens: 7, outputTokens: 3 } },
        { tool: 't', usage: { inputTokens: 7, outputTokens: 3, costUsd: 0.5 } },
        { final: 'ok', usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 1, model: 'x' } },
      ),
      tools: [recorder('t').tool],
      price: (u) => {
        seen.push(u);
        return (u.inputTokens + u.outputTokens) / 1000;
      },
    });
    expect(await agent.start('go')).toBe('done');
    expect(seen).toEqual([
      { inputTokens: 7, outputTokens: 3, cachedInputTokens: 0, model: null },
      { inputTokens: 1, outputTokens: 1, cachedInputTokens: 1, model: 'x' },
    ]);
    expect(agent.state.usage.costUsd).toBe(0.512);
  });

  it('rounds each call up to the micro-dollar and adds whole micro-dollars: 0.1 + 0.2 is 0.3', async () => {
    const agent = new Agent({
      policy: sequence(
        { tool: 't', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0.1 } },
        { tool: 't', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0.2 } },
        { tool: 't', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0.0000001 } },
      ),
      tools: [recorder('t').tool],
      maxCostUsd: 0.3,
      maxSteps: 3,
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    // Binary floating point says 0.1 + 0.2 = 0.30000000000000004; the budget says 0.3, reached.
    expect(agent.state).toMatchObject({ steps: 2, stoppedBy: 'cost', usage: { costUsd: 0.3 } });
    agent.extendBudget({ maxCostUsd: 1 });
    expect(await agent.run()).toBe('budget_exhausted');
    // A tenth of a micro-dollar is charged a whole one: many tiny calls are never free.
    expect(agent.state).toMatchObject({ steps: 3, stoppedBy: 'steps', usage: { costUsd: 0.300001 } });
  });
});

describe('the cost budget', () => {
  it('stops before the call that would start at or over the limit, reached exactly', async () => {
    const policy = loop({ inputTokens: 0, outputTokens: 0, costUsd: 0.25 });
    const t = recorder('t');
    const agent = new Agent({ policy, tools: [t.tool], maxCostUsd: 1 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(4);
    expect(t.calls).toHaveLength(4);
    expect(agent.state).toMatchObject({ steps: 4, stoppedBy: 'cost', usage: { costUsd: 1 }, error: null });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(4);
  });

  it('a call that costs more than was left is charged what was left (the budget is never passed), the run says so, and the next is not made', async () => {
    const policy = loop({ inputTokens: 0, outputTokens: 0, costUsd: 0.75 });
    const agent = new Agent({ policy, tools: [recorder('t').tool], maxCostUsd: 1 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(2);
    expect(agent.state.usage.costUsd).toBe(1);
    expect(agent.state.error).toBe('the call cost $0.75, more than the $0.25 it could spend: charged $0.25');
  });

  it('tells the policy what it has left (ctx.remaining.costUsd), null without a cost budget', async () => {
    const limited = telling({ inputTokens: 0, outputTokens: 0, costUsd: 0.1 });
    await new Agent({ policy: limited.policy, tools: [recorder('t').tool], maxCostUsd: 0.3 }).start('go');
    expect(limited.remaining.map((r) => r.costUsd)).toEqual([0.3, 0.2, 0.1]);
    const free = telling({ inputTokens: 0, outputTokens: 0, costUsd: 0.1 });
    await new Agent({ policy: free.policy, tools: [recorder('t').tool], maxSteps: 2 }).start('go');
    expect(free.remaining.map((r) => r.costUsd)).toEqual([null, null]);
  });

  it('orders the budgets steps, tokens, cost, time', async () => {
    const usage = { inputTokens: 10, outputTokens: 0, costUsd: 1 };
    const both = new Agent({ policy: loop(usage), tools: [recorder('t').tool], maxTokens: 10, maxCostUsd: 1 });
    await both.start('go');
    expect(both.state.stoppedBy).toBe('tokens');
    both.extendBudget({ maxTokens: 100 });
    expect(both.state.stoppedBy).toBe('cost');
  });

  it('extendBudget({ maxCostUsd }) works while idle, running, awaiting approval and stopped', async () => {
    const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0.5 };
    const idle = new Agent({ policy: loop(usage), tools: [recorder('t').tool], maxCostUsd: 5 });
    expect(idle.extendBudget({ maxCostUsd: 1 })).toMatchObject({ maxCostUsd: 1 });
    expect(await idle.start('go')).toBe('budget_exhausted');
    expect(idle.state).toMatchObject({ steps: 2, stoppedBy: 'cost' });
    expect(idle.extendBudget({ maxCostUsd: 1.5 })).toEqual({
      maxSteps: 8,
      maxTokens: null,
      maxActiveMs: null,
      maxCostUsd: 1.5,
    });
    expect(await idle.run()).toBe('budget_exhausted');
    expect(idle.state.steps).toBe(3);
    // Lifting the budget: null is no limit.
    idle.extendBudget({ maxCostUsd: null });
    expect(await idle.run()).toBe('budget_exhausted');
    expect(idle.state).toMatchObject({ steps: 8, stoppedBy: 'steps' });

    const held = gate<unknown>();
    let calls = 0;
    const slow: Policy = async () => {
      calls++;
      if (calls === 1) await held.promise;
      return { tool: 't', usage } as never;
    };
    const running = new Agent({ policy: slow, tools: [recorder('t').tool], maxCostUsd: 5 });
    const done = running.start('go');
    await until(() => calls === 1);
    expect(running.status).toBe('running');
    running.extendBudget({ maxCostUsd: 0.5 });
    held.resolve(undefined);
    expect(await done).toBe('budget_exhausted');
    expect(running.state).toMatchObject({ steps: 1, stoppedBy: 'cost' });

    const t = recorder('t', { sideEffect: true });
    const waiting = new Agent({ policy: loop(usage), tools: [t.tool], maxCostUsd: 5 });
    expect(await waiting.start('go')).toBe('awaiting_approval');
    waiting.extendBudget({ maxCostUsd: 0.5 });
    expect(await waiting.decide(true)).toBe('budget_exhausted');
    expect(waiting.state).toMatchObject({ steps: 1, stoppedBy: 'cost' });
    expect(t.calls).toHaveLength(1);
  });

  it('extendBudget refuses a bad maxCostUsd with OptionsError and changes nothing', async () => {
    const agent = new Agent({ policy: loop(), tools: [recorder('t').tool], maxCostUsd: 2, price });
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e10, '1', 0.0000001, {}]) {
      expect(() => agent.extendBudget({ maxCostUsd: bad as never }), String(bad)).toThrow(OptionsError);
    }
    expect(() => agent.extendBudget({ maxCostUsd: -1 })).toThrow(
      'extendBudget: maxCostUsd must be a number of US dollars from 0.000001 to 1000000000, or null for no limit, got -1',
    );
    expect(agent.state.limits.maxCostUsd).toBe(2);
    await agent.start('go');
    await agent.cancel();
    expect(() => agent.extendBudget({ maxCostUsd: 3 })).toThrow(RunStateError);
  });

  it('carries the spending across checkpoint and resume; a lower maxCostUsd at resume stops sooner', async () => {
    const t = recorder('t', { sideEffect: true });
    const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0.5 };
    const agent = new Agent({ policy: loop(usage), tools: [t.tool], maxCostUsd: 10 });
    await agent.start('go');
    await agent.decide(true);
    expect(agent.state.usage.costUsd).toBe(1);
    const blob = agent.checkpoint();

    const policy = loop(usage);
    const lowered = Agent.resume(blob, { policy, tools: [t.tool], maxCostUsd: 1 });
    expect(lowered.state.limits.maxCostUsd).toBe(1);
    expect(await lowered.decide(true)).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(0);
    expect(lowered.state).toMatchObject({ stoppedBy: 'cost', usage: { costUsd: 1 } });

    const kept = Agent.resume(blob, { policy, tools: [t.tool] });
    expect(kept.state.limits.maxCostUsd).toBe(10);
    expect(await kept.decide(true)).toBe('awaiting_approval');
    expect(kept.state.usage.costUsd).toBe(1.5);
  });

  it('a resume mid policy call with maxCostUsd already spent stops instead of asking again', async () => {
    const held = gate<unknown>();
    let calls = 0;
    const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0.5 };
    const slow: Policy = async () => {
      calls++;
      if (calls === 2) await held.promise;
      return { tool: 't', usage } as never;
    };
    const agent = new Agent({ policy: slow, tools: [recorder('t').tool], maxCostUsd: 10 });
    void agent.start('go');
    await until(() => calls === 2);
    const blob = agent.checkpoint();
    const policy = loop(usage);
    const resumed = Agent.resume(blob, { policy, tools: [recorder('t').tool], maxCostUsd: 0.5 });
    expect(resumed.status).toBe('budget_exhausted');
    expect(await resumed.run()).toBe('budget_exhausted');
    expect(policy.calls).toHaveLength(0);
    expect(resumed.state.stoppedBy).toBe('cost');
    held.resolve(undefined);
  });

  it('Agent.load takes maxCostUsd (and needs the price again: it is not persisted)', async () => {
    const store = new MemoryStore();
    const t = recorder('t', { sideEffect: true });
    const agent = new Agent({ runId: 'c1', store, policy: loop(), tools: [t.tool], maxCostUsd: 1, price });
    expect(await agent.start('go')).toBe('awaiting_approval');
    const loaded = await Agent.load(store, 'c1', { policy: loop(), tools: [t.tool], price, maxCostUsd: 0.0056 });
    expect(loaded.state.limits.maxCostUsd).toBe(0.0056);
    expect(await loaded.decide(true)).toBe('awaiting_approval');
    expect(loaded.state.usage.costUsd).toBe(0.0056);
    const again = await Agent.load(store, 'c1', { policy: loop(), tools: [t.tool], price });
    expect(await again.decide(true)).toBe('budget_exhausted');
    expect(again.state).toMatchObject({ steps: 2, stoppedBy: 'cost' });
  });
});

describe('an unknown cost fails closed', () => {
  const cases: [string, { usage?: unknown; price?: Price }, string][] = [
    ['a model the table does not name', { usage: { ...used, model: 'o9' } }, 'no price for model "o9"'],
    ['a model named like an Object.prototype key', { usage: { ...used, model: 'constructor' } }, 'no price for model'],
    ['no model with a table', { usage: { inputTokens: 1, outputTokens: 1 } }, 'names no model'],
    ['no usage at all', {}, 'the policy reported no usage'],
    ['a usage that is not an object', { usage: 'lots' }, 'the policy reported no usage'],
    ['negative tokens', { usage: { ...used, inputTokens: -1000 } }, 'no valid token counts'],
    ['NaN tokens', { usage: { ...used, outputTokens: Number.NaN } }, 'no valid token counts'],
    ['tokens past 2^53', { usage: { ...used, inputTokens: 2 ** 60 } }, 'no valid token counts'],
    ['more cached than input tokens', { usage: { ...used, cachedInputTokens: 5000 } }, 'cachedInputTokens'],
    ['a model that is not a string', { usage: { ...used, model: 41 } }, 'usage.model is not a string'],
    ['a negative costUsd', { usage: { inputTokens: 0, outputTokens: 0, costUsd: -5 } }, 'usage.costUsd is -5'],
    ['a NaN costUsd', { usage: { inputTokens: 0, outputTokens: 0, costUsd: Number.NaN } }, 'usage.costUsd is NaN'],
    [
      'an infinite costUsd',
      { usage: { inputTokens: 0, outputTokens: 0, costUsd: Number.POSITIVE_INFINITY } },
      'usage.costUsd is Infinity',
    ],
    [
      'a costUsd that is a string',
      { usage: { inputTokens: 0, outputTokens: 0, costUsd: '0' } },
      'usage.costUsd is "0"',
    ],
    ['no price and no costUsd', { usage: used, price: undefined as never }, 'no price option'],
    [
      'a price function that throws',
      {
        usage: used,
        price: () => {
          throw new RangeError('rate card down');
        },
      },
      'the price function threw RangeError: rate card down',
    ],
    ['a price function returning NaN', { usage: used, price: () => Number.NaN }, 'returned NaN'],
    ['a price function returning -1', { usage: used, price: () => -1 }, 'returned -1'],
    ['a price function returning a string', { usage: used, price: (() => '0.1') as never }, 'returned "0.1"'],
    ['an async price function', { usage: used, price: (async () => 0.1) as never }, 'returned [object Promise]'],
  ];

  for (const [name, given, reason] of cases) {
    it(`${name}: the call counts as the rest of the budget, the run stops with the reason`, async () => {
      const policy = 'usage' in given ? loop(given.usage) : sequence({ tool: 't' });
      const t = recorder('t');
      const withPrice = 'price' in given ? (given.price === undefined ? {} : { price: given.price }) : { price };
      const agent = new Agent({ policy, tools: [t.tool], maxCostUsd: 2, ...withPrice });
      expect(await agent.start('go')).toBe('budget_exhausted');
      expect(policy.calls).toHaveLength(1);
      // The call's own step still ran: budgets are checked before policy calls, not after.
      expect(t.calls).toHaveLength(1);
      expect(agent.state).toMatchObject({ steps: 1, stoppedBy: 'cost', usage: { costUsd: 2 } });
      expect(agent.state.error).toMatch(/^cost unknown: /);
      expect(agent.state.error).toContain(reason);
      // The checkpoint stays valid and loads.
      expect(Agent.resume(agent.checkpoint(), { policy, tools: [t.tool] }).state).toEqual(agent.state);
      // A human who raises the budget lets one more call be made (and its cost is unknown again).
      agent.extendBudget({ maxCostUsd: 3 });
      expect(await agent.run()).toBe('budget_exhausted');
      expect(policy.calls).toHaveLength(2);
      expect(agent.state.usage.costUsd).toBe(3);
    });
  }

  it('a usage whose getter throws is unknown, not a crash', async () => {
    const usage = {
      inputTokens: 1,
      outputTokens: 1,
      get model(): string {
        throw new Error('boom');
      },
    };
    const agent = new Agent({ policy: loop(usage), tools: [recorder('t').tool], maxCostUsd: 1, price });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.error).toBe('cost unknown: the usage could not be read: Error: boom');
  });

  it('a reason is kept well-formed and short, whatever the model was called', async () => {
    const model = `\uD800${'x'.repeat(10_000)}`;
    const agent = new Agent({ policy: loop({ ...used, model }), tools: [recorder('t').tool], maxCostUsd: 1, price });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.error?.length).toBeLessThan(300);
    // Quoted as JSON: the lone surrogate is written as an escape, which the checkpoint can hold.
    expect(agent.state.error).toContain('"\\ud800xxx');
    expect(() => Agent.resume(agent.checkpoint(), { policy: loop(), tools: [recorder('t').tool] })).not.toThrow();
  });

  it('a huge cost counts at most 10^9 dollars: still past any budget, and the checkpoint can write it', async () => {
    const policy = loop({ inputTokens: 0, outputTokens: 0, costUsd: 1e300 });
    const agent = new Agent({ policy, tools: [recorder('t').tool], maxSteps: 20 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'steps', usage: { costUsd: 1e9 } });
    expect(Agent.resume(agent.checkpoint(), { policy, tools: [recorder('t').tool] }).state.usage.costUsd).toBe(1e9);
    const capped = new Agent({ policy, tools: [recorder('t').tool], maxCostUsd: 1e9 });
    expect(await capped.start('go')).toBe('budget_exhausted');
    expect(capped.state).toMatchObject({ steps: 1, stoppedBy: 'cost' });
  });

  it('without a cost budget, an unknown cost adds nothing and the run goes on', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 't', usage: { ...used, model: 'o9' } }, { final: 'ok' }),
      tools: [recorder('t').tool],
      price,
    });
    expect(await agent.start('go')).toBe('done');
    // The final answer reported no usage: its tokens are estimated (and marked), its cost unknown.
    const { usage, error } = agent.state;
    expect([usage.costUsd, error]).toEqual([0, null]);
    expect(usage.inputTokens + usage.outputTokens - (usage.estimatedTokens ?? 0)).toBe(1100);
    expect(usage.estimatedTokens).toBeGreaterThan(0);
  });
});

describe('options', () => {
  const base = { policy: loop(), tools: [recorder('t').tool] };

  it('refuses a bad maxCostUsd or price with OptionsError naming the value', () => {
    expect(() => new Agent({ ...base, maxCostUsd: 0 })).toThrow(
      'new Agent: maxCostUsd must be a number of US dollars from 0.000001 to 1000000000, or null for no limit, got 0',
    );
    expect(() => new Agent({ ...base, price: { 'gpt-4.1': { inputUsdPerMTok: -2, outputUsdPerMTok: 8 } } })).toThrow(
      'new Agent: price["gpt-4.1"].inputUsdPerMTok must be a number of US dollars per million tokens ≥ 0, got -2',
    );
    expect(
      () =>
        new Agent({ ...base, price: { m: { inputUsdPerMTok: 1, outputUsdPerMTok: 1, cachedUsdPerMTok: 1 } as never } }),
    ).toThrow(/new Agent: price\["m"\]/);
    expect(() => new Agent({ ...base, price: { m: { inputUsdPerMTok: 1 } } as never })).toThrow(
      /price\["m"\]\.outputUsdPerMTok must be/,
    );
    // A model may be called `__proto__` (JSON.parse makes such a key); its price is checked too.
    const proto = JSON.parse(
      '{"m":{"inputUsdPerMTok":1,"outputUsdPerMTok":1},"__proto__":{"inputUsdPerMTok":-1e9,"outputUsdPerMTok":0}}',
    );
    expect(() => new Agent({ ...base, price: proto })).toThrow(
      'new Agent: price["__proto__"].inputUsdPerMTok must be a number of US dollars per million tokens ≥ 0, got -1000000000',
    );
    for (const bad of [{}, 5, 'gpt-4.1', [], null]) {
      expect(() => new Agent({ ...base, price: bad as never }), JSON.stringify(bad)).toThrow(
        /new Agent: price must be a table of prices by model name/,
      );
    }
    expect(() => Agent.resume('{}', { ...base, maxCostUsd: -1 })).toThrow(OptionsError);
  });

  it('accepts maxCostUsd without a price: a policy may report costUsd itself', async () => {
    const agent = new Agent({
      ...base,
      policy: loop({ inputTokens: 0, outputTokens: 0, costUsd: 0.4 }),
      maxCostUsd: 1,
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    // The third call reported $0.4 with $0.2 left: charged $0.2, never past the budget.
    expect(agent.state).toMatchObject({
      steps: 3,
      usage: { costUsd: 1 },
      error: 'the call cost $0.4, more than the $0.2 it could spend: charged $0.2',
    });
  });

  it('a price table changed after the agent was made does not change what calls cost', async () => {
    const table = { 'gpt-4.1': { inputUsdPerMTok: 2, outputUsdPerMTok: 8 } };
    const agent = new Agent({ ...base, policy: sequence({ final: 1, usage: used }), price: table });
    table['gpt-4.1'].inputUsdPerMTok = 1000;
    await agent.start('go');
    expect(agent.state.usage.costUsd).toBe(0.0028);
  });

  it('defineAgent takes maxCostUsd and price; resumeOptionsOf passes the price, never the limit', () => {
    const definition = defineAgent({ name: 'a', ...base, maxCostUsd: 2, price });
    const resume = resumeOptionsOf(definition);
    expect(resume.price).toBe(price);
    expect('maxCostUsd' in resume).toBe(false);
    expect(() => defineAgent({ name: 'a', ...base, maxCostUsd: -2 })).toThrow(OptionsError);
  });

  it("a worker prices the runs it takes up with the definition's price, under the limit submitted", async () => {
    const store = new MemoryStore();
    const policy = loop({ inputTokens: 10_000, outputTokens: 0, model: 'gpt-4.1' }); // $0.02 a call
    const def = defineAgent({ name: 'spender', policy, tools: [recorder('t').tool], price, maxCostUsd: 1 });
    await submitRun(store, { agent: def, goal: 'x', runId: 'w1', limits: { maxCostUsd: 0.05 } });
    await new Worker({ store, agents: [def] }).drain();
    const agent = await Agent.load(store, 'w1', resumeOptionsOf(def));
    expect(agent.state).toMatchObject({
      status: 'budget_exhausted',
      stoppedBy: 'cost',
      steps: 3,
      usage: { costUsd: 0.05 }, // the third call's $0.02 charged at the $0.01 left
    });
    expect(agent.state.limits.maxCostUsd).toBe(0.05);
    await expect(submitRun(store, { agent: def, goal: 'x', limits: { maxCostUsd: -1 } })).rejects.toThrow(OptionsError);
  });
});

describe('pricing at its edges', () => {
  /** The run's state after one policy call reporting `usage`, under a budget of one dollar. */
  async function stateAfter(usage: unknown, pricing: Price | ((u: unknown) => number) = price) {
    const agent = new Agent({
      policy: sequence({ final: 'ok', usage }),
      tools: [],
      maxCostUsd: 1,
      price: pricing as Price,
    });
    await agent.start('go');
    return agent.state;
  }

  it('a snapshot date is only a dated suffix: other suffixes and short numbers find no price', async () => {
    const priced = { claude: { inputUsdPerMTok: 1, outputUsdPerMTok: 1 }, ...price };
    for (const model of ['gpt-4.1-2025-04-14x', 'gpt-4.1-2025-04-14-2', 'claude-3', 'claude-abcdefgh']) {
      const state = await stateAfter({ inputTokens: 1, outputTokens: 1, model }, priced);
      expect(state.error).toBe(`cost unknown: no price for model ${JSON.stringify(model)}`);
    }
    expect(
      (await stateAfter({ inputTokens: 1000, outputTokens: 0, model: 'claude-20250514' }, priced)).usage.costUsd,
    ).toBe(0.001);
  });

  it('free is a known cost: a price function that says 0 and a reported costUsd of 0 spend nothing', async () => {
    for (const state of [
      await stateAfter({ inputTokens: 5, outputTokens: 5, model: 'local' }, () => 0),
      await stateAfter({ inputTokens: 5, outputTokens: 5, costUsd: 0 }),
    ]) {
      expect(state.error).toBeNull();
      expect(state.usage.costUsd).toBe(0);
    }
  });

  it('an unknown model is named whole up to 200 characters, then cut', async () => {
    const short = 'm'.repeat(198); // 200 characters with its quotes
    expect((await stateAfter({ inputTokens: 1, outputTokens: 1, model: short })).error).toBe(
      `cost unknown: no price for model "${short}"`,
    );
    const long = 'm'.repeat(199);
    expect((await stateAfter({ inputTokens: 1, outputTokens: 1, model: long })).error).toBe(
      `cost unknown: no price for model "${long}…`,
    );
  });
});
