/**
 * A tool's `verify`: asked, when a side effect's outcome is unknown (it was in flight at a crash
 * or a take-over, or it timed out), whether it took effect. Its answer is hostile input like any
 * tool's: anything but `{ done: <JSON> }` or `{ notDone: true }` — a throw, a timeout, a value of
 * another shape — means unknown, and a human decides (fail closed).
 */
import { describeError } from '../../machines/describe-error.js';
import type { Json, StepCall } from '../../machines/types.js';
import { isPlainObject, toJson } from '../json.js';
import { validateArgs } from '../tool-schema.js';
import type { Tool } from '../types.js';
import { type SignalSource, TimeoutError, withDeadline } from './deadline.js';
import type { ActorPorts } from './ports.js';
import { unwrap } from './returned.js';
import type { CallAbort } from './task-actor.js';

/** How long a `verify` may take when its tool has no `timeoutMs`. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 30_000;

/** What `verify` said, as the runtime read it. */
export type Verdict = { kind: 'done'; result: Json } | { kind: 'notDone' } | { kind: 'unknown'; why: string };

/** Reads an answer of `verify`, never throwing. */
function verdictOf(answer: unknown): Verdict {
  try {
    if (!isPlainObject(answer)) return { kind: 'unknown', why: 'verify did not answer an object' };
    const keys = Object.keys(answer);
    if (keys.length === 1 && keys[0] === 'notDone' && answer.notDone === true) return { kind: 'notDone' };
    if (keys.length === 1 && keys[0] === 'done') {
      const json = toJson(answer.done, 'result');
      return json.ok
        ? { kind: 'done', result: json.value }
        : { kind: 'unknown', why: `verify's result: ${json.reason}` };
    }
    return { kind: 'unknown', why: 'verify answered neither { done: result } nor { notDone: true }' };
  } catch (error) {
    return { kind: 'unknown', why: `verify's answer could not be read: ${describeError(error)}` };
  }
}

/**
 * Asks `tool.verify` about `call`, with the arguments that ran (the approver's edit, or the
 * model's, through the tool's schema as `fn` gets them), the key, the run's fencing token and a
 * signal, within the tool's `timeoutMs` (or `DEFAULT_VERIFY_TIMEOUT_MS`).
 */
export async function verifyCall(run: ActorPorts, tool: Tool, call: StepCall, abort: CallAbort): Promise<Verdict> {
  const verify = tool.verify;
  if (typeof verify !== 'function') return { kind: 'unknown', why: 'the tool has no verify' };
  const valid = await validateArgs(tool, call.approval?.args ?? call.args, abort);
  if (!valid.ok) return { kind: 'unknown', why: valid.error };
  const limit = tool.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS;
  const started = run.clock.now();
  const fence = run.token();
  try {
    const { value } = await withDeadline(
      (source: SignalSource) =>
        unwrap(
          verify({
            key: call.key,
            args: valid.value,
            fence,
            runId: run.runId,
            step: call.step,
            get signal() {
              return source.signal;
            },
          }),
        ),
      () => limit - (run.clock.now() - started),
      abort,
      run.clock,
      () => new TimeoutError(`verify of ${tool.name} timed out after ${limit} ms`),
    );
    return verdictOf(value);
  } catch (error) {
    return { kind: 'unknown', why: describeError(error) };
  }
}
