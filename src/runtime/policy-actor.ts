/**
 * The policy actor: asks the policy for the next action, with bounded retries, a per-attempt
 * timeout and the active-time deadline, and classifies what comes back. It reaches its run only
 * through the ports it is handed.
 */
import { describeError } from '../../machines/describe-error.js';
import type { PolicyInput } from '../../machines/events.js';
import type { Decision, HistoryEntry } from '../../machines/types.js';
import { isoTime } from '../clock.js';
import type { PolicyDelta } from '../types.js';
import { readAction } from './classify.js';
import { earliest, type SignalSource, TimeoutError, withDeadline } from './deadline.js';
import { activeLeft } from './limits.js';
import { type ActorPorts, portsOf } from './ports.js';
import { answerTokens, chargedFields, chargeOf, policyCallShape, type Reservation, reserve } from './reserve.js';
import { retryAfterMs } from './retry-after.js';
import { unwrap, withElapsed } from './returned.js';
import { endPolicySpan, startPolicySpan } from './spans.js';
import { type CallAbort, fromTask } from './task-actor.js';
import type { Span } from './tracing.js';

const MAX_RETRY_DELAY_MS = 30_000;

export const policyActor = fromTask<Decision, PolicyInput>(async ({ input, abort, system }) => {
  const run = portsOf(system);
  // Not a durable point: under `durability: 'points'` a power cut may make this call again.
  await run.beforeCall(false);
  if (abort.aborted) throw abort.signal.reason;
  // What the call may spend, held against the run's budgets and its group's before it is made:
  // a call that does not fit is not made (reserve.ts).
  const reservation = await reserve(run, policyCallShape(run, run.view()), abort);
  if ('budget' in reservation) {
    const { budget, why } = reservation;
    return { type: 'exhausted', budget, why, usage: null, elapsedMs: 0, at: isoTime(run.clock.now()) };
  }
  const span = startPolicySpan(run.tracer, run.runSpan(), run.policy, input, run.remaining());
  const tries = { count: 0 };
  try {
    const { decision, model } = await decide(run, input, abort, span, tries, reservation);
    endPolicySpan(span, decision, tries.count, model);
    return decision;
  } catch (error) {
    if (reservation.group !== null) await run.group()?.giveBack();
    span.set({ 'tollgate.policy.attempts': tries.count });
    span.fail(describeError(error));
    span.end();
    throw error;
  }
});

/**
 * The policy's next action, tried again on a failure within the retries and budgets (`tries`
 * counts), and the model its usage says answered.
 */
async function decide(
  run: ActorPorts,
  input: PolicyInput,
  abort: CallAbort,
  span: Span,
  tries: { count: number },
  reservation: Reservation,
): Promise<{ decision: Decision; model: string | null }> {
  const started = run.clock.now();
  const spent = () => Math.max(0, run.clock.now() - started);
  // Read live: a budget extended while the call runs moves its deadline.
  const activeLeftNow = () => activeLeft(run.remaining(), spent());
  for (let attempt = 0; ; attempt++) {
    tries.count = attempt + 1;
    const remaining = run.remaining();
    const left = activeLeft(remaining, spent());
    // The back-off ran into the end of the active-time budget: no further try.
    if (left !== null && left <= 0) {
      throw withElapsed(new TimeoutError('policy stopped: the active-time budget (maxActiveMs) ran out'), spent());
    }
    const stream = (delta: PolicyDelta) => {
      if (live) run.delta(input.step, delta);
    };
    // The call's signal, read from its source only if the policy reads it (see task-actor.ts).
    const ctxOf = (source: SignalSource) => ({
      runId: input.runId,
      step: input.step,
      attempt,
      remaining: { ...remaining, activeMs: left },
      maxOutputTokens: reservation.maxOutputTokens,
      stream,
      get signal() {
        return source.signal;
      },
    });
    let raw: unknown;
    // A policy's stream is heard while its call is live: a late delta (after a timeout) is dropped.
    let live = true;
    try {
      const attemptStarted = spent();
      const attemptLeft = () => {
        const limit = run.policyTimeoutMs === null ? null : run.policyTimeoutMs - (spent() - attemptStarted);
        return earliest(limit, activeLeftNow());
      };
      ({ value: raw } = await withDeadline(
        (source) => unwrap(run.policy(run.view(), ctxOf(source))),
        attemptLeft,
        abort,
        run.clock,
        () =>
          new TimeoutError(
            (activeLeftNow() ?? 1) > 0
              ? `policy timed out after ${run.policyTimeoutMs} ms`
              : 'policy stopped: the active-time budget (maxActiveMs) ran out',
          ),
      ));
    } catch (error) {
      live = false;
      const timeLeft = activeLeftNow();
      if (abort.aborted || attempt >= run.policyRetries || (timeLeft !== null && timeLeft <= 0)) {
        throw withElapsed(error, spent());
      }
      // The back-off counts as active time, so it is cut short where the budget ends. A server's
      // retry-after (a rate limit) lengthens it, within the same cap.
      const backoff = Math.max(run.retryDelayMs * 2 ** attempt, retryAfterMs(error, run.clock.now()) ?? 0);
      const delay = earliest(Math.min(backoff, MAX_RETRY_DELAY_MS), timeLeft) ?? 0;
      span.event('tollgate.policy.retry', {
        'tollgate.policy.attempt': attempt + 1,
        'exception.message': describeError(error),
      });
      await run.clock.sleep(delay, abort.signal);
      continue;
    }
    // The rules get their own copy of the history, as the policy does: the live one grows in place.
    // One copy for the step's calls, made only if a rule is a function that could read it.
    live = false;
    let copy: readonly HistoryEntry[] | null = null;
    const history = () => (copy ??= run.history().slice());
    const site = {
      runId: input.runId,
      step: input.step,
      tools: run.tools,
      concurrency: run.concurrency,
      history,
      abort,
    };
    const { decision, usage: reported } = await readAction(raw, site);
    // Priced and settled here, not in the machine: the machine holds no functions and only adds
    // the numbers. Missing or unreadable usage is charged at the estimate; never past the hold.
    const output = answerTokens(decision as never);
    const charge = chargeOf(reported, reported !== undefined, run.price, reservation, output, run.remaining());
    await run.group()?.settle(charge.tokens, charge.cost);
    const now = run.clock.now();
    return {
      decision: { ...decision, ...chargedFields(charge), elapsedMs: Math.max(0, now - started), at: isoTime(now) },
      model: charge.model,
    };
  }
}
