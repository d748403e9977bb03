/**
 * `CheckedStore`: the base of a store that checks every argument once, alike in every store,
 * before the backend sees it. Each public method of the contract checks its arguments (run id,
 * write, lease, options; `OptionsError` naming the call and the bad value) and hands them, checked
 * and normalised, to the protected method of the same name with `Checked` after it, which is all a
 * backend writes. A backend that needs no base can still implement `CheckpointStore` and call the
 * same checks itself (arguments.ts, leases.ts, queue.ts).
 */
import { untilAborted } from '../abort.js';
import type { LeaseLostError } from '../errors.js';
import { checkListOptions, checkRunId, checkWrite } from './arguments.js';
import type {
  CheckpointStore,
  ClaimNextOptions,
  ClaimOptions,
  Lease,
  ListOptions,
  OpenedRun,
  RecordedDecision,
  RunSummary,
  RunWrite,
  StoredRun,
} from './contract.js';
import { checkClaim, checkLease, checkRenew, checkRenewMany, renewedOrLost } from './leases.js';
import { openByParts } from './open.js';
import { checkClaimNext, checkRecordedDecision } from './queue.js';

/** `claim`'s options as `checkClaim` returns them: `wait` given (0 by default), `process` known or null. */
export type CheckedClaim = ReturnType<typeof checkClaim>;
/** `claimNext`'s options as `checkClaimNext` returns them: `process` known or null. */
export type CheckedClaimNext = ReturnType<typeof checkClaimNext>;

/**
 * A `CheckpointStore` whose public methods check their arguments and call the backend's
 * `…Checked` methods. `watch` is left to the backend (it has nothing to check).
 *
 * @example
 * class MyStore extends CheckedStore {
 *   protected async loadChecked(runId: string) { ... } // runId is a string every store can keep
 *   // … one `…Checked` method for each operation
 * }
 */
export abstract class CheckedStore implements CheckpointStore {
  async load(runId: string): Promise<StoredRun | null> {
    checkRunId('load', runId);
    return this.loadChecked(runId);
  }

  async save(runId: string, write: RunWrite, expectedVersion: number, lease?: Lease): Promise<number> {
    const checked = checkWrite('save', runId, write, expectedVersion);
    if (lease !== undefined) checkLease('save', lease, runId);
    return this.saveChecked(runId, checked, expectedVersion, lease);
  }

  async list(options?: ListOptions): Promise<RunSummary[]> {
    // The backend reads the filters; the signal stops the caller's wait (a read changes nothing).
    const { signal, ...filters } = checkListOptions(options);
    return untilAborted(signal, this.listChecked(filters));
  }

  async summary(runId: string): Promise<RunSummary | null> {
    checkRunId('summary', runId);
    return this.summaryChecked(runId);
  }

  async delete(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean> {
    checkRunId('delete', runId);
    if (lease !== undefined) checkLease('delete', lease, runId);
    return this.deleteChecked(runId, expectedVersion, lease);
  }

  async claim(runId: string, options: ClaimOptions): Promise<Lease> {
    const checked = checkClaim(runId, options);
    // Stopped by its signal: a lease taken as it aborted is released.
    return untilAborted(checked.signal ?? undefined, this.claimChecked(runId, checked), (lease) => {
      void this.release(lease).catch(() => false);
    });
  }

  async open(runId: string, claim: ClaimOptions): Promise<OpenedRun | null> {
    const checked = checkClaim(runId, claim, 'open');
    return untilAborted(checked.signal ?? undefined, this.openChecked(runId, checked), (opened) => {
      if (opened?.lease) void this.release(opened.lease).catch(() => false);
    });
  }

  async renew(lease: Lease, leaseMs?: number): Promise<Lease> {
    return this.renewChecked(lease, checkRenew(lease, leaseMs));
  }

  async renewMany(leases: readonly Lease[], leaseMs?: number): Promise<(Lease | LeaseLostError)[]> {
    const lengths = checkRenewMany(leases, leaseMs);
    return this.renewManyChecked(leases, lengths);
  }

  async release(lease: Lease): Promise<boolean> {
    checkLease('release', lease);
    return this.releaseChecked(lease);
  }

  async queueDecision(runId: string, decision: RecordedDecision, expectedVersion: number): Promise<number> {
    const text = checkRecordedDecision(runId, decision, expectedVersion);
    return this.queueDecisionChecked(runId, text, expectedVersion);
  }

  async claimNext(options: ClaimNextOptions): Promise<{ lease: Lease; run: RunSummary } | null> {
    return this.claimNextChecked(checkClaimNext(options));
  }

  abstract close(): Promise<void>;

  protected abstract loadChecked(runId: string): Promise<StoredRun | null>;
  /** `write` is checked, its pending calls normalised (`checkWrite`); `lease` is a lease of this run. */
  protected abstract saveChecked(
    runId: string,
    write: RunWrite,
    expectedVersion: number,
    lease: Lease | undefined,
  ): Promise<number>;
  protected abstract listChecked(options: ListOptions): Promise<RunSummary[]>;
  protected abstract summaryChecked(runId: string): Promise<RunSummary | null>;
  protected abstract deleteChecked(
    runId: string,
    expectedVersion: number | undefined,
    lease: Lease | undefined,
  ): Promise<boolean>;
  protected abstract claimChecked(runId: string, claim: CheckedClaim): Promise<Lease>;
  /** `leaseMs`: the length to renew by, the lease's own when none was given. */
  protected abstract renewChecked(lease: Lease, leaseMs: number): Promise<Lease>;
  protected abstract releaseChecked(lease: Lease): Promise<boolean>;
  /** `decision`: the recorded decision as the JSON text the store keeps. */
  protected abstract queueDecisionChecked(runId: string, decision: string, expectedVersion: number): Promise<number>;
  protected abstract claimNextChecked(options: CheckedClaimNext): Promise<{ lease: Lease; run: RunSummary } | null>;

  /**
   * `open` made of the public `summary`, `claim`, `load`, `groupOf` and `release` (store/open.ts):
   * up to five calls, each its own step. A store that can read and claim in one step (one
   * transaction, one statement) overrides it, keeping the rules the contract gives `open`.
   */
  protected async openChecked(runId: string, claim: CheckedClaim): Promise<OpenedRun | null> {
    const { owner, leaseMs, wait, process, signal } = claim;
    return openByParts(this, runId, {
      owner,
      leaseMs,
      wait,
      ...(process === null ? {} : { process }),
      ...(signal === null ? {} : { signal }),
    });
  }

  /**
   * Each lease by `renew`, each outcome on its own (`leaseMs[i]` for `leases[i]`): through the
   * public method, so that whatever changes `renew` (a subclass, a test's wrapper) changes this
   * too. A store that can renew many at once (one statement, one transaction) overrides it.
   */
  protected async renewManyChecked(
    leases: readonly Lease[],
    leaseMs: readonly number[],
  ): Promise<(Lease | LeaseLostError)[]> {
    return Promise.all(leases.map((lease, i) => renewedOrLost(this.renew(lease, leaseMs[i]))));
  }
}
