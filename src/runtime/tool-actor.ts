/**
 * The tool actor: runs one call of a step, with its deadline (the tool's timeout, the active time
 * left) and the JSON check of its result. It reaches its run only through the ports it is handed.
 *
 * A call that must be on record before it runs (a side effect, an approved call) is saved first
 * (write ahead), and then starts only under a lease the store confirmed for it, checked again
 * synchronously right before `fn` (runtime/lease.ts): an owner that lost its run, or was paused
 * past its lease, never starts the effect. The tool gets the fencing token to hand downstream.
 */
import { describeError } from '../../machines/describe-error.js';
import type { ToolInput } from '../../machines/events.js';
import type { JsonObject, StepCall, ToolOutcome } from '../../machines/types.js';
import { isoTime } from '../clock.js';
import { toJson } from '../json.js';
import { validateArgs } from '../tool-schema.js';
import type { Tool } from '../types.js';
import { approvalRule, historyBeforeStep } from './approval.js';
import { earliest, type SignalSource, TimeoutError, withDeadline } from './deadline.js';
import { monotonic } from './lease.js';
import { activeLeft } from './limits.js';
import { type ActorPorts, portsOf } from './ports.js';
import { unwrap } from './returned.js';
import { endToolSpan, startToolSpan } from './spans.js';
import { type CallAbort, fromTask } from './task-actor.js';
import { type Verdict, verifyCall } from './verify.js';

/** The tool's own copy of the (frozen) arguments: the very value the approval rule saw. */
function copyArgs(args: JsonObject): JsonObject {
  const copy = toJson(args, 'args');
  if (!copy.ok) throw new TypeError(copy.reason); // a frozen JSON value always copies
  return copy.value as JsonObject;
}

/** Whether `error` is a deadline's: asked without throwing (a tool may throw a revoked Proxy). */
function isTimeout(error: unknown): boolean {
  try {
    return error instanceof TimeoutError;
  } catch {
    return false;
  }
}

/** Whether the call must be on record (and under a confirmed lease) before it starts. */
export const guarded = (tool: Tool | undefined, call: StepCall) => tool?.sideEffect === true || call.approval !== null;

/** Whether an approval may still be acted on after a crash: younger than the run's approval TTL. */
function approvalHolds(run: ActorPorts, call: StepCall): boolean {
  const ttl = run.approvalTtlMs();
  return call.approval === null || ttl === null || run.clock.now() < Date.parse(call.approval.at) + ttl;
}

export const toolActor = fromTask<ToolOutcome, ToolInput>(({ input: call, abort, system }) =>
  runCall(portsOf(system), call, abort),
);

/**
 * Runs one call by the rules above, and turns what it gave into an outcome. `unrecorded` (a
 * batch's calls, which run side by side): the active time spent and not yet recorded in the run,
 * for the active-time deadline; one call alone has spent the time since it started.
 */
export async function runCall(
  run: ActorPorts,
  call: StepCall,
  abort: CallAbort,
  unrecorded?: () => number,
): Promise<ToolOutcome> {
  const tool = run.tools.get(call.tool);
  const recovered = run.takeRecovered(call.key);
  // Write ahead: a non-idempotent side effect in flight at a crash is not simply called again.
  const unsure = recovered && tool?.sideEffect === true && !tool.idempotent;
  const since = monotonic();
  // A side effect's call is durable before it is made, and so is a human's decision before it is
  // acted on. A crash simply re-runs any other call (its step is asked of the policy again), so
  // its record is saved with its result, by the next save, instead of before. A call whose
  // outcome is unsure is on record already (it was in flight).
  if (!unsure && guarded(tool, call)) {
    await run.beforeCall();
    // Cancelled while the write-ahead record was being made: the call never starts.
    if (abort.aborted) throw abort.signal.reason;
  }
  const span = startToolSpan(run.tracer, run.runSpan(), run.runId, call, tool, recovered);
  try {
    const outcome = unsure
      ? await recover(run, tool as Tool, call, abort, since, unrecorded)
      : await execute(run, call, abort, since, unrecorded);
    endToolSpan(span, outcome);
    return outcome;
  } catch (error) {
    span.fail(describeError(error));
    span.end();
    throw error;
  }
}

