/** `agent.state`: the whole run as plain JSON, read off a machine snapshot (a copy). */
import { spentThisTurn } from '../../machines/budget.js';
import { pendingCalls, runningCall } from '../../machines/calls.js';
import type { AgentContext, Status } from '../../machines/types.js';
import type { RunState } from '../types.js';

export function runStateOf(context: AgentContext, status: Status): RunState {
  const c = context;
  const waiting = pendingCalls(c.calls);
  const running = runningCall(c.calls);
  return structuredClone({
    runId: c.runId,
    status,
    history: c.history,
    steps: c.steps,
    usage: c.usage,
    activeMs: c.activeMs,
    limits: c.limits,
    pending: waiting[0] ?? null,
    pendingCalls: waiting,
    standing: c.standing,
    answer: c.answer,
    stoppedBy: c.stoppedBy,
    error: c.error,
    cancelReason: c.cancelReason,
    inflight: running ? { key: running.key, tool: running.tool, step: running.step } : null,
    compaction: c.compaction,
    turn: { number: turnNumber(c.history), ...spentThisTurn(c) },
  });
}

/** The number of the turn under way: the user messages in the history (at least 1). */
function turnNumber(history: AgentContext['history']): number {
  let n = 0;
  for (const entry of history) if (entry.role === 'user') n++;
  return Math.max(1, n);
}
