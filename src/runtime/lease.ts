import type { LeaseTerms } from '../options.js';
import type { CheckpointStore, Lease } from '../store.js';

export class LeaseHolder {
  readonly #store: CheckpointStore;
  readonly #runId: string;
  readonly #terms: LeaseTerms;
  readonly #onLost: (error: unknown) => void;
  #lease: Lease | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #renewing: Promise<void> | null = null;

  constructor(store: CheckpointStore, runId: string, terms: LeaseTerms, onLost: (error: unknown) => void) {
    this.#store = store;
    this.#runId = runId;
    this.#terms = terms;
    this.#onLost = onLost;
  }

  get lease(): Lease | null {
    return this.#lease;
  }

  /** The lease to save with: claimed now if this holder has none. Throws `RunBusyError` if another owner holds the run. */
  async current(): Promise<Lease> {
    if (this.#lease) return this.#lease;
    const { owner, leaseMs, waitMs } = this.#terms;
    const lease = await this.#store.claim(this.#runId, { owner, leaseMs, ...(waitMs > 0 ? { wait: waitMs } : {}) });
    this.#lease = lease;
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
    return this.#lease !== null && this.#timer === null;
  }

  /**
   * The run is being worked: a lease adopted at load is renewed now — so an agent that was left
   * loaded past its lease, and lost the run meanwhile, learns it before it calls anything — and
   * from then on, until released or lost.
   * @throws LeaseLostError (or the store's error) when the lease is no longer the run's.
   */
  async keep(): Promise<void> {
    const lease = this.#lease;
    if (!lease || this.#timer) return;
    let renewed: Lease;
    try {
      renewed = await this.#store.renew(lease, this.#terms.leaseMs);
    } catch (error) {
      if (this.#lease === lease) this.#lease = null;
      throw error;
    }
    if (this.#lease !== lease) return; // given up meanwhile: nothing to keep
    this.#lease = renewed;
    this.#keepRenewed();
  }

  /** A save extended the lease: remember its new end. */
  extended(lease: Lease): void {
    if (this.#lease && this.#lease.token === lease.token) this.#lease = lease;
  }

  /** Renewed by duration, a third of the lease each time: two renewals may fail before it lapses. */
  #keepRenewed(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#renew(), Math.max(1, Math.floor(this.#terms.leaseMs / 3)));
    this.#timer.unref?.();
  }

  async #renew(): Promise<void> {
    const lease = this.#lease;
    if (!lease || this.#renewing) return;
    this.#renewing = this.#store
      .renew(lease, this.#terms.leaseMs)
      .then((renewed) => {
        if (this.#lease === lease) this.#lease = renewed;
      })
      .catch((error) => {
        // Lost (or the store unreachable past the lease): this process may not work the run.
        this.#stop();
        this.#lease = null;
        this.#onLost(error);
      })
      .finally(() => {
        this.#renewing = null;
      });
    await this.#renewing;
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Gives the run up (it settled): others may claim it at once. Never throws. */
  async release(): Promise<void> {
    this.#stop();
    const lease = this.#lease;
    this.#lease = null;
    if (!lease) return;
    await this.#renewing?.catch(() => {});
    await this.#store.release(lease).catch(() => false);
  }
}
