/**
 * A run's pending calls as every store reads them back and filters on them: the list (and its
 * first), the earliest expiry, and `list({ expired })`'s test.
 */
import type { PendingCall } from '../../machines/types.js';

/**
 * The earliest `expiresAt` of `calls` in ms since the epoch, or null when none expires (null,
 * or not a time: `checkWrite` lets no such value into a store, but a row may predate it): what
 * `list({ expired })` compares with the store's now (a run has an expired call exactly when its
 * earliest expiry is at or before now).
 */
export function earliestExpiry(calls: readonly PendingCall[]): number | null {
  let earliest: number | null = null;
  for (const call of calls) {
    const at = typeof call.expiresAt === 'string' ? Date.parse(call.expiresAt) : Number.NaN;
    if (Number.isFinite(at) && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}

/** Whether `list({ expired })` keeps a run whose earliest expiry is `earliest` (ms or null), at `now`. */
export function matchesExpired(expired: boolean | undefined, earliest: number | null, now: number): boolean {
  return expired === undefined || expired === (earliest !== null && earliest <= now);
}

/**
 * The pending calls a store read back: a JSON array (written since runs have several), one
 * object (written by earlier versions, which kept one pending call), or nothing.
 */
export function pendingCallsOf(stored: unknown): PendingCall[] {
  if (stored === null || stored === undefined) return [];
  return Array.isArray(stored) ? (stored as PendingCall[]) : [stored as PendingCall];
}

/** A run's two views of its pending calls: the list, and its first (derived, for one-call code). */
export function pendingFields(calls: PendingCall[]): { pendingCalls: PendingCall[]; pending: PendingCall | null } {
  return { pendingCalls: calls, pending: calls[0] ?? null };
}
