/**
 * What a policy call cost: its reported usage read (once, never throwing) and priced with the
 * agent's `price` option, here in the runtime, so that the machine only adds numbers. The usage
 * is hostile input (an adapter copies it from an API response a prompt injection can steer, and a
 * policy is anyone's code): a count that is not a whole number ≥ 0, a cost that is negative or not
 * finite, a model name no price names, a price function that throws or returns garbage — each
 * makes the cost *unknown*, never zero, and an unknown cost under a cost budget fails closed
 * (machines/budget.ts `spentAfter`).
 */
import { MAX_COST_USD, MICRO_USD } from '../../machines/budget.js';
import { describeError } from '../../machines/describe-error.js';
import { wellFormed } from '../../machines/strings.js';
import type { CallCost, TokenCount } from '../../machines/types.js';
import { isPlainObject, safeString } from '../json.js';
import type { ModelPrice, PricedUsage, Pricing } from '../price.js';

/** The most of a model name a reason repeats. */
const MAX_NAME = 200;

/** The usage of one call as the runtime read it, and what it cost. */
export interface ReadUsage {
  /** The token counts, when both were whole numbers ≥ 0; null otherwise (nothing is counted). */
  tokens: TokenCount | null;
  cost: CallCost;
  /** The model that answered, as the usage names it (`usage.model`, a string); null otherwise. */
  model: string | null;
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/** A value as a reason shows it: well-formed (the checkpoint must write it) and bounded. */
function shown(value: unknown): string {
  const s = typeof value === 'string' ? JSON.stringify(value) : safeString(value);
  return wellFormed(s.length > MAX_NAME ? `${s.slice(0, MAX_NAME)}…` : s);
}

/**
 * Dollars as a whole number of micro-dollars, rounded up (a call is never charged less than it
 * cost), after rounding to the nano-dollar so that float noise (`0.002 * 1e6 = 2000.0000000000002`)
 * does not add a micro-dollar. Capped at `MAX_COST_USD`.
 */
export function chargeOf(usd: number): number {
  const nano = Math.round(Math.min(usd, MAX_COST_USD) * 1e9);
  return Math.ceil(nano / 1e3) / MICRO_USD;
}

/** A dated snapshot name (`gpt-4.1-2025-04-14`, `claude-sonnet-4-20250514`) without its date. */
function undated(model: string): string | null {
  const m = /^(.+?)-(\d{4}-\d{2}-\d{2}|\d{8})$/.exec(model);
  return m ? (m[1] as string) : null;
}

/**
 * The price of `model` in a table: its own entry, else the entry of its name without a trailing
 * snapshot date (an API answers `gpt-4.1-2025-04-14` for `gpt-4.1`). Own keys only, so a model
 * named `constructor` finds no price.
 */
export function priceOf(table: ReadonlyMap<string, ModelPrice>, model: string): ModelPrice | undefined {
  const exact = table.get(model);
  if (exact) return exact;
  const base = undated(model);
  return base === null ? undefined : table.get(base);
}

function tableCost(table: ReadonlyMap<string, ModelPrice>, usage: PricedUsage): CallCost {
  if (usage.model === null) return { unknown: 'the usage names no model, and price is a table of models' };
  const p = priceOf(table, usage.model);
  if (!p) return { unknown: `no price for model ${shown(usage.model)}` };
  // Per million tokens: tokens × (dollars per million) is micro-dollars.
  const cached = usage.cachedInputTokens;
  const micro =
    (usage.inputTokens - cached) * p.inputUsdPerMTok +
    cached * (p.cachedInputUsdPerMTok ?? p.inputUsdPerMTok) +
    usage.outputTokens * p.outputUsdPerMTok;
  return { usd: chargeOf(micro / MICRO_USD) };
}

function functionCost(price: (usage: PricedUsage) => unknown, usage: PricedUsage): CallCost {
  // Called with the policy actor's own frozen copy: a function cannot change what is recorded.
  let usd: unknown;
  try {
    usd = price(Object.freeze({ ...usage }));
  } catch (error) {
    return { unknown: `the price function threw ${describeError(error)}` };
  }
  if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) {
    return { unknown: `the price function returned ${shown(usd)}, not a number of dollars ≥ 0` };
  }
  return { usd: chargeOf(usd) };
}

/** The fields of a usage, each read once (a getter cannot answer differently twice). */
function fieldsOf(raw: unknown): Record<string, unknown> | null {
  if (!isPlainObject(raw)) return null;
  const { inputTokens, outputTokens, cachedInputTokens, model, costUsd } = raw;
  return { inputTokens, outputTokens, cachedInputTokens, model, costUsd };
}

/** Why the usage cannot be priced, or null: the checks a table and a function both need. */
function unpriceable(u: Record<string, unknown>, tokens: TokenCount | null): string | null {
  if (tokens === null) return 'the usage has no valid token counts (inputTokens, outputTokens: whole numbers ≥ 0)';
  const { cachedInputTokens: cached, model } = u;
  if (cached !== undefined && (!isCount(cached) || cached > tokens.inputTokens)) {
    return 'usage.cachedInputTokens is not a whole number from 0 to inputTokens';
  }
  if (model !== undefined && typeof model !== 'string') return 'usage.model is not a string';
  return null;
}

/**
 * Reads a policy's reported usage and prices it. A reported `costUsd` is taken as it is (a
 * finite number ≥ 0); otherwise `price` prices the tokens. Never throws.
 */
export function readUsage(raw: unknown, price: Pricing | null): ReadUsage {
  let u: Record<string, unknown> | null;
  try {
    u = fieldsOf(raw);
  } catch (error) {
    return { tokens: null, cost: { unknown: `the usage could not be read: ${describeError(error)}` }, model: null };
  }
  if (u === null) return { tokens: null, cost: { unknown: 'the policy reported no usage' }, model: null };
  return { ...pricedUsage(u, price), model: typeof u.model === 'string' ? u.model : null };
}

/** The token counts and the cost of the fields of a usage. */
function pricedUsage(u: Record<string, unknown>, price: Pricing | null): Omit<ReadUsage, 'model'> {
  const { inputTokens, outputTokens, costUsd } = u;
  const tokens = isCount(inputTokens) && isCount(outputTokens) ? { inputTokens, outputTokens } : null;
  if (costUsd !== undefined) {
    const ok = typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd >= 0;
    return {
      tokens,
      cost: ok
        ? { usd: chargeOf(costUsd) }
        : { unknown: `usage.costUsd is ${shown(costUsd)}, not a number of dollars ≥ 0` },
    };
  }
  if (price === null) return { tokens, cost: { unknown: 'no price option, and the usage reports no costUsd' } };
  const why = unpriceable(u, tokens);
  if (why !== null || tokens === null) return { tokens, cost: { unknown: why ?? '' } };
  const usage: PricedUsage = {
    ...tokens,
    cachedInputTokens: (u.cachedInputTokens as number | undefined) ?? 0,
    model: (u.model as string | undefined) ?? null,
  };
  return { tokens, cost: typeof price === 'function' ? functionCost(price, usage) : tableCost(price, usage) };
}
