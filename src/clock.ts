/**
 * Time, injectable. The runtime reads the time for budgets and approval expiry, and waits for
 * retries and tool timeouts, only through a `Clock`, so tests drive time by hand
 * (`ManualClock` in `tollgate/testing`) and never sleep to wait for a deadline.
 */

/**
 * The longest timer Node keeps: a larger delay fires after 1 ms (and warns), so every duration
 * that becomes a timer is bounded by this at the options check and clamped where it is set.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason if the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('aborted', 'AbortError');
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal as AbortSignal));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

/** The last time written by `isoTime`: a step's calls and its policy call often share a millisecond. */
let lastIso = { ms: Number.NaN, text: '' };

/** `ms` as an ISO 8601 time (`new Date(ms).toISOString()`, ~0.6 µs, made once per millisecond). */
export function isoTime(ms: number): string {
  if (ms === lastIso.ms) return lastIso.text;
  const text = new Date(ms).toISOString();
  lastIso = { ms, text };
  return text;
}
