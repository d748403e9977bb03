/**
 * The `compaction` option: when a run summarises its older turns, how many it keeps verbatim, and
 * the function that writes the summary. Checked up front like every option (a bad one throws
 * `OptionsError` naming its path), and turned once into the `Compaction` the runtime uses.
 */
import { latestSummaryGrowing, MAX_SUMMARY_FAILURES, modelView, nextCover } from '../machines/compaction.js';
import type { HistoryEntry, Usage } from '../machines/types.js';
import { MAX_TIMER_MS } from './clock.js';
import { OptionsError } from './errors.js';
import { checkKeys, showValue } from './option-keys.js';

/** What a summariser is given beside the entries. */
export interface SummaryContext {
  runId: string;
  /** The step the policy call after this summary will count as (a summary is no step itself). */
  step: number;
  /** Aborted when the run is cancelled, when `timeoutMs` passes, or when the active-time budget runs out. */
  signal: AbortSignal;
  /** What the run's budgets leave (as `PolicyContext.remaining`): a model call caps its output to `tokens`. */
  remaining: { steps: number; tokens: number | null; activeMs: number | null; costUsd: number | null };
  /** The most output tokens the summary may produce (the budgets, after its estimated input): a model call's output limit. null: none. */
  maxOutputTokens: number | null;
  /** The journal indices the summary will stand for (both included). */
  covers: { from: number; to: number };
}

/** What a summariser returns: the text, and what its model call used (counted against the budgets). */
export interface SummaryResult {
  text: string;
  usage?: Usage;
}

/**
 * Writes the summary of `entries`: the previous summary (if any, as a `{ role: 'summary' }`
 * entry), then the entries newly covered, in order. A model call through an adapter, or any
 * function. Returns the text, or `{ text, usage }`.
 */
export type Summarize = (
  entries: HistoryEntry[],
  ctx: SummaryContext,
) => SummaryResult | string | Promise<SummaryResult | string>;

/** The threshold on the model's view: its entries, or its estimated tokens. */
export type CompactionThreshold =
  | { entries: number }
  | {
      tokens: number;
      /**
       * Estimates the tokens of the view. An estimate that throws or is not a number ≥ 0 is
       * replaced by the default. @default JSON length / 4, rounded up (`estimateTokens`)
       */
      estimate?: (entries: readonly HistoryEntry[]) => number;
    };

/** The `compaction` option of `new Agent`, `defineAgent`, `Agent.resume` and `Agent.load`. */
export interface CompactionOptions {
  /** Summarise before a policy call whose view would be over this. */
  when: CompactionThreshold;
  /** Recent turns (a step: its assistant entry and its tool entries) kept verbatim. @default 2 */
  keep?: number;
  summarize: Summarize;
  /**
   * A summary taking longer is abandoned (its signal aborted) and counts as failed. At most
   * 2^31−1 ms. @default 60_000
   */
  timeoutMs?: number;
}

/** The option as the runtime uses it. */
export interface Compaction {
  /** Whether a view is over the threshold. Never throws. */
  over(view: readonly HistoryEntry[]): boolean;
  keep: number;
  summarize: Summarize;
  timeoutMs: number;
}

export const DEFAULT_KEEP = 2;
export const DEFAULT_SUMMARY_TIMEOUT_MS = 60_000;

/**
 * The default token estimate of a view: its JSON length / 4, rounded up (about four characters a
 * token in English text and JSON). Deterministic, so a resumed run summarises where the
 * uninterrupted one did; a provider's own count of the last call is not used, as it measured the
 * previous view, not the one about to be sent.
 */
export function estimateTokens(entries: readonly HistoryEntry[]): number {
  return Math.ceil(JSON.stringify(entries).length / 4);
}

const KEYS = ['when', 'keep', 'summarize', 'timeoutMs'];
const isWhole = (v: unknown, min: number) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= Number.MAX_SAFE_INTEGER;

function refuse(call: string, path: string, what: string, value: unknown): never {
  throw new OptionsError(`${call}: compaction${path} must be ${what}, got ${showValue(value)}`);
}

function thresholdOf(call: string, when: unknown): Compaction['over'] {
  const how = 'an object: { entries: n } or { tokens: n, estimate? }';
  if (when === null || typeof when !== 'object' || Array.isArray(when)) refuse(call, '.when', how, when);
  const w = when as Record<string, unknown>;
  if ('entries' in w) {
    checkKeys(`${call}: compaction.when`, w, ['entries']);
    const n = w.entries;
    if (!isWhole(n, 1)) refuse(call, '.when.entries', 'a whole number ≥ 1', n);
    return (view) => view.length > (n as number);
  }
  if (!('tokens' in w)) refuse(call, '.when', how, when);
  checkKeys(`${call}: compaction.when`, w, ['tokens', 'estimate']);
  const n = w.tokens as number;
  if (!isWhole(n, 1)) refuse(call, '.when.tokens', 'a whole number ≥ 1', n);
  const estimate = w.estimate;
  if (estimate !== undefined && typeof estimate !== 'function') refuse(call, '.when.estimate', 'a function', estimate);
  const count = (view: readonly HistoryEntry[]) => {
    if (estimate === undefined) return estimateTokens(view);
    try {
      const e = (estimate as (v: readonly HistoryEntry[]) => unknown)(view);
      return typeof e === 'number' && Number.isFinite(e) && e >= 0 ? e : estimateTokens(view);
    } catch {
      return estimateTokens(view);
    }
  };
  return (view) => count(view) > n;
}

/** Checks the `compaction` option and makes it usable; null when not given. */
export function compactionOf(call: string, value: unknown): Compaction | null {
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    refuse(call, '', 'an object { when, keep?, summarize, timeoutMs? }', value);
  }
  checkKeys(`${call}: compaction`, value, KEYS);
  const o = value as Record<string, unknown>;
  const over = thresholdOf(call, o.when);
  if (o.keep !== undefined && !isWhole(o.keep, 0)) refuse(call, '.keep', 'a whole number ≥ 0', o.keep);
  if (typeof o.summarize !== 'function') refuse(call, '.summarize', 'a function', o.summarize);
  const t = o.timeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !(t > 0) || t > MAX_TIMER_MS)) {
    refuse(call, '.timeoutMs', `a number of milliseconds > 0 and ≤ ${MAX_TIMER_MS}`, t);
  }
  return {
    over,
    keep: (o.keep as number | undefined) ?? DEFAULT_KEEP,
    summarize: o.summarize as Summarize,
    timeoutMs: (t as number | undefined) ?? DEFAULT_SUMMARY_TIMEOUT_MS,
  };
}

/**
 * Whether a run should summarise now, before its next policy call (the guard the runtime provides
 * the machine): summarising has not given up, the history grew since a failure, the view is over
 * the threshold, and there is something the latest summary does not cover yet.
 */
export function compactionDue(
  compaction: Compaction,
  context: { history: readonly HistoryEntry[]; compaction: { failures: number; retryAt: number } },
): boolean {
  const c = context.compaction;
  if (c.failures >= MAX_SUMMARY_FAILURES || context.history.length < c.retryAt) return false;
  // The live journal only grows: its latest summary is found by scanning what is new.
  const at = latestSummaryGrowing(context.history);
  if (!compaction.over(modelView(context.history, at))) return false;
  return nextCover(context.history, compaction.keep, at) !== null;
}
