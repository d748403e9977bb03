/**
 * The `compaction` option: when a run summarises its older turns, how many it keeps verbatim, and
 * the function that writes the summary. Checked up front like every option (a bad one throws
 * `OptionsError` naming its path), and turned once into the `Compaction` the runtime uses.
 */

import { z } from 'zod';
import {
  latestMessageGrowing,
  latestSummaryGrowing,
  MAX_SUMMARY_FAILURES,
  modelView,
  nextCover,
} from '../machines/compaction.js';
import type { HistoryEntry, Usage } from '../machines/types.js';
import { OptionsError } from './errors.js';
import { showValue } from './option-keys.js';
import { checkOptions, fn, must, type OptionShape, timerMs } from './option-schema.js';

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

const THRESHOLD = 'an object: { entries: n } or { tokens: n, estimate? }';
const whole = (min: number) =>
  must(`a whole number ≥ ${min}`, (e) => z.number(e).int(e).min(min, e).max(Number.MAX_SAFE_INTEGER, e));

const compactionShape = {
  // One of two shapes, told apart by their keys; each is checked by its own schema (thresholdOf).
  when: z.custom<CompactionThreshold>(
    (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && ('entries' in v || 'tokens' in v),
    { error: THRESHOLD },
  ),
  keep: whole(0).optional(),
  summarize: fn,
  timeoutMs: timerMs().optional(),
} satisfies OptionShape<CompactionOptions>;
const entriesShape = { entries: whole(1) } satisfies OptionShape<Extract<CompactionThreshold, { entries: number }>>;
const tokensShape = {
  tokens: whole(1),
  estimate: fn.optional(),
} satisfies OptionShape<Extract<CompactionThreshold, { tokens: number }>>;

function refuse(call: string, path: string, what: string, value: unknown): never {
  throw new OptionsError(`${call}: compaction${path} must be ${what}, got ${showValue(value)}`);
}

function thresholdOf(call: string, when: CompactionThreshold): Compaction['over'] {
  if ('entries' in when) {
    const { entries } = checkOptions(call, when, entriesShape, {}, 'compaction.when');
    return (view) => view.length > entries;
  }
  const { tokens, estimate } = checkOptions(call, when, tokensShape, {}, 'compaction.when');
  const count = (view: readonly HistoryEntry[]) => {
    if (estimate === undefined) return estimateTokens(view);
    try {
      const e: unknown = estimate(view);
      return typeof e === 'number' && Number.isFinite(e) && e >= 0 ? e : estimateTokens(view);
    } catch {
      return estimateTokens(view);
    }
  };
  return (view) => count(view) > tokens;
}

/** Checks the `compaction` option and makes it usable; null when not given. */
export function compactionOf(call: string, value: unknown): Compaction | null {
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    refuse(call, '', 'an object { when, keep?, summarize, timeoutMs? }', value);
  }
  const o = checkOptions(call, value as CompactionOptions, compactionShape, {}, 'compaction');
  const over = thresholdOf(call, o.when);
  return {
    over,
    keep: o.keep ?? DEFAULT_KEEP,
    summarize: o.summarize,
    timeoutMs: o.timeoutMs ?? DEFAULT_SUMMARY_TIMEOUT_MS,
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
  if (!compaction.over(modelView(context.history, at, latestMessageGrowing(context.history)))) return false;
  return nextCover(context.history, compaction.keep, at) !== null;
}
