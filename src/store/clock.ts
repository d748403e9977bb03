/** The store's clock: now, checked to be a time, and `updatedAt` as ISO-8601. */
import { isoTime } from '../clock.js';
import { OptionsError } from '../errors.js';
import { showValue } from '../option-keys.js';

/**
 * `updatedAt` for a save: the store's clock as an ISO-8601 string.
 * @throws OptionsError when the injected clock returns something that is not a time.
 */
export function timestampOf(now: () => number, call = 'save'): string {
  return isoTime(nowOf(now, call));
}

/** The largest time a `Date` holds, in ms either side of the epoch (ECMA-262 TimeClip). */
const MAX_TIME_MS = 8.64e15;

/**
 * The store's clock now, in ms since the epoch (leases, expiry).
 * @throws OptionsError naming `call` when the injected clock returns something that is not a time.
 */
export function nowOf(now: () => number, call: string): number {
  const ms = now();
  // A time a Date can hold (what `new Date(ms)` does not make NaN), checked without making one.
  if (typeof ms !== 'number' || !(Math.abs(ms) <= MAX_TIME_MS)) {
    throw new OptionsError(`${call}: the store's now() returned ${showValue(ms)}, not milliseconds since the epoch`);
  }
  return ms;
}
