/**
 * The order in which `claimNext` hands out runnable runs, shared by every store. A run whose
 * decision a human has recorded (or whose approval has expired) comes first: someone is waiting on
 * it. A run whose owner died mid-run (its lease lapsed) comes next: it was started, and its work is
 * in flight. Runs never claimed come last. Within a class, the oldest first (`list` order).
 *
 * A stream of decisions and take-overs must not starve the new runs, so a store object takes the
 * oldest runnable run whatever its class on every `OLDEST_EVERY`-th claim: after
 * `OLDEST_EVERY - 1` claims in a row by class, its next claim takes the oldest. New runs get at
 * least one claim in `OLDEST_EVERY` of every store object, however busy the others are.
 */
import type { RunSummary } from './contract.js';
import type { LeaseRecord } from './leases.js';
import { isRunnable } from './queue.js';

/** A store object takes the oldest runnable run, whatever its class, at least once in this many claims. */
export const OLDEST_EVERY = 4;

/** `claimNext`'s classes, first taken first. */
export const CLAIM_CLASSES = ['decided', 'lapsed', 'new'] as const;
export type ClaimClass = (typeof CLAIM_CLASSES)[number];

/**
 * The class of a runnable run at the store's `now` (ms), given its lease record (null: never
 * claimed): `decided` (awaiting approval with a recorded decision or an expired pending call),
 * `lapsed` (running, its holder's lease ran out without a release: the owner died or was cut off),
 * or `new` (running, never claimed, or given up by a release). Null when it is not runnable.
 */
export function claimClass(
  run: Pick<RunSummary, 'status' | 'decision' | 'pendingCalls'>,
  lease: LeaseRecord | null,
  now: number,
): ClaimClass | null {
  if (!isRunnable(run, now)) return null;
  if (run.status === 'awaiting_approval') return 'decided';
  const lapsed = lease !== null && lease.owner !== null && lease.expiresAt !== null && lease.expiresAt <= now;
  return lapsed ? 'lapsed' : 'new';
}

/** The rank of a class in the claim order: 0 is taken first. */
export const rankOf = (c: ClaimClass): number => CLAIM_CLASSES.indexOf(c);

/** A store object's count of claims by class since its last claim of the oldest run. */
export class ClaimTurns {
  #byClass = 0;

  /** Whether the next claim takes the oldest runnable run, whatever its class. */
  get oldestFirst(): boolean {
    return this.#byClass >= OLDEST_EVERY - 1;
  }

  /** A claim was made, the oldest-first way (`oldestFirst` when it was chosen) or by class. */
  claimed(oldestFirst: boolean): void {
    this.#byClass = oldestFirst ? 0 : this.#byClass + 1;
  }
}
