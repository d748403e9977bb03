/**
 * Reserve, then settle: before a model call (a policy call, or a summary) the most it may spend
 * is worked out and held against the run's budgets and its group's, and after it the run and the
 * group are charged what it spent — never more than was held, so no budget is ever overshot.
 *
 * - The call's input is estimated (`estimateTokens` of what is sent, plus what the adapter adds:
 *   instructions, tool declarations); the output the model may produce is capped at what is left
 *   after it (`ctx.maxOutputTokens`, which the adapters pass as `max_tokens`), and in dollars at
 *   what is left when the model's price is known. A call whose estimated input (and the fewest
 *   output tokens its API accepts) does not fit is not made: the run stops, `stoppedBy` naming the
 *   budget.
 * - A run in a group holds its call's most (estimated input + output cap, priced) in the store,
 *   atomically against the group's limits and the other runs' holds (store/groups.ts); a call
 *   that cannot be priced before it is made holds all the group has left.
 * - Usage that is missing is estimated (the same estimator, over the request and the answer),
 *   and marked so; usage that cannot be read is charged at that estimate too, never 0; usage
 *   over what the call held is charged at what it held (an adapter that ignored the cap, or a
 *   hostile report), and the run says so.
 */
import { MICRO_USD, microUsd } from '../../machines/budget.js';
import type { CallCost, Decision, HistoryEntry, TokenCount } from '../../machines/types.js';
import { estimateTokens } from '../compaction.js';
import { modelOf } from '../policy-model.js';
import type { PricedUsage, Pricing } from '../price.js';
import { priceOf, readUsage } from './cost.js';
import type { Remaining } from './limits.js';
import type { ActorPorts } from './ports.js';

/** The output a call in a group holds when neither its adapter nor a budget says less. */
export const DEFAULT_HELD_OUTPUT = 4_096;

/** What a call may spend, as worked out (and held) before it is made. */
export interface Reservation {
  /** The request's estimated input tokens. */
  input: number;
  /** The output cap the model is given (`ctx.maxOutputTokens`); null: no budget limits it. */
  maxOutputTokens: number | null;
  /** What the call holds of its group's budget, under each limit the group has (null: none); null: not in a group. */
  group: { tokens: number | null; costMicroUsd: number | null } | null;
}

/** A call that cannot fit: not made. */
export interface NoRoom {
  budget: 'tokens' | 'cost' | 'group';
  why: string;
}

/** Dollars per token of a model's input and output, when they can be known before the call. */
interface Rates {
  input: number;
  output: number;
}

function rateOfTable(
  table: ReadonlyMap<string, { inputUsdPerMTok: number; outputUsdPerMTok: number }>,
  model: string | null,
) {
  const entries =
    model === null ? [...table.values()] : [priceOf(table as never, model)].filter((p) => p !== undefined);
  if (entries.length === 0) return null;
  // A model the table cannot name (a hand-written policy): the dearest of the table, to be safe.
  const input = Math.max(...entries.map((p) => p.inputUsdPerMTok)) / MICRO_USD;
  const output = Math.max(...entries.map((p) => p.outputUsdPerMTok)) / MICRO_USD;
  return { input, output };
}

function rateOfFunction(price: (usage: PricedUsage) => number, model: string | null): Rates | null {
  const at = (inputTokens: number, outputTokens: number) => {
    const usd = price(Object.freeze({ inputTokens, outputTokens, cachedInputTokens: 0, model }));
    if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) throw new Error('not a price');
    return usd;
  };
  try {
    const base = at(0, 0);
    return {
      input: Math.max(0, (at(1_000_000, 0) - base) / 1_000_000),
      output: Math.max(0, (at(0, 1_000_000) - base) / 1_000_000),
    };
  } catch {
    return null;
  }
}

/** The rates a call can be priced at in advance, or null when it cannot be. Never throws. */
export function ratesOf(price: Pricing | null, model: string | null): Rates | null {
  if (price === null) return null;
  return typeof price === 'function' ? rateOfFunction(price, model) : rateOfTable(price, model);
}

const minOf = (...values: (number | null)[]): number | null => {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : Math.min(...known);
};

/** Micro-dollars, rounded up: a call is never held or charged at less than it may cost. */
const microUp = (usd: number) => Math.ceil(Math.round(usd * 1e9) / 1e3);

/** What a model call is: its request (as the estimator reads it) and the bounds its adapter marks. */
export interface CallShape {
  /** What is sent beside the adapter's own parts: the view, or the entries to summarise. */
  request: readonly HistoryEntry[];
  /** Tokens the adapter adds to every request. */
  requestTokens: number;
  /** The most output tokens the adapter asks for; null: not known. */
  maxOutputTokens: number | null;
  /** The fewest output tokens it may ask for. */
  minOutputTokens: number;
  /** The model, for its price; null: not known. */
  model: string | null;
}

/** The shape of a policy call: the policy's marks, if an adapter made it. */
export function policyCallShape(run: ActorPorts, view: readonly HistoryEntry[]): CallShape {
  const marked = modelOf(run.policy);
  return {
    request: view,
    requestTokens: marked?.requestTokens ?? 0,
    maxOutputTokens: marked?.maxOutputTokens ?? null,
    minOutputTokens: marked?.minOutputTokens ?? 1,
    model: marked?.model ?? null,
  };
}

/**
 * Works out what a call may spend against the run's budgets, then holds it in the run's group
 * (waiting while other runs' holds fill the group's room). Returns the reservation, or why the
 * call cannot fit (it must not be made).
 * @throws StoreUnavailableError when the group's store cannot answer (the call must not be made).
 */
