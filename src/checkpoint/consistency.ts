/**
 * The rules that tie a snapshot's context to its state: what zod's shapes cannot say. A blob that
 * passes them restores to a run that can only do what its state allows (XState restores a snapshot
 * whose state is wrong without complaint and fails later: docs/architecture.md, "XState pitfalls").
 */

import { callIdOf, keyOf } from '../../machines/calls.js';
import { canonicalJson } from '../../machines/canonical.js';
import { headLength, latestMessage } from '../../machines/compaction.js';
import { assistantEntry } from '../../machines/history.js';
import type { Status, StepCall } from '../../machines/types.js';
import { approvalSchema, type PersistedRun } from './schema.js';

/** The status a persisted value stands for. */
export function statusOfValue(v: PersistedRun['value']): Status {
  return typeof v === 'string' ? (v as Status) : 'running';
}

/** The children XState must find to resume the state: the invoke of that state, nothing else. */
export function expectedChildren(run: Pick<PersistedRun, 'value' | 'context'>): PersistedRun['children'] {
  const v = run.value;
  if (typeof v === 'string') return {};
  const c = run.context;
  if (v.running === 'deciding') {
    return {
      policy: {
        snapshot: { status: 'active', input: { runId: c.runId, step: c.steps + 1 } },
        src: 'policy',
        syncSnapshot: false,
      },
    };
  }
  if (v.running === 'summarising') {
    return {
      summary: {
        snapshot: { status: 'active', input: { runId: c.runId, step: c.steps + 1 } },
        src: 'summarize',
        syncSnapshot: false,
      },
    };
  }
  if (v.running === 'batching') {
    return {
      tools: {
        snapshot: { status: 'active', input: { runId: c.runId, step: c.steps } },
        src: 'tools',
        syncSnapshot: false,
      },
    };
  }
  const running = c.calls.find((call) => call.state === 'running');
  return { tool: { snapshot: { status: 'active', input: running }, src: 'tool', syncSnapshot: false } };
}

type Problem = [path: string, message: string];

function callProblem(call: StepCall, i: number, run: PersistedRun): Problem | null {
  const c = run.context;
  const at = `snapshot.context.calls.${i}`;
  const key = keyOf(c.runId, c.steps, i + 1, c.calls.length);
  if (call.step !== c.steps || call.index !== i + 1 || call.key !== key) {
    return [at, `call ${call.key} is not call ${i + 1} of step ${c.steps} of run ${c.runId} (key ${key})`];
  }
  // The id names the exact call (its digest of tool and arguments); version 1 wrote `key#attempt`.
  const legacy = `${call.key}#${call.attempt}`;
  if (call.id !== legacy && call.id !== callIdOf(call.key, call.attempt, call.tool, call.args)) {
    return [`${at}.id`, `call id ${call.id} does not name this call (tool, arguments, attempt)`];
  }
  const pending = call.state === 'pending';
  if (pending !== (call.requestedAt !== null)) return [`${at}.requestedAt`, 'set exactly while the call is pending'];
  if (!pending && call.expiresAt !== null) return [`${at}.expiresAt`, 'set only while the call is pending'];
  if ((call.state === 'done') !== (call.done !== null)) return [`${at}.done`, 'set exactly when the call is done'];
  if ((call.state === 'queued' || call.state === 'running') && call.approval && !call.approval.approved) {
    return [`${at}.approval`, 'a call that runs carries no denial'];
  }
  if (!call.modelId && call.toolCallId !== call.key) return [`${at}.toolCallId`, 'without a model id it is the key'];
  if (call.concurrent && (call.approval !== null || pending)) {
    return [`${at}.concurrent`, 'a call that runs side by side needs no human: no approval, never pending'];
  }
  return null;
}

function callsProblem(run: PersistedRun, status: Status): Problem | null {
  const calls = run.context.calls;
  const phase = typeof run.value === 'object' ? run.value.running : null;
  const executing = phase === 'executing';
  const batching = phase === 'batching';
  const count = (state: StepCall['state']) => calls.filter((c) => c.state === state).length;
  if (calls.length > 0 !== (executing || batching || status === 'awaiting_approval')) {
    return [
      'snapshot.context.calls',
      `calls must be set exactly while executing or awaiting approval (state ${status})`,
    ];
  }
  if (executing && count('running') !== 1) return ['snapshot.context.calls', 'exactly one call runs while executing'];
  // A batch whose calls all ended waits only for its actor's end (a checkpoint may fall between).
  if (batching && calls.some((c) => c.state === 'running' && !c.concurrent)) {
    return [
      'snapshot.context.calls',
      'while batching, every call in flight is one that runs side by side (concurrent)',
    ];
  }
  // A queued call waits only behind a pending one: calls take effect in their order.
  const firstOpen = calls.find((c) => c.state !== 'done');
  if (status === 'awaiting_approval' && (firstOpen?.state !== 'pending' || count('running') > 0)) {
    return ['snapshot.context.calls', 'awaiting approval: the first call without an outcome is pending, none running'];
  }
  // Calls take effect in their order: one runs only when every call before it ended or runs too.
  const blocked = calls.findIndex((c) => c.state === 'queued' || c.state === 'pending');
  if (blocked >= 0 && calls.some((c, i) => i > blocked && c.state === 'running')) {
    return ['snapshot.context.calls', 'a call runs while an earlier call of its step waits'];
  }
  if (new Set(calls.map((c) => c.toolCallId)).size !== calls.length) {
    return ['snapshot.context.calls', 'two calls of the step share a tool-call id'];
  }
  for (const [i, call] of calls.entries()) {
    const problem = callProblem(call, i, run);
    if (problem) return problem;
  }
  // The step's record so far is its assistant entry, the history's last: the calls are its calls.
  if (calls.length > 0) {
    const last = run.context.history.at(-1);
    const expected = assistantEntry(calls, null);
    const { text: _t, ...recorded } = (last ?? {}) as Record<string, unknown>;
    if (canonicalJson(recorded) !== canonicalJson(expected)) {
      return [
        'snapshot.context.calls',
        "the calls are not the ones the step's assistant entry (the last entry) records",
      ];
    }
  }
  return null;
}

