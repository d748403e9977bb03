/**
 * The token and cost rules of a policy call, written out from the contract (docs/long-runs.md,
 * "Reserve, then settle"), not taken from the runtime's code: what the request is estimated at
 * (a quarter token a character of its JSON), whether the call fits what the run's budget leaves,
 * and what it is charged — the usage reported when it can be read, else the estimate, and never
 * more than the budget leaves. The model (model-events.ts) and the ledger (world.ts) both use them.
 */
import { latestSummaryGrowing, modelView } from '../../../machines/compaction.js';
import type { AgentContext, CallCost, HistoryEntry, TokenCount } from '../../../machines/types.js';

/** The documented estimator: the JSON's length / 4, rounded up. */
export const estimate = (value: unknown): number => Math.ceil((JSON.stringify(value) ?? '').length / 4);

/** What the policy is shown: the history, or, once summarised, the goal, the summary and the rest. */
export const viewOf = (history: readonly HistoryEntry[]): HistoryEntry[] =>
  modelView(history, latestSummaryGrowing(history));

type Spent = { limits: AgentContext['limits']; tokens: number; costMicro: number };

/** A context as the budget rules read it. */
export const spentOf = (c: Pick<AgentContext, 'limits' | 'usage'>): Spent => ({
  limits: c.limits,
  tokens: c.usage.inputTokens + c.usage.outputTokens,
  costMicro: Math.round(c.usage.costUsd * 1e6),
});

/** Tokens the run's budget leaves, or null without a token budget. */
export const tokensLeft = (s: Spent): number | null =>
  s.limits.maxTokens === null ? null : Math.max(0, s.limits.maxTokens - s.tokens);

/** Why the next call does not fit the token budget (the run's `error`), or null when it fits. */
export function noRoomWhy(s: Spent, view: readonly HistoryEntry[]): string | null {
  const left = tokensLeft(s);
  if (left === null) return null;
  const input = estimate(view);
  if (left - input >= 1) return null;
  return `the next call does not fit the token budget: its request is estimated at ${input} tokens and 1 output, and ${left} are left`;
}

/** The answer's estimated output: its content as JSON, a quarter token a character, at least 1. */
export function answerEstimate(
  answer:
    | { type: 'final'; final: unknown }
    | { type: 'calls'; calls: { tool: string; args: unknown }[]; text: string | null }
    | { type: 'malformed'; tool: string; error: string },
): number {
  const body =
    answer.type === 'final'
      ? answer.final
      : answer.type === 'calls'
        ? { calls: answer.calls.map((c) => ({ tool: c.tool, args: c.args })), text: answer.text }
        : { tool: answer.tool, error: answer.error };
  return Math.max(1, estimate(body));
}

/** What a call is charged, as the run records it. */
export interface Charged {
  usage: TokenCount;
  cost: CallCost;
  estimated?: true;
  note?: string;
}

/**
 * The charge of a call: `reported` token counts when they could be read (null when not),
 * `present` whether the action carried a usage at all, `view` what it was shown, `output` its
 * answer's estimate, `cost` what it cost (or why that is unknown).
 */
export function chargeOf(
  s: Spent,
  reported: TokenCount | null,
  present: boolean,
  view: readonly HistoryEntry[],
  output: number,
  cost: CallCost,
): Charged {
  let usage = reported ?? { inputTokens: estimate(view), outputTokens: output };
  let note: string | null =
    reported === null && present
      ? 'the usage reported could not be read (token counts are not whole numbers ≥ 0): charged at the estimate'
      : null;
  const left = tokensLeft(s);
  const total = usage.inputTokens + usage.outputTokens;
  if (left !== null && total > left) {
    note = `the call reported ${total} tokens, more than the ${left} it could spend: charged ${left}`;
    const inputTokens = Math.min(usage.inputTokens, left);
    usage = { inputTokens, outputTokens: left - inputTokens };
  }
  let charged = cost;
  const limit = s.limits.maxCostUsd;
  if ('usd' in cost && limit !== null) {
    const leftMicro = Math.max(0, Math.round(limit * 1e6) - s.costMicro);
    if (Math.round(cost.usd * 1e6) > leftMicro) {
      note = `the call cost $${cost.usd}, more than the $${leftMicro / 1e6} it could spend: charged $${leftMicro / 1e6}`;
      charged = { usd: leftMicro / 1e6 };
    }
  }
  return {
    usage,
    cost: charged,
    ...(reported === null ? { estimated: true as const } : {}),
    ...(note === null ? {} : { note }),
  };
}
