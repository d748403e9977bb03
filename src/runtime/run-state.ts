/** `agent.state`: the whole run as plain JSON, read off a machine snapshot (a copy). */
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
  });
}
