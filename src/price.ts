/**
 * The `price` option: what a policy call costs, in US dollars, from the usage it reports. A table
 * per model or a function; either is turned once into the `Pricing` the policy actor uses
 * (runtime/cost.ts prices each call).
 */

/** One model's price in US dollars per million tokens (as providers publish them). */
export interface ModelPrice {
  /** Input tokens that were not read from the prompt cache. */
  inputUsdPerMTok: number;
  outputUsdPerMTok: number;
  /** Input tokens read from the prompt cache (a part of `inputTokens`). @default inputUsdPerMTok */
  cachedInputUsdPerMTok?: number;
}

/**
 * Prices by model name, as the API names the model in its response (the adapters report it as
 * `usage.model`). A dated snapshot (`gpt-4.1-2025-04-14`, `claude-sonnet-4-20250514`) without an
 * entry of its own takes the entry of its name without the date (`gpt-4.1`).
 */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** A policy call's usage, as a price function is given it (checked: whole numbers ≥ 0). */
export interface PricedUsage {
  inputTokens: number;
  outputTokens: number;
  /** The part of `inputTokens` read from the cache; 0 when the usage did not say. */
  cachedInputTokens: number;
  /** The model the usage names; null when it names none. */
  model: string | null;
}

/**
 * A price function: the dollars a call cost, a finite number ≥ 0. Synchronous; a function that
 * throws or returns anything else makes that call's cost unknown (which stops a run with a cost
 * budget: see docs/long-runs.md).
 */
export type PriceFunction = (usage: PricedUsage) => number;

/** The `price` option: a table per model, or a function of the usage. */
export type Price = PriceTable | PriceFunction;

/** The price as the runtime uses it: a table by own model names only, or the function. */
export type Pricing = ReadonlyMap<string, ModelPrice> | PriceFunction;

/** The checked `price` option as the runtime uses it; null when none was given. */
export function pricingOf(price: Price | undefined): Pricing | null {
  if (price === undefined) return null;
  if (typeof price === 'function') return price;
  // Copied: a table changed after the agent was made does not change what its calls cost.
  return new Map(Object.entries(price).map(([model, p]) => [model, { ...p }]));
}
