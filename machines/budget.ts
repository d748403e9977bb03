/**
 * The one budget rule. Budgets are checked before every policy call, never after: a step is
 * never taken that the budget does not allow (invariant 3). The machine's guards use this rule,
 * and so does a resume that lowers a limit.
 */
import type { AgentContext, BudgetKind } from './types.js';

/** The budget that allows no further policy call, checked in this order, or null. */
export function exhaustedBudget(
  context: Pick<AgentContext, 'steps' | 'usage' | 'activeMs' | 'limits'>,
): BudgetKind | null {
  const { limits, usage } = context;
  if (context.steps >= limits.maxSteps) return 'steps';
  if (limits.maxTokens !== null && usage.inputTokens + usage.outputTokens >= limits.maxTokens) return 'tokens';
  if (limits.maxActiveMs !== null && context.activeMs >= limits.maxActiveMs) return 'time';
  return null;
}
