/**
 * The tool actor: runs one call of a step, with its deadline (the tool's timeout, the active time
 * left) and the JSON check of its result. It reaches its run only through the ports it is handed.
 */
import { describeError } from '../../machines/describe-error.js';
import type { ToolInput } from '../../machines/events.js';
import type { JsonObject, StepCall, ToolOutcome } from '../../machines/types.js';
import { isoTime } from '../clock.js';
import { toJson } from '../json.js';
import { validateArgs } from '../tool-schema.js';
import { approvalRule } from './approval.js';
import { earliest, type SignalSource, TimeoutError, withDeadline } from './deadline.js';
import { activeLeft } from './limits.js';
import { type ActorPorts, portsOf } from './ports.js';
import { unwrap } from './returned.js';
import { endToolSpan, startToolSpan } from './spans.js';
import { type CallAbort, fromTask } from './task-actor.js';

/** The tool's own copy of the (frozen) arguments: the very value the approval rule saw. */
function copyArgs(args: JsonObject): JsonObject {
  const copy = toJson(args, 'args');
  if (!copy.ok) throw new TypeError(copy.reason); // a frozen JSON value always copies
  return copy.value as JsonObject;
}

export const toolActor = fromTask<ToolOutcome, ToolInput>(async ({ input: call, abort, system }) => {
  const run = portsOf(system);
  const tool = run.tools.get(call.tool);
  const recovered = run.takeRecovered(call.key);
  // Write ahead: a non-idempotent side effect in flight at a crash is not called again.
  const unknown = recovered && tool?.sideEffect === true && !tool.idempotent;
  // A side effect's call is durable before it is made, and so is a human's decision before it is
  // acted on. A crash simply re-runs any other call (its step is asked of the policy again), so
  // its record is saved with its result, by the next save, instead of before.
  if (!unknown && (tool?.sideEffect === true || call.approval !== null)) {
    await run.beforeCall();
    // Cancelled while the write-ahead record was being made: the call never starts.
    if (abort.aborted) throw abort.signal.reason;
  }
  const span = startToolSpan(run.tracer, run.runSpan(), run.runId, call, tool, recovered);
  try {
    const outcome: ToolOutcome = unknown
      ? { type: 'outcome_unknown', at: isoTime(run.clock.now()) }
      : await execute(run, call, abort);
    endToolSpan(span, outcome);
    return outcome;
  } catch (error) {
    span.fail(describeError(error));
    span.end();
    throw error;
  }
});

/** Makes the call, its write-ahead record made, and turns what it gave into an outcome. */
async function execute(run: ActorPorts, call: StepCall, abort: CallAbort): Promise<ToolOutcome> {
  const tool = run.tools.get(call.tool);
  const started = run.clock.now();
  const spent = () => Math.max(0, run.clock.now() - started);
  const done = (body: { result: unknown } | { error: string }): ToolOutcome => {
    const cost = { elapsedMs: spent(), at: isoTime(run.clock.now()) };
    if ('error' in body) return { type: 'error', error: body.error, ...cost };
    const json = toJson(body.result, 'result');
    return json.ok
      ? { type: 'result', result: json.value, ...cost }
      : { type: 'error', error: `TypeError: tool result is not JSON: ${json.reason}`, ...cost };
  };
  // The tool set given at resume may differ from the one the call was decided with.
  if (!tool) return done({ error: `unknown tool ${call.tool}` });
  // An approver's edit runs instead of the model's arguments; either is validated again here.
  // The signal is read (made) only by a schema that is checked.
  const valid = await validateArgs(tool, call.approval?.args ?? call.args, abort);
  if (!valid.ok) return done({ error: valid.error });
  // Defence in depth for invariant 1: a call that needs approval runs only with one.
  if (call.approval === null) {
    const ctx = { runId: run.runId, step: call.step, tool: call.tool, history: () => run.history().slice() };
    if ((await approvalRule(tool, valid.value, ctx)).kind !== 'run') {
      return done({ error: `refused: ${call.tool} needs approval and this call has none` });
    }
  }
  // Cancelled while an async rule was deciding: the call never starts either.
  if (abort.aborted) throw abort.signal.reason;
  const left = run.remaining().activeMs;
  // Not started at all when the active-time budget is already spent: not running is always safe.
  if (left !== null && left <= 0) {
    return done({ error: `not run: the active-time budget (maxActiveMs) was spent before ${call.tool} started` });
  }
  // The tool's own timeout, and the active time left (read live: a budget extended meanwhile
  // moves the deadline), whichever ends first.
  const timeoutLeft = () => (tool.timeoutMs === undefined ? null : tool.timeoutMs - spent());
  const activeLeftNow = () => activeLeft(run.remaining(), spent());
  // The call's signal, read from its source only if the tool reads it (see task-actor.ts).
  const ctxOf = (source: SignalSource) => ({
    runId: run.runId,
    step: call.step,
    key: call.key,
    approvedCallId: call.approval?.callId ?? null,
    get signal() {
      return source.signal;
    },
  });
  try {
    const result = await withDeadline(
      (source) => unwrap(tool.fn(copyArgs(valid.value), call.key, ctxOf(source))),
      () => earliest(timeoutLeft(), activeLeftNow()),
      abort,
      run.clock,
      () =>
        new TimeoutError(
          (timeoutLeft() ?? 1) <= 0
            ? `tool ${tool.name} timed out after ${tool.timeoutMs} ms`
            : `tool ${tool.name} stopped after ${spent()} ms: the active-time budget (maxActiveMs) ran out`,
        ),
    );
    return done({ result: result.value });
  } catch (error) {
    return done({ error: describeError(error) });
  }
}