/**
 * A non-idempotent side effect that was in flight at a crash (or a take-over): its tool's
 * `verify` is asked whether it took effect. Done: its result is recorded, nothing runs. Not done:
 * it runs again under its approval while that is younger than the approval TTL, else a human is
 * asked again. Anything else (no `verify`, unknown, a throw, a timeout): a human decides.
 */
async function recover(
  run: ActorPorts,
  tool: Tool,
  call: StepCall,
  abort: CallAbort,
  since: number,
  unrecorded: (() => number) | undefined,
): Promise<ToolOutcome> {
  const at = () => isoTime(run.clock.now());
  if (typeof tool.verify !== 'function') return { type: 'outcome_unknown', at: at() };
  const started = run.clock.now();
  const verdict: Verdict = await verifyCall(run, tool, call, abort);
  if (abort.aborted) throw abort.signal.reason;
  if (verdict.kind === 'done') {
    const elapsedMs = Math.max(0, run.clock.now() - started);
    return { type: 'result', result: verdict.result, verified: true, elapsedMs, at: at() };
  }
  if (verdict.kind === 'notDone') {
    if (!approvalHolds(run, call)) return { type: 'outcome_unknown', at: at(), notDone: true };
    return execute(run, call, abort, since, unrecorded);
  }
  return { type: 'outcome_unknown', at: at() };
}

/** Makes the call, its write-ahead record made, and turns what it gave into an outcome. */
async function execute(
  run: ActorPorts,
  call: StepCall,
  abort: CallAbort,
  since: number,
  unrecorded: (() => number) | undefined,
): Promise<ToolOutcome> {
  const tool = run.tools.get(call.tool);
  const started = run.clock.now();
  const spent = () => Math.max(0, run.clock.now() - started);
  // The active time this call has spent that the run does not count yet (a batch: its own).
  const uncounted = unrecorded ?? spent;
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
    const ctx = { runId: run.runId, step: call.step, tool: call.tool, history: () => historyBeforeStep(run.history()) };
    if ((await approvalRule(tool, valid.value, ctx)).kind !== 'run') {
      return done({ error: `refused: ${call.tool} needs approval and this call has none` });
    }
  }
  // Cancelled while an async rule was deciding: the call never starts either.
  if (abort.aborted) throw abort.signal.reason;
  const left = activeLeft(run.remaining(), unrecorded?.() ?? 0);
  // Not started at all when the active-time budget is already spent: not running is always safe.
  if (left !== null && left <= 0) {
    return done({ error: `not run: the active-time budget (maxActiveMs) was spent before ${call.tool} started` });
  }
  const effect = guarded(tool, call);
  // The lease the effect starts under, confirmed by the store for this call (a lease that cannot
  // be stops the run here: the call never starts), and checked again, synchronously, right before
  // `fn` below: nothing but a pause of the process comes between that check and the call.
  const fence = effect ? await run.fence(since) : run.token();
  if (abort.aborted) throw abort.signal.reason;
  if (effect) run.fenceNow();
  // The tool's own timeout, and the active time left (read live: a budget extended meanwhile
  // moves the deadline), whichever ends first.
  const timeoutLeft = () => (tool.timeoutMs === undefined ? null : tool.timeoutMs - spent());
  const activeLeftNow = () => activeLeft(run.remaining(), uncounted());
  // The call's signal, read from its source only if the tool reads it (see task-actor.ts).
  const ctxOf = (source: SignalSource) => ({
    runId: run.runId,
    step: call.step,
    key: call.key,
    approvedCallId: call.approval?.callId ?? null,
    fence,
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
    // A side effect cut off by its deadline may have happened: a tool that can tell is asked.
    // Done → its result; unknown (or no answer) → a human decides; not done → the timeout is the
    // observation (the call had its chance and nothing happened; the model may ask again).
    if (isTimeout(error) && tool.sideEffect === true && !tool.idempotent && tool.verify) {
      const verdict = await verifyCall(run, tool, call, abort);
      if (abort.aborted) throw abort.signal.reason;
      if (verdict.kind === 'done') {
        return {
          type: 'result',
          result: verdict.result,
          verified: true,
          elapsedMs: spent(),
          at: isoTime(run.clock.now()),
        };
      }
      if (verdict.kind === 'unknown') {
        return { type: 'outcome_unknown', at: isoTime(run.clock.now()), elapsedMs: spent() };
      }
    }
    return done({ error: describeError(error) });
  }
}