export async function reserve(
  run: ActorPorts,
  shape: CallShape,
  abort: { aborted: boolean; signal: AbortSignal },
): Promise<Reservation | NoRoom> {
  const input = estimateTokens(shape.request) + shape.requestTokens;
  const left = run.remaining();
  // Asked only when a budget needs it: a price function is called with made-up counts here.
  let known: Rates | null | undefined;
  const rates = () => {
    if (known === undefined) known = ratesOf(run.price, shape.model);
    return known;
  };
  const least = shape.minOutputTokens;
  let byTokens: number | null = null;
  if (left.tokens !== null) {
    byTokens = left.tokens - input;
    if (byTokens < least) {
      return {
        budget: 'tokens',
        why: `the next call does not fit the token budget: its request is estimated at ${input} tokens and ${least} output, and ${left.tokens} are left`,
      };
    }
  }
  let byCost: number | null = null;
  const r = left.costUsd === null ? null : rates();
  if (left.costUsd !== null && r !== null) {
    const room = left.costUsd - input * r.input;
    byCost = r.output > 0 ? Math.floor(room / r.output) : null;
    if (room < least * r.output || (byCost !== null && byCost < least)) {
      return {
        budget: 'cost',
        why: `the next call does not fit the cost budget: its request is estimated at $${(input * r.input).toFixed(6)} and $${left.costUsd} is left`,
      };
    }
  }
  const maxOutputTokens = minOf(shape.maxOutputTokens, byTokens, byCost);
  const reservation: Reservation = { input, maxOutputTokens, group: null };
  const group = run.group();
  if (!group) return reservation;
  const held = await group.hold(
    {
      input,
      output: maxOutputTokens ?? DEFAULT_HELD_OUTPUT,
      least,
      price: () => {
        const g = rates();
        return g === null
          ? null
          : (tokensIn: number, tokensOut: number) => microUp(tokensIn * g.input + tokensOut * g.output);
      },
    },
    abort,
  );
  if ('budget' in held) return held;
  reservation.group = held;
  // The group's room may be less than the run's: the model is told the smaller.
  if (held.tokens !== null) reservation.maxOutputTokens = minOf(reservation.maxOutputTokens, held.tokens - input);
  return reservation;
}

/** What a call is charged, as the run and its group take it. */
export interface Charge {
  tokens: TokenCount;
  cost: CallCost;
  /** The token counts were estimated (the usage was missing or could not be read). */
  estimated: boolean;
  /** Why the charge is not the usage as reported, for the run's `error`; null when it is. */
  note: string | null;
  /** The model the usage names. */
  model: string | null;
}

/** The answer's estimated output tokens: its content as JSON, a quarter token a character. */
export function answerTokens(decision: { type: string } & Record<string, unknown>): number {
  let body: unknown;
  if (decision.type === 'final') body = decision.final;
  else if (decision.type === 'calls') {
    const calls = decision.calls as { tool: string; args: unknown }[];
    body = { calls: calls.map((c) => ({ tool: c.tool, args: c.args })), text: decision.text };
  } else body = { tool: decision.tool, error: decision.error };
  return Math.max(1, Math.ceil((JSON.stringify(body) ?? '').length / 4));
}

/**
 * The charge of a call that reported `raw` usage (a policy's `usage`, a summary's), under its
 * reservation: reported counts when they can be read; else the estimate (the request's, and
 * `output` for the answer); never more than the run's budgets leave now (`left`) nor than its
 * group hold, in tokens or dollars.
 */
export function chargeOf(
  raw: unknown,
  reported: boolean,
  price: Pricing | null,
  r: Reservation,
  output: number,
  left: Pick<Remaining, 'tokens' | 'costUsd'>,
): Charge {
  const read = readUsage(raw, price);
  let tokens = read.tokens;
  let estimated = false;
  let note: string | null = null;
  if (tokens === null) {
    estimated = true;
    tokens = { inputTokens: r.input, outputTokens: output };
    if (reported)
      note = 'the usage reported could not be read (token counts are not whole numbers ≥ 0): charged at the estimate';
  }
  let cost = read.cost;
  // The most the call may be charged: what the run's budgets had left, and what the group held.
  const capTokens = minOf(left.tokens, r.group?.tokens ?? null);
  const total = tokens.inputTokens + tokens.outputTokens;
  if (capTokens !== null && total > capTokens) {
    note = `the call reported ${total} tokens, more than the ${capTokens} it could spend: charged ${capTokens}`;
    const inputTokens = Math.min(tokens.inputTokens, capTokens);
    tokens = { inputTokens, outputTokens: capTokens - inputTokens };
  }
  if ('usd' in cost) {
    const held = r.group?.costMicroUsd ?? null;
    const capUsd = minOf(left.costUsd, held === null ? null : held / MICRO_USD);
    if (capUsd !== null && microUsd(cost.usd) > microUsd(capUsd)) {
      note = `the call cost $${cost.usd}, more than the $${capUsd} it could spend: charged $${capUsd}`;
      cost = { usd: capUsd };
    }
  }
  return { tokens, cost, estimated, note, model: read.model };
}

/** The fields a decision carries of its charge. */
export function chargedFields(charge: Charge): Pick<Decision, 'usage' | 'cost'> & { estimated?: true; note?: string } {
  return {
    usage: charge.tokens,
    cost: charge.cost,
    ...(charge.estimated ? { estimated: true as const } : {}),
    ...(charge.note === null ? {} : { note: charge.note }),
  };
}
