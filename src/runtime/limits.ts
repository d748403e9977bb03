/**
 * Budgets seen from the runtime: what a policy is told it has left, and limits replaced on a run
 * that is not running (at resume, or before it starts again).
 */
import { exhaustedBudget, MICRO_USD, microUsd, spentThisTurn } from '../../machines/budget.js';
import type { AgentContext, Limits } from '../../machines/types.js';
import type { PersistedRun } from '../checkpoint/index.js';

/**
 * What a policy is told it has left: the run's budgets minus what is spent, and no more than the
 * current turn's limits leave (`limits.perTurn`); null = unlimited.
 */
export interface Remaining {
  /** Policy calls left, this one included. */
  steps: number;
  /** Input + output tokens left. */
  tokens: number | null;
  /** Active milliseconds left. */
  activeMs: number | null;
  /** US dollars left (to the micro-dollar). */
  costUsd: number | null;
}

/** What the budgets leave, as the run stands. */
export function remainingOf(c: Pick<AgentContext, 'limits' | 'usage' | 'steps' | 'activeMs' | 'turn'>): Remaining {
  const { limits, usage } = c;
  const run: Remaining = {
    steps: Math.max(0, limits.maxSteps - c.steps),
    tokens: limits.maxTokens === null ? null : Math.max(0, limits.maxTokens - usage.inputTokens - usage.outputTokens),
    activeMs: limits.maxActiveMs === null ? null : Math.max(0, limits.maxActiveMs - c.activeMs),
    costUsd:
      limits.maxCostUsd === null
        ? null
        : Math.max(0, microUsd(limits.maxCostUsd) - microUsd(usage.costUsd)) / MICRO_USD,
  };
  const perTurn = limits.perTurn;
  if (!perTurn) return run;
  const spent = spentThisTurn(c);
  const least = (a: number | null, b: number | undefined) => (b === undefined ? a : a === null ? b : Math.min(a, b));
  return {
    steps: least(
      run.steps,
      perTurn.maxSteps === undefined ? undefined : Math.max(0, perTurn.maxSteps - spent.steps),
    ) as number,
    tokens: least(
      run.tokens,
      perTurn.maxTokens === undefined ? undefined : Math.max(0, perTurn.maxTokens - spent.tokens),
    ),
    activeMs: run.activeMs,
    costUsd: least(
      run.costUsd,
      perTurn.maxCostUsd === undefined
        ? undefined
        : Math.max(0, microUsd(perTurn.maxCostUsd) - microUsd(spent.costUsd)) / MICRO_USD,
    ),
  };
}

/** Active time left after `spent` more ms, or null without an active-time budget. */
export function activeLeft(remaining: Remaining, spent: number): number | null {
  return remaining.activeMs === null ? null : remaining.activeMs - spent;
}

/**
 * The run with some limits replaced, as `Agent.resume(blob, { maxSteps })` and `extendBudget`
 * on a not-started agent apply them. A run resting in a policy call that the new limits no
 * longer allow stops the way the machine would have stopped before making that call:
 * `budget_exhausted`, the call abandoned (a restored invoke would otherwise call the policy
 * past its budget: invariant 3). A run stopped by a budget names the one that stops it now.
 */
export function withLimits(run: PersistedRun, limits: Partial<Limits>): PersistedRun {
  const context = { ...run.context, limits: { ...run.context.limits, ...limits } };
  if (run.value === 'budget_exhausted') context.stoppedBy = exhaustedBudget(context) ?? context.stoppedBy;
  // A summary in flight spends from the budgets too: it is abandoned as a policy call would be.
  const deciding =
    typeof run.value === 'object' && (run.value.running === 'deciding' || run.value.running === 'summarising');
  const stoppedBy = deciding ? exhaustedBudget(context) : null;
  if (stoppedBy === null) return { ...run, context };
  return { ...run, value: 'budget_exhausted', context: { ...context, stoppedBy }, children: {} };
}
