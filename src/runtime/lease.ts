/**
 * One run's lease on its store: claimed before the run's first save in this process, renewed
 * while the run works (also during a long policy or tool call), released when it settles. Every
 * save carries it, so a worker that lost its lease fails its write-ahead save and never calls a
 * policy or tool after (ARCHITECTURE.md, "Scale-out").
 */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { CheckpointStore, Lease } from '../store.js';

/** How a run holds its lease: who it is, how long a lease lasts, how long to wait for a busy run. */
export interface LeaseTerms {
  owner: string;
  leaseMs: number;
  /** Wait this long for another owner's lease to end when claiming; 0: fail at once. */
  waitMs: number;
}

/** The default lease length: long enough to ride out a slow save, short enough to take over a dead worker's run soon. */
export const DEFAULT_LEASE_MS = 30_000;

/** An owner id unique to this holder: the host, the process and a random part. */
export function ownerId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

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

  /** Takes a lease claimed elsewhere (by `Agent.load`, before it read the run). */
  adopt(lease: Lease): void {
    this.#lease = lease;
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