/**
 * System entries come first, and only there (the runtime writes them when a run starts from
 * messages). Summaries fold (machines/compaction.ts): each covers from the entry after the head
 * to an index before its own, further than the summary before it did. A summary that covers
 * itself, its head or less than the one before would give the policy a view the run never had.
 */
function summariesProblem(history: PersistedRun['context']['history']): Problem | null {
  const first = history.findIndex((e) => e.role !== 'system');
  if (history.length > 0 && first < 0) return ['snapshot.context.history', 'system entries need a message after them'];
  const late = history.findIndex((e, i) => i > first && e.role === 'system');
  if (late >= 0) return [`snapshot.context.history.${late}`, 'system entries come first, before any other entry'];
  // Earlier replies are given with the messages a run starts from: none after the run's first step.
  const made = history.findIndex((e) => e.role !== 'system' && e.role !== 'user' && !('content' in e));
  const reply = made < 0 ? -1 : history.findIndex((e, i) => i > made && e.role === 'assistant' && 'content' in e);
  if (reply >= 0) return [`snapshot.context.history.${reply}`, 'an earlier reply comes before the run’s first step'];
  const head = headLength(history); // as the model's view reads it (machines/compaction.ts)
  let last = 0;
  for (const [i, e] of history.entries()) {
    if (e.role !== 'summary') continue;
    if (e.covers.from !== head) {
      return [`snapshot.context.history.${i}.covers.from`, `a summary covers from entry ${head}, after the head`];
    }
    const at = `snapshot.context.history.${i}.covers.to`;
    if (e.covers.to >= i) return [at, `a summary covers entries before it (it is entry ${i})`];
    if (e.covers.to <= last) return [at, `a summary covers more than the one before it (to ${last})`];
    last = e.covers.to;
  }
  return null;
}

/**
 * A turn begins where the run's spending stood then: never past what the run has spent (the
 * turn's limits would count from below zero), and only after a message that began it.
 */
function turnProblem(c: PersistedRun['context']): Problem | null {
  const { turn, usage } = c;
  if (turn === undefined) return null;
  const at = 'snapshot.context.turn';
  if (turn.steps > c.steps) return [`${at}.steps`, `a turn cannot begin after step ${c.steps}, the run's last`];
  if (turn.tokens > usage.inputTokens + usage.outputTokens) {
    return [`${at}.tokens`, 'a turn cannot begin after more tokens than the run spent'];
  }
  if (turn.costUsd > usage.costUsd)
    return [`${at}.costUsd`, 'a turn cannot begin after more dollars than the run spent'];
  if (latestMessage(c.history) >= 1) return null;
  return [at, 'a later turn needs the message that began it in the history'];
}

/** The first rule the run breaks, as [path, message], or null. */
export function consistencyProblem(run: PersistedRun): Problem | null {
  const status = statusOfValue(run.value);
  const c = run.context;
  // Only `cancelled` is final: a run that answered (`done`) goes on with a new message.
  if ((run.status === 'done') !== (status === 'cancelled')) {
    return ['snapshot.status', `status ${run.status} does not fit state ${status}`];
  }
  // Only a run that never started has no history (one cancelled before starting included).
  if (status !== 'idle' && status !== 'cancelled' && c.history.length === 0) {
    return ['snapshot.context.history', `a ${status} run must have a history`];
  }
  const turn = turnProblem(c);
  if (turn) return turn;
  const calls = callsProblem(run, status);
  if (calls) return calls;
  const summaries = summariesProblem(c.history);
  if (summaries) return summaries;
  if ((c.stoppedBy !== null) !== (status === 'budget_exhausted')) {
    return ['snapshot.context.stoppedBy', 'stoppedBy must be set exactly when budget_exhausted'];
  }
  for (const [tool, grant] of Object.entries(c.standing)) {
    // Each grant is checked here again: the schema's record passes over a `__proto__` key (a tool
    // may be called that) without checking its value (zod 4).
    if (!approvalSchema.safeParse(grant).success || !grant.approved || grant.always !== true) {
      return [`snapshot.context.standing.${tool}`, 'a standing approval is an approval given for always'];
    }
  }
  if (canonicalJson(run.children) !== canonicalJson(expectedChildren(run))) {
    return ['snapshot.children', `the invoked actors do not match state ${JSON.stringify(run.value)}`];
  }
  return null;
}
