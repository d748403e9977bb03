/**
 * A run's side of its lease: claimed before the first save (a provably dead holder's lease released
 * first: `claimRun`), renewed by a third of the lease while the run is worked — together with every
 * lease of that length this process holds on the store (renewals.ts) — and given up when it
 * settles. It also knows how much of the lease is left for sure: every claim, renewal and save the
 * store accepted confirms the lease until the moment it was *sent* plus the lease's length, on this
 * process's monotonic clock — a lower bound whatever the store's clock says, and one that a pause
 * of this process (SIGSTOP, a long GC, a VM moved) runs down. A side effect starts only while at
 * least `EFFECT_MARGIN` of the lease is left that way (docs/workers.md, "Fencing").
 */
import { LeaseLostError, RunBusyError } from '../errors.js';
import type { LeaseTerms } from '../options.js';
import { provablyDead, thisProcess } from '../process-identity.js';
import type { CheckpointStore, ClaimOptions, Lease, OpenedRun } from '../store/contract.js';
import { openByParts } from '../store/open.js';
import { monotonic } from './monotonic.js';
import { Renewals, type Renewing } from './renewals.js';

export { monotonic } from './monotonic.js';

/** The share of the lease that must be left, by this process's clock, when a side effect starts. */
export const EFFECT_MARGIN = 1 / 3;

/**
 * Claims `runId` on the terms of a run (its process recorded with the lease). A run held by a
 * process that is provably dead on this machine (crashed, killed) is not waited for: exactly that
 * lease is released — by its token, so a release that comes after anyone else's claim changes
 * nothing — and the run claimed at once. A live holder, or one whose death cannot be proven (on
 * another machine, boot or pid namespace), is waited for up to `waitMs`, then `RunBusyError`.
 */
export function claimRun(store: CheckpointStore, runId: string, terms: LeaseTerms): Promise<Lease> {
  return pastDeadHolder(store, runId, terms, (options) => store.claim(runId, options));
}

/**
 * What `Agent.load` needs of `runId` (`CheckpointStore.open`: the run, the lease of a run found
 * `running`, its group; null for no run), claimed on the terms of a run as `claimRun` claims: one
 * call on a store with `open` — a provably dead holder costs a release and a second call — and
 * the calls it is made of on a store without it (store/open.ts).
 */
export function openRun(
  store: CheckpointStore,
  runId: string,
  terms: LeaseTerms,
  signal?: AbortSignal,
): Promise<OpenedRun | null> {
  return pastDeadHolder(store, runId, terms, (options) => {
    // A claim that waits out another owner stops at the caller's signal.
    const claim = signal === undefined ? options : { ...options, signal };
    return store.open ? store.open(runId, claim) : openByParts(store, runId, claim);
  });
}

/** `attempt` (a claim, or an open), tried again at once past a provably dead holder, else within `waitMs`. */
async function pastDeadHolder<T>(
  store: CheckpointStore,
  runId: string,
  terms: LeaseTerms,
  attempt: (options: ClaimOptions) => Promise<T>,
): Promise<T> {
  const { owner, leaseMs, waitMs } = terms;
  const options = { owner, leaseMs, process: thisProcess() };
  try {
    return await attempt(options);
  } catch (error) {
    if (!(error instanceof RunBusyError)) throw error;
    const dead = error.token !== null && provablyDead(error.holderProcess);
    if (dead) await store.release(heldLease(runId, error));
    else if (waitMs === 0) throw error;
    return attempt(waitMs > 0 ? { ...options, wait: waitMs } : options);
  }
}

/** The holder's lease as `release` takes it: only its token decides (the length is not read). */
function heldLease(runId: string, busy: RunBusyError): Lease {
  return { runId, owner: busy.holder, token: busy.token as number, expiresAt: busy.until, leaseMs: 1 };
}

