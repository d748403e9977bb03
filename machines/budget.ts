/**
 * The one budget rule. Budgets are checked before every policy call, never after: a step is
 * never taken that the budget does not allow (invariant 3). The machine's guards use this rule,
 * and so does a resume that lowers a limit.
 *
 * Dollars are kept to the micro-dollar: every amount the machine adds is a whole number of
 * micro-dollars, added and compared as integers, so `0.1 + 0.2` spends exactly `0.3` and a budget
 * of `0.3` is reached by it (binary floating point alone would leave it a hair short).
 */
import type { AgentContext, BudgetKind, CallCost, TurnStart } from './types.js';

/** Micro-dollars in a dollar. */
export const MICRO_USD = 1_000_000;

/**
 * The most a run's spending counts up to, the most one call is charged, and the largest
 * `maxCostUsd`: 10^9 dollars, 10^15 micro-dollars, so that every sum of two stays an exact
 * integer in a double (below 2^53 ≈ 9·10^15) and the checkpoint can always write it. A run
 * reported to spend more is counted at this: more than any budget allows, so it still stops.
 */
export const MAX_COST_USD = 1e9;

/** Dollars as a whole number of micro-dollars (to the nearest one). */
export function microUsd(usd: number): number {
  return Math.round(usd * MICRO_USD);
}

/** The sum of two amounts of dollars, to the micro-dollar, at most `MAX_COST_USD`. */
export function addUsd(a: number, b: number): number {
  return Math.min(microUsd(a) + microUsd(b), microUsd(MAX_COST_USD)) / MICRO_USD;
}

/** What the current turn has spent: the run's spending since the turn began. */
export function spentThisTurn(context: Pick<AgentContext, 'steps' | 'usage' | 'turn'>): TurnStart {
  const from = context.turn ?? { steps: 0, tokens: 0, costUsd: 0 };
  const { usage } = context;
  return {
    steps: context.steps - from.steps,
    tokens: usage.inputTokens + usage.outputTokens - from.tokens,
    costUsd: (microUsd(usage.costUsd) - microUsd(from.costUsd)) / MICRO_USD,
  };
}

/** Where a new turn begins: what the run has spent so far. */
export function turnStartOf(context: Pick<AgentContext, 'steps' | 'usage'>): TurnStart {
  const { usage } = context;
  return { steps: context.steps, tokens: usage.inputTokens + usage.outputTokens, costUsd: usage.costUsd };
}

/** The budget that allows no further policy call, checked in this order (the run's, then the turn's), or null. */
export function exhaustedBudget(
  context: Pick<AgentContext, 'steps' | 'usage' | 'activeMs' | 'limits' | 'turn'>,
): BudgetKind | null {
  const { limits, usage } = context;
  if (context.steps >= limits.maxSteps) return 'steps';
  if (limits.maxTokens !== null && usage.inputTokens + usage.outputTokens >= limits.maxTokens) return 'tokens';
  if (limits.maxCostUsd !== null && microUsd(usage.costUsd) >= microUsd(limits.maxCostUsd)) return 'cost';
  if (limits.maxActiveMs !== null && context.activeMs >= limits.maxActiveMs) return 'time';
  const perTurn = limits.perTurn;
  if (perTurn) {
    const spent = spentThisTurn(context);
    if (perTurn.maxSteps !== undefined && spent.steps >= perTurn.maxSteps) return 'turn';
    if (perTurn.maxTokens !== undefined && spent.tokens >= perTurn.maxTokens) return 'turn';
    if (perTurn.maxCostUsd !== undefined && microUsd(spent.costUsd) >= microUsd(perTurn.maxCostUsd)) return 'turn';
  }
  return null;
}

/**
 * Dollars spent once a policy call's cost is added. A cost that is not known fails closed: under
 * a cost budget it counts as all the budget had left (the run stops before the next policy call,
 * `stoppedBy: 'cost'`, until the budget is raised); without one it adds nothing.
 */
export function spentAfter(context: Pick<AgentContext, 'usage' | 'limits'>, cost: CallCost | undefined): number {
  const spent = context.usage.costUsd;
  if (cost === undefined) return spent;
  if ('usd' in cost) return addUsd(spent, cost.usd);
  const limit = context.limits.maxCostUsd;
  return limit === null ? spent : Math.max(microUsd(spent), microUsd(limit)) / MICRO_USD;
}
