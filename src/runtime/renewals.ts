/**
 * The periodic renewals of every lease this process holds on one store with one lease length, made
 * together: one timer, and one call per interval (`store.renewMany`: one statement on Postgres, one
 * transaction on SQLite) instead of one per run. A worker with many runs in hand, or a service with
 * many agents, then renews them all in one round trip every third of the lease. A store without
 * `renewMany` gets one `renew` per lease, as before.
 *
 * Each holder keeps its own bookkeeping (lease.ts): it hears of its own renewal's result, with the
 * time the call was sent, and gives its lease up when a renewal is refused or none was accepted
 * within the lease. At most one call is in flight per batch: a slow store gets no pile of them.
 */
import type { LeaseLostError } from '../errors.js';
import type { CheckpointStore, Lease } from '../store/contract.js';
import { monotonic } from './monotonic.js';

/** A holder in a batch: asked for its lease at each interval, told how its renewal went. */
export interface Renewing {
  /**
   * The lease to renew now, or null. Called at every interval, even while a renewal is in flight:
   * it is where a holder notices that none was accepted within its lease.
   */
  due(): Lease | null;
  /** The renewal of `lease`, sent at `sent` (monotonic), came back: renewed, lost, or the store failed. */
  answered(lease: Lease, sent: number, result: Lease | LeaseLostError | { failed: unknown }): void;
  /** The renewal that holds this holder's lease is on its way (released once it is answered). */
  sending(renewal: Promise<void>): void;
}

/** The batches of each store, by lease length; a batch goes once its last holder leaves. */
const batches = new WeakMap<CheckpointStore, Map<number, Renewals>>();

export class Renewals {
  readonly #store: CheckpointStore;
  readonly #leaseMs: number;
  readonly #members = new Set<Renewing>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #inFlight = false;

  private constructor(store: CheckpointStore, leaseMs: number) {
    this.#store = store;
    this.#leaseMs = leaseMs;
  }

  /** The batch of `store`'s leases of length `leaseMs`. */
  static of(store: CheckpointStore, leaseMs: number): Renewals {
    let byLength = batches.get(store);
    if (!byLength) {
      byLength = new Map();
      batches.set(store, byLength);
    }
    let batch = byLength.get(leaseMs);
    if (!batch) {
      batch = new Renewals(store, leaseMs);
      byLength.set(leaseMs, batch);
    }
    return batch;
  }

  /** `member` is renewed with the batch from the next interval on. */
  join(member: Renewing): void {
    this.#members.add(member);
    if (this.#timer) return;
    // A third of the lease: two renewals may fail before it lapses.
    this.#timer = setInterval(() => this.#tick(), Math.max(1, Math.floor(this.#leaseMs / 3)));
    this.#timer.unref?.();
  }

  /** `member` is renewed no more; the batch's timer stops with its last member. */
  leave(member: Renewing): void {
    this.#members.delete(member);
    if (this.#members.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = null;
    batches.get(this.#store)?.delete(this.#leaseMs);
  }

  #tick(): void {
    const due: [Renewing, Lease][] = [];
    for (const member of [...this.#members]) {
      const lease = member.due();
      if (lease) due.push([member, lease]);
    }
    if (this.#inFlight || due.length === 0) return;
    this.#inFlight = true;
    const sent = monotonic();
    const renewal = this.#send(due.map(([, lease]) => lease))
      .then(
        (results) => {
          for (const [i, [member, lease]] of due.entries()) {
            const missing = { failed: new Error(`renewMany answered ${results.length} leases of ${due.length}`) };
            member.answered(lease, sent, results[i] ?? missing);
          }
        },
        (error: unknown) => {
          for (const [member, lease] of due) member.answered(lease, sent, { failed: error });
        },
      )
      .finally(() => {
        this.#inFlight = false;
      });
    for (const [member] of due) member.sending(renewal);
  }

  /** One call for all (`renewMany`), or, on a store without it, one `renew` each. */
  #send(leases: Lease[]): Promise<(Lease | LeaseLostError | { failed: unknown })[]> {
    const store = this.#store;
    if (store.renewMany) return store.renewMany(leases, this.#leaseMs);
    return Promise.all(
      leases.map((lease) => store.renew(lease, this.#leaseMs).catch((error: unknown) => ({ failed: error }))),
    );
  }
}