export class LeaseHolder {
  readonly #store: CheckpointStore;
  readonly #runId: string;
  readonly #terms: LeaseTerms;
  readonly #onLost: (error: unknown) => void;
  #lease: Lease | null = null;
  /** The batch this holder's lease is renewed with, while it is kept renewed. */
  #renewals: Renewals | null = null;
  #renewing: Promise<void> | null = null;
  /** How the batch of renewals asks this holder and tells it (renewals.ts). */
  readonly #member: Renewing = {
    due: () => this.#due(),
    answered: (lease, sent, result) => this.#answered(lease, sent, result),
    sending: (renewal) => {
      const mine = renewal.finally(() => {
        if (this.#renewing === mine) this.#renewing = null;
      });
      this.#renewing = mine;
    },
  };
  /** When (monotonic) the last statement the store accepted for this lease was sent, and for how long it holds. */
  #confirmedAt = Number.NEGATIVE_INFINITY;
  #confirmedFor = 0;

  constructor(store: CheckpointStore, runId: string, terms: LeaseTerms, onLost: (error: unknown) => void) {
    this.#store = store;
    this.#runId = runId;
    this.#terms = terms;
    this.#onLost = onLost;
  }

  get lease(): Lease | null {
    return this.#lease;
  }

  /**
   * The lease to save with: claimed now if this holder has none (`claimRun`: a provably dead
   * holder's lease is released first). Throws `RunBusyError` if another live owner holds the run.
   */
  async current(): Promise<Lease> {
    if (this.#lease) return this.#lease;
    const sent = monotonic();
    const lease = await claimRun(this.#store, this.#runId, this.#terms);
    this.#lease = lease;
    this.#confirmed(sent, lease.leaseMs);
    this.#keepRenewed();
    return lease;
  }

  /**
   * Takes a lease claimed elsewhere (by `Agent.load`, before it read the run), not renewed until
   * the run is worked (`keep`): an agent loaded and never run lets it lapse, as a dead process
   * would, instead of holding the run for as long as this process lives.
   */
  adopt(lease: Lease): void {
    this.#lease = lease;
  }

  /** A lease is held but not yet renewed by this holder (adopted at load, the run not yet worked). */
  get unconfirmed(): boolean {
    return this.#lease !== null && this.#renewals === null;
  }

  /**
   * The run is being worked: a lease adopted at load is renewed now — so an agent that was left
   * loaded past its lease, and lost the run meanwhile, learns it before it calls anything — and
   * from then on, until released or lost.
   * @throws LeaseLostError (or the store's error) when the lease is no longer the run's.
   */
  async keep(): Promise<void> {
    const lease = this.#lease;
    if (!lease || this.#renewals) return;
    let renewed: Lease;
    const sent = monotonic();
    try {
      renewed = await this.#store.renew(lease, this.#terms.leaseMs);
    } catch (error) {
      if (this.#lease === lease) this.#lease = null;
      throw error;
    }
    if (this.#lease !== lease) return; // given up meanwhile: nothing to keep
    this.#lease = renewed;
    this.#confirmed(sent, renewed.leaseMs);
    this.#keepRenewed();
  }

  /** A save made with `lease`, sent at `sent` (monotonic), was accepted: it extended the lease. */
  saved(lease: Lease, sent: number): void {
    if (this.#lease && this.#lease.token === lease.token) this.#confirmed(sent, lease.leaseMs);
  }

  /**
   * The store refused an operation made under the lease (a group hold): the run is another
   * owner's, or nobody's, now. Given up as lost when it names the lease held (the run stops in
   * this process); a refusal of a lease given up or claimed anew since changes nothing.
   */
  refused(error: LeaseLostError): void {
    if (this.#lease && this.#lease.token === error.token) this.#lose(error);
  }

  /** A save extended the lease: remember its new end. */
  extended(lease: Lease): void {
    if (this.#lease && this.#lease.token === lease.token) this.#lease = lease;
  }

  /** Milliseconds of the lease left for sure, by this process's clock (negative once it may have lapsed). */
  get left(): number {
    return this.#confirmedAt + this.#confirmedFor - monotonic();
  }

  /**
   * The lease a side effect may start under: confirmed by the store by a statement sent at or
   * after `since` (the call's write-ahead save, or else a renewal made now), with at least
   * `EFFECT_MARGIN` of it left. A lease that cannot be confirmed so is given up as lost (the run
   * stops in this process) and the call must not start.
   * @throws LeaseLostError (or the store's error) when the lease is not confirmed.
   */
  async fence(since: number): Promise<Lease> {
    const lease = this.#lease;
    if (lease && (this.#confirmedAt < since || !this.#enoughLeft())) {
      const sent = monotonic();
      try {
        const renewed = await this.#store.renew(lease, this.#terms.leaseMs);
        if (this.#lease === lease) {
          this.#lease = renewed;
          this.#confirmed(sent, renewed.leaseMs);
        }
      } catch (error) {
        throw this.#lose(error);
      }
    }
    return this.fenceNow();
  }

  /**
   * The lease, checked again right before the effect starts (synchronously: nothing can run
   * between this check and the call but the process being paused, which is what the fence
   * token is for downstream).
   * @throws LeaseLostError when it is gone or too close to its end: the run stops in this process.
   */
  fenceNow(): Lease {
    const lease = this.#lease;
    if (lease && this.#enoughLeft()) return lease;
    const left = Math.round(this.left);
    const why = lease
      ? `only ${left} ms of its ${lease.leaseMs} ms lease was left for sure on this process's clock (a side effect needs a third)`
      : 'this process holds no lease on the run';
    const token = lease?.token ?? 0;
    throw this.#lose(
      new LeaseLostError(
        `run ${JSON.stringify(this.#runId)}: a side effect was not started: ${why}; the run stops in this process, and whoever claims it next applies the crash rules`,
        token,
        lease ? token : null,
        lease?.owner ?? null,
        { runId: this.#runId },
      ),
    );
  }

  #enoughLeft(): boolean {
    return this.left >= (this.#lease?.leaseMs ?? this.#terms.leaseMs) * EFFECT_MARGIN;
  }

  #confirmed(sent: number, leaseMs: number): void {
    if (sent + leaseMs >= this.#confirmedAt + this.#confirmedFor) {
      this.#confirmedAt = sent;
      this.#confirmedFor = leaseMs;
    }
  }

  /** The lease is lost (or cannot be trusted): stop renewing, hold nothing, tell the run once. */
  #lose(error: unknown): unknown {
    this.#stop();
    this.#lease = null;
    this.#onLost(error);
    return error;
  }

  /**
   * Renewed by duration, a third of the lease each time (two renewals may fail before it lapses),
   * together with every other lease of this length that this process holds on the store.
   */
  #keepRenewed(): void {
    if (this.#renewals) return;
    this.#renewals = Renewals.of(this.#store, this.#terms.leaseMs);
    this.#renewals.join(this.#member);
  }

  /** The lease to renew at this interval, or null (none held, or given up just now). */
  #due(): Lease | null {
    const lease = this.#lease;
    if (!lease) return null;
    // No renewal was accepted within the lease (the store hangs, or this process was paused past
    // it): another owner may hold the run now. Given up, so the calls in flight are told (their
    // signals abort) and nothing more starts here.
    if (this.left <= 0) {
      this.#lose(
        new LeaseLostError(
          `run ${JSON.stringify(this.#runId)}: the lease of ${JSON.stringify(lease.owner)} (token ${lease.token}) was not renewed in time and may have been taken; the run stops in this process`,
          lease.token,
          null,
          null,
          { runId: this.#runId },
        ),
      );
      return null;
    }
    return lease;
  }

  #answered(lease: Lease, sent: number, result: Lease | LeaseLostError | { failed: unknown }): void {
    if (this.#lease !== lease) return; // given up, or claimed anew, meanwhile
    const lost = result instanceof LeaseLostError ? result : 'failed' in result ? result.failed : null;
    // Refused: the run is another owner's now, and this process may not work it.
    if (lost instanceof LeaseLostError) this.#lose(lost);
    // The store failed (one statement renews every lease of the batch: one bad moment must not cost
    // them all): tried again at the next interval, and given up if none is accepted within the lease.
    else if (lost !== null) return;
    else {
      this.#lease = result as Lease;
      this.#confirmed(sent, (result as Lease).leaseMs);
    }
  }

  #stop(): void {
    this.#renewals?.leave(this.#member);
    this.#renewals = null;
  }

  /** Gives the run up (it settled): others may claim it at once. Never throws. */
  async release(): Promise<void> {
    this.#stop();
    const lease = this.#lease;
    this.#lease = null;
    this.#confirmedAt = Number.NEGATIVE_INFINITY;
    if (!lease) return;
    await this.#renewing?.catch(() => {});
    await this.#store.release(lease).catch(() => false);
  }
}
