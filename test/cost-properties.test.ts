/**
 * Property (the cost budget, reserve then settle): for random sequences of reported usages —
 * hostile ones included — and random prices, no policy call starts once the spent cost reaches
 * `maxCostUsd` or when its estimated request does not fit what is left, the total **never**
 * exceeds `maxCostUsd` (a call reporting more than was left is charged what was left), and the
 * run counts exactly what an independent, written-out pricing says (whole micro-dollars, each
 * call rounded up, at most what was left; an unknown cost spends what was left).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, estimateTokens, type Policy, type PriceTable } from '../src/index.js';
import { recorder } from './support/helpers.js';

const SEED = 20261203;
const MODELS = ['gpt-a', 'gpt-b'] as const;

/** Rates in cents per million tokens, so the oracle prices in integers: tokens × cents / 100 = µ$. */
interface Rates {
  input: number;
  output: number;
  cached: number | null;
}

type Reported =
  | { kind: 'cost'; micro: number }
  | { kind: 'hostileCost'; value: unknown }
  | { kind: 'tokens'; input: number; cached: number | null; output: number; model: string | null }
  | { kind: 'hostileTokens'; input: unknown; output: unknown; model: string }
  | { kind: 'none' };

const rates: fc.Arbitrary<Rates> = fc.record({
  input: fc.integer({ min: 0, max: 5000 }),
  output: fc.integer({ min: 0, max: 5000 }),
  cached: fc.option(fc.integer({ min: 0, max: 5000 }), { nil: null }),
});

const reported: fc.Arbitrary<Reported> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('cost' as const), micro: fc.integer({ min: 0, max: 400_000 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('hostileCost' as const),
      value: fc.constantFrom(-1, -0.000001, Number.NaN, Number.POSITIVE_INFINITY, 1e300, '0.1', null, {}),
    }),
  },
  {
    weight: 6,
    arbitrary: fc
      .record({
        input: fc.integer({ min: 0, max: 200_000 }),
        cachedPart: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
        output: fc.integer({ min: 0, max: 20_000 }),
        model: fc.option(fc.constantFrom(...MODELS, 'gpt-a-2025-01-01', 'unpriced', 'constructor'), { nil: null }),
      })
      .map(({ input, cachedPart, output, model }) => ({
        kind: 'tokens' as const,
        input,
        cached: cachedPart === null ? null : Math.floor(input * cachedPart),
        output,
        model,
      })),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('hostileTokens' as const),
      input: fc.constantFrom(-5, 1.5, Number.NaN, 2 ** 60, '10'),
      output: fc.integer({ min: 0, max: 10 }),
      model: fc.constantFrom(...MODELS),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
);

function usageOf(r: Reported): unknown {
  switch (r.kind) {
    case 'cost':
      return { inputTokens: 1, outputTokens: 1, costUsd: r.micro / 1e6 };
    case 'hostileCost':
      return { inputTokens: 1, outputTokens: 1, costUsd: r.value };
    case 'tokens':
      return {
        inputTokens: r.input,
        outputTokens: r.output,
        ...(r.cached === null ? {} : { cachedInputTokens: r.cached }),
        ...(r.model === null ? {} : { model: r.model }),
      };
    case 'hostileTokens':
      return { inputTokens: r.input, outputTokens: r.output, model: r.model };
    case 'none':
      return undefined;
  }
}

/** The oracle: a call's cost in µ$, or null when it cannot be known. Written out, not the runtime's code. */
function microOf(r: Reported, table: Record<string, Rates>): number | null {
  if (r.kind === 'cost') return r.micro;
  if (r.kind === 'hostileCost') return r.value === 1e300 ? 1e15 : null;
  if (r.kind !== 'tokens' || r.model === null) return null;
  const model = r.model === 'gpt-a-2025-01-01' ? 'gpt-a' : r.model;
  const p = Object.hasOwn(table, model) ? table[model] : undefined;
  if (!p) return null;
  const cached = r.cached ?? 0;
  const cents = (r.input - cached) * p.input + cached * (p.cached ?? p.input) + r.output * p.output;
  return Math.ceil(cents / 100);
}

describe('the cost budget, for random usages and prices', () => {
  it(`never starts a call once spent or that cannot fit; never overshoots; counts what the oracle says (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.record({ 'gpt-a': rates, 'gpt-b': rates }),
        fc.array(reported, { minLength: 1, maxLength: 25 }),
        async (maxMicro, table, script) => {
          const startedWith: (number | null | undefined)[] = [];
          const policy: Policy = (_h, ctx) => {
            startedWith.push(ctx.remaining.costUsd);
            const r = script[Math.min(startedWith.length - 1, script.length - 1)] as Reported;
            const usage = usageOf(r);
            return (usage === undefined ? { tool: 't' } : { tool: 't', usage }) as never;
          };
          const price: PriceTable = Object.fromEntries(
            Object.entries(table).map(([m, p]) => [
              m,
              {
                inputUsdPerMTok: p.input / 100,
                outputUsdPerMTok: p.output / 100,
                ...(p.cached === null ? {} : { cachedInputUsdPerMTok: p.cached / 100 }),
              },
            ]),
          );
          const agent = new Agent({
            policy,
            tools: [recorder('t').tool],
            maxSteps: script.length,
            maxCostUsd: maxMicro / 1e6,
            price,
          });
          await agent.start('go');

          // The oracle, over the calls that were made: each charged its cost, at most what was
          // left; an unknown cost spends the rest.
          const calls = startedWith.length;
          let spent = 0;
          for (const r of script.slice(0, calls)) {
            const micro = microOf(r, table);
            spent += micro === null ? maxMicro - spent : Math.min(micro, maxMicro - spent);
          }
          // No policy call started with the budget spent: each was told it had something left.
          for (const left of startedWith) expect(left).toBeGreaterThan(0);
          const total = Math.round(agent.state.usage.costUsd * 1e6);
          expect(total).toBe(spent);
          expect(total).toBeLessThanOrEqual(maxMicro);
          if (calls < script.length) {
            expect(agent.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'cost' });
            if (total < maxMicro) {
              // Stopped with money left: the next request, priced at the dearest model (the policy
              // names none in advance), did not leave room for one output token.
              const dearest = (k: 'input' | 'output') => Math.max(table['gpt-a'][k], table['gpt-b'][k]) / 100;
              const request = estimateTokens(agent.view());
              expect(maxMicro - total - request * dearest('input')).toBeLessThan(dearest('output') + 1e-6);
              expect(agent.state.error).toMatch(/^the next call does not fit the cost budget/);
            }
          }
          // The run always loads back: the spending is a number the checkpoint can hold.
          expect(Agent.resume(agent.checkpoint(), { policy, tools: [recorder('t').tool] }).state.usage).toEqual(
            agent.state.usage,
          );
        },
      ),
      { seed: SEED, numRuns: 150 },
    );
  });
});
