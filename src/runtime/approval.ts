/**
 * Approval rules: whether a call needs a human, asked of the tool's rule with the very value the
 * tool will get (frozen: the rule cannot change it on the way). A rule that throws, or answers
 * anything but `false` or `{ deny }`, means yes: the gate fails closed.
 */
import { deepFreeze } from '../../machines/history.js';
import type { HistoryEntry, JsonObject } from '../../machines/types.js';
import { safeString } from '../json.js';
import type { ApprovalContext, Tool } from '../types.js';

/** A rule's answer: run without asking, ask a human, or deny at once (the model is told why). */
export type RuleAnswer = { kind: 'run' } | { kind: 'ask' } | { kind: 'deny'; reason: string };

const MAX_REASON = 1_000;

/** Reads a `{ deny: reason }` answer, or null for any other value. Never throws. */
function denial(answer: unknown): string | null {
  try {
    if (answer === null || typeof answer !== 'object' || !('deny' in answer)) return null;
    const reason = (answer as { deny: unknown }).deny;
    const text = typeof reason === 'string' ? reason : safeString(reason);
    return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}…` : text;
  } catch {
    return null;
  }
}

/**
 * Where a rule is asked: its `ApprovalContext`, with the history as a function, called only
 * when the tool's rule is a function (copying a long history for a rule that is a boolean
 * would make every step cost O(history)).
 */
export type RuleSite = Omit<ApprovalContext, 'history'> & { history: () => readonly HistoryEntry[] };

/**
 * The history a rule is asked with about a call of the step in progress: the entries before the
 * step's assistant entry (the last one), as when the call was classified — asked again before the
 * call runs or about an approver's edit, the rule sees what it saw then (`ApprovalContext.history`).
 */
export function historyBeforeStep(history: readonly HistoryEntry[]): HistoryEntry[] {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]?.role === 'assistant') return history.slice(0, i);
  return history.slice();
}

/** What the tool's rule says of a call with `args` (the schema's output, when there is one). */
export async function approvalRule(tool: Tool, args: JsonObject, site: RuleSite): Promise<RuleAnswer> {
  const rule = tool.needsApproval ?? tool.sideEffect ?? false;
  if (typeof rule !== 'function') return rule === true ? { kind: 'ask' } : { kind: 'run' };
  try {
    const ctx: ApprovalContext = { runId: site.runId, step: site.step, tool: site.tool, history: site.history() };
    const answer: unknown = await rule(deepFreeze(args), ctx);
    if (answer === false) return { kind: 'run' };
    const reason = denial(answer);
    return reason === null ? { kind: 'ask' } : { kind: 'deny', reason };
  } catch {
    return { kind: 'ask' }; // fail closed: never skip an approval because the rule broke
  }
}
