/**
 * Property (reserve, then settle): for random budgets — a run's own, and a group's shared by runs
 * working at once — and adversarial usage reports (missing, unreadable, hostile, far over what a
 * call could spend), **no budget is ever overshot**: not the run's tokens or dollars, not the
 * group's. Every call is charged (never 0: missing or unreadable usage at the estimate), the group
 * is charged exactly what its runs were, and a run stops only when its next call cannot fit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, type Policy } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { recorder } from './support/helpers.js';

const SEED = 20261206;

/** What a policy reports with its action. */
const usage = fc.oneof(
  { weight: 4, arbitrary: fc.record({ inputTokens: fc.nat(400), outputTokens: fc.nat(400) }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.record({
      inputTokens: fc.constantFrom(-1, 1.5, Number.NaN, 1e300, 'lots', null, 2 ** 60),
      outputTokens: fc.nat(10),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ inputTokens: fc.constant(Number.MAX_SAFE_INTEGER), outputTokens: fc.nat(10) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      inputTokens: fc.nat(200),
      outputTokens: fc.nat(200),
      costUsd: fc.oneof(
        fc.integer({ min: 0, max: 50_000 }).map((m) => m / 1e6),
        fc.constantFrom(-1, 1e12, Number.NaN),
      ),
    }),
  },
);

/** A policy that calls `t` until stopped, reporting the usages of its script in turn, after a varied pause. */
function scripted(reports: unknown[], pause: number): Policy & { calls: number } {
  const policy = (async () => {
    const report = reports[policy.calls % reports.length];
    policy.calls++;
    await new Promise((resolve) => setTimeout(resolve, (policy.calls * pause) % 3));
    return report === undefined ? { tool: 't' } : { tool: 't', usage: report };
  }) as unknown as Policy & { calls: number };
  policy.calls = 0;
  return policy;
}

const tokensOf = (a: Agent) => a.state.usage.inputTokens + a.state.usage.outputTokens;
const micro = (usd: number) => Math.round(usd * 1e6);

describe('budgets are never overshot', () => {
  it(`a run's own token and cost budgets, whatever its policy reports (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.integer({ min: 1, max: 3_000 }), { nil: null }),
        fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: null }),
        fc.array(usage, { minLength: 1, maxLength: 8 }),
        async (maxTokens, maxMicro, reports) => {
          const policy = scripted(reports, 0);
          const agent = new Agent({
            policy,
            tools: [recorder('t').tool],
            maxSteps: 30,
            maxTokens,
            maxCostUsd: maxMicro === null ? null : maxMicro / 1e6,
          });
          const status = await agent.start('go');
          if (maxTokens !== null) expect(tokensOf(agent)).toBeLessThanOrEqual(maxTokens);
          if (maxMicro !== null) expect(micro(agent.state.usage.costUsd)).toBeLessThanOrEqual(maxMicro);
          // Every call was charged something: a call cannot be free by reporting nothing.
          if (policy.calls > 0) expect(tokensOf(agent)).toBeGreaterThan(0);
          if (status === 'budget_exhausted') expect(['steps', 'tokens', 'cost']).toContain(agent.state.stoppedBy);
          else expect(status).toBe('budget_exhausted'); // the policy never answers: only a budget ends it
        },
      ),
      { seed: SEED, numRuns: 120 },
    );
  });

  it(`a group's budget, shared by runs working at once (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }),
        fc.option(fc.integer({ min: 50, max: 5_000 }), { nil: null }),
        fc.option(fc.integer({ min: 10, max: 200_000 }), { nil: null }),
        fc.boolean(),
        fc.array(fc.array(usage, { minLength: 1, maxLength: 5 }), { minLength: 5, maxLength: 5 }),
        async (runs, maxTokens, maxMicro, priced, scripts) => {
          fc.pre(maxTokens !== null || maxMicro !== null);
          const store = new MemoryStore();
          await store.setGroupBudget('g', {
            maxTokens,
            maxCostUsd: maxMicro === null ? null : maxMicro / 1e6,
          });
          // With a price, calls hold what they may cost and run side by side; without, each holds
          // all the group has left, and they take turns.
          const price = priced ? { price: { m: { inputUsdPerMTok: 1, outputUsdPerMTok: 4 } } } : {};
          const agents = Array.from(
            { length: runs },
            (_, i) =>
              new Agent({
                store,
                runId: `r${i}`,
                budgetGroup: 'g',
                policy: scripted(scripts[i] ?? [undefined], i + 1),
                tools: [recorder('t').tool],
                maxSteps: 12,
                ...price,
              }),
          );
          await Promise.all(agents.map((a) => a.start('go')));
          const spend = await store.groupSpend('g');
          if (maxTokens !== null) expect(spend.tokens).toBeLessThanOrEqual(maxTokens);
          if (maxMicro !== null) expect(micro(spend.costUsd)).toBeLessThanOrEqual(maxMicro);
          // The group was charged exactly what its runs were; a cost that could not be known fills
          // the group's cost limit instead (fail closed).
          expect(spend.tokens).toBe(
            Math.min(
              agents.reduce((sum, a) => sum + tokensOf(a), 0),
              Number.MAX_SAFE_INTEGER,
            ),
          );
          // (A window counts up to 2^53−1 tokens and 10^9 dollars.)
          const byRuns = Math.min(
            agents.reduce((sum, a) => sum + micro(a.state.usage.costUsd), 0),
            1e15,
          );
          if (micro(spend.costUsd) !== byRuns) expect(micro(spend.costUsd)).toBe(maxMicro);
          for (const a of agents) {
            expect(a.status).toBe('budget_exhausted');
            expect(['steps', 'group']).toContain(a.state.stoppedBy);
          }
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  });
});
