/**
 * The tools actor: runs a batch of the step's concurrent calls (pure tools needing no approval,
 * machines/calls.ts `nextBatch`), at most the Agent's `concurrency` at a time, each by the tool
 * actor's rules (its own timeout and deadline, its result checked). As each call ends, its outcome
 * goes to the machine (`CALL_DONE`), which records it at once; the step's record orders them by
 * call. The calls are the run's running ones when the actor starts: a batch resumed after a crash
 * runs only the calls that had no outcome.
 *
 * Active time: calls side by side spend the batch's time once, not each its own. Each outcome
 * carries the time since the batch's previous one (so the run counts the batch's wall time), and
 * each call's active-time deadline reads the time the batch spent that the run does not count yet.
 */
import { describeError } from '../../machines/describe-error.js';
import type { ToolsInput } from '../../machines/events.js';
import type { StepCall, ToolOutcome } from '../../machines/types.js';
import { isoTime } from '../clock.js';
import { portsOf } from './ports.js';
import { fromTask } from './task-actor.js';
import { guarded, runCall } from './tool-actor.js';

export const toolsActor = fromTask<null, ToolsInput>(async ({ abort, system, self }) => {
  const run = portsOf(system);
  // The context holds the calls of the step in progress only: its running ones are the batch.
  const calls = run.calls().filter((c) => c.state === 'running');
  const started = run.clock.now();
  /** The batch's time the run has been told of, in ms since it started. */
  let counted = 0;
  const unrecorded = () => Math.max(0, run.clock.now() - started - counted);
  const report = (call: StepCall, outcome: ToolOutcome) => {
    // Stopped (cancelled, or the run halted here): the outcome is nobody's.
    if (abort.aborted) return;
    const elapsedMs = unrecorded();
    counted += elapsedMs;
    self._parent?.send({ type: 'CALL_DONE', key: call.key, output: { ...outcome, elapsedMs } });
  };
  const one = async (call: StepCall) => {
    let outcome: ToolOutcome;
    try {
      outcome = await runCall(run, call, abort, unrecorded);
    } catch (error) {
      if (abort.aborted) return;
      // The runtime failed running it, not the tool: an error observation, as for one call.
      outcome = { type: 'error', error: describeError(error), elapsedMs: 0, at: isoTime(run.clock.now()) };
    }
    report(call, outcome);
  };
  // A call that must be on record before it runs never runs side by side with another (a tool
  // set changed at resume, or a forged checkpoint): it runs after the others, one at a time.
  const together = calls.filter((c) => !guarded(run.tools.get(c.tool), c));
  const alone = calls.filter((c) => guarded(run.tools.get(c.tool), c));
  let next = 0;
  const lane = async () => {
    while (next < together.length && !abort.aborted) await one(together[next++] as StepCall);
  };
  await Promise.all(Array.from({ length: Math.min(run.concurrency, together.length) }, lane));
  for (const call of alone) {
    if (abort.aborted) break;
    await one(call);
  }
  return null;
});
