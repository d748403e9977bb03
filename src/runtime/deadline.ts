/**
 * Deadlines for calls in flight: a policy or tool call raced against a timer on the run's clock,
 * its signal aborted when the timer fires. One helper for the policy timeout, the tool timeout
 * and the active-time budget, so every call is bounded the same way.
 */
import { type Clock, MAX_TIMER_MS } from '../clock.js';

/** The error a deadline rejects with: recorded as `'TimeoutError: <message>'`. */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** The smallest of the given bounds (nulls are none), or null when there is none. */
export function earliest(...bounds: (number | null | undefined)[]): number | null {
  let least: number | null = null;
  for (const b of bounds) if (b !== null && b !== undefined && (least === null || b < least)) least = b;
  return least;
}

/** Where a call's signal comes from: read only by what uses it (a `CallAbort` makes it then). */
export interface SignalSource {
  readonly signal: AbortSignal;
}

/**
 * Runs `work` with a signal that aborts when `source`'s aborts or its deadline passes on `clock`,
 * whichever is first; on the deadline the returned promise rejects with `timeout()`'s error even
 * if `work` ignores its signal. `left()` says how long the call may still take (null: no limit);
 * it is asked again when the timer fires, so a limit raised while the call runs (a budget
 * extended) moves the deadline instead of cutting the call short. Without a deadline, `work`
 * gets `source` itself: no timers or controllers on the hot path, and its signal is read only if
 * the work reads it.
 */
export async function withDeadline<T>(
  work: (source: SignalSource) => Promise<T> | T,
  left: () => number | null,
  source: SignalSource,
  clock: Clock,
  timeout: () => Error,
): Promise<T> {
  const first = left();
  if (first === null) return await work(source);
  const parent = source.signal;
  const controller = new AbortController();
  const forward = () => controller.abort(parent.reason);
  if (parent.aborted) forward();
  else parent.addEventListener('abort', forward, { once: true });
  const timer = new AbortController();
  const arm = (ms: number): Promise<never> =>
    clock.sleep(Math.max(0, Math.min(ms, MAX_TIMER_MS)), timer.signal).then(() => {
      const more = left();
      if (more !== null && more > 0) return arm(more);
      const error = timeout();
      controller.abort(error);
      throw error;
    });
  try {
    const fired = arm(first);
    const running = Promise.resolve().then(() => work({ signal: controller.signal }));
    return await Promise.race([running, fired]);
  } finally {
    timer.abort();
    parent.removeEventListener('abort', forward);
  }
}
