/**
 * A `CheckpointStore` in a directory: `tollgate/file`. No database, one machine, durable.
 *
 * Each run has a directory with a small head file and an append-only journal of its entries.
 * A save, under the run's lock: append the new entries to the journal and fsync it; then
 * replace the head (which records the version and how many journal bytes belong to the run)
 * by writing a temp file, fsyncing it, renaming it over, and fsyncing the directory. The rename
 * is the commit: a crash before it leaves the old head, which ignores the torn journal tail.
 * A save costs O(new entries + head), whatever the history's length.
 *
 * Leases: the run's lock file serialises claims, renewals, releases and saves; the lease record
 * (token, owner, expiry) lives in the head's metadata, or in `lease.json` while the run has no
 * head (file/lease.ts). A save checks and extends it under the same lock as the version. The
 * agent's name and a recorded decision live in the head's metadata too; `queueDecision` and
 * `claimNext` are in file/queue.ts. `watch` hears this process only.
 *
 * Reads take no lock: a head is replaced atomically, and the bytes it points to are never
 * rewritten while it is current. Runs are listed by reading every head: fine for thousands of
 * runs, not for millions (use SQLite or Postgres). A damaged run (its head or journal is not
 * what a save wrote: a disk fault, a hand edit) is that run's problem only: `load` and `save`
 * of it throw a `CheckpointError` naming it, and `list` leaves it out and reports it to
 * `onDamaged`, so the approval inbox still shows every other run. `delete` removes it.
 *
 * @example
 * import { FileStore } from 'tollgate/file';
 * const store = new FileStore({ dir: './runs' });
 * const agent = new Agent({ policy, tools, store });
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { CheckpointError, OptionsError, TollgateError, UserError } from '../errors.js';
import { showValue } from '../option-keys.js';
import { agentAfterSave, checkClock, checkDuration, checkStoreOptions } from '../store/arguments.js';
import type { CheckedClaim, CheckedClaimNext } from '../store/checked.js';
import { CheckedStore } from '../store/checked.js';
import { ClaimTurns } from '../store/claim-order.js';
import { nowOf } from '../store/clock.js';
import { checkSave, deleteConflict } from '../store/conflicts.js';
import type { Lease, ListOptions, RunSummary, RunWrite, StoredRun } from '../store/contract.js';
import {
  claimRecord,
  claimWithin,
  fenceRecord,
  isLive,
  type LeaseRecord,
  leaseOf,
  releaseRecord,
  renewRecord,
} from '../store/leases.js';
import { compareRuns } from '../store/order.js';
import { earliestExpiry, matchesExpired } from '../store/pending-calls.js';
import { Watchers } from '../store/watchers.js';
import {
  encodeEntries,
  encodeHead,
  type HeadMeta,
  replaceFile,
  runDirName,
  summaryOf,
  syncDir,
  writeAt,
} from './file/format.js';
import {
  type DamagedRun,
  HEAD,
  type HeadRead,
  ioFault,
  readAllHeads,
  readHead,
  readRun,
  warnOnce,
} from './file/heads.js';
import { changeLease, currentLease, dropLeaseFile, LEASE, writeLeaseFile } from './file/lease.js';
import { withLock } from './file/lock.js';
import { claimNextIn, type QueueRoom, queueIn } from './file/queue.js';

export type { DamagedRun } from './file/heads.js';

export interface FileStoreOptions {
  /** The directory that holds the runs (created if missing). */
  dir: string;
  /** How long a save or delete waits for another process's lock on the same run (0: not at all). @default 10_000 */
  lockTimeoutMs?: number;
  /** The clock for `updatedAt`, leases and expiry, in ms since the epoch. @default Date.now */
  now?: () => number;
  /**
   * Told about each run `list` leaves out because it cannot be read (a damaged or unreadable
   * head). The listing goes on without it; `load` of that run throws the same error.
   * @default a process warning (`TOLLGATE_DAMAGED_RUN`), once per run and store
   */
  onDamaged?: (damage: DamagedRun) => void;
}

const KNOWN = ['dir', 'lockTimeoutMs', 'now', 'onDamaged'];
const LOCK = 'lock';

/** A `CheckpointStore` in a directory: one folder per run, a head file and an append-only journal. */
export class FileStore extends CheckedStore {
  /** The store's directory, absolute. */
  readonly dir: string;
  readonly #runs: string;
  readonly #lockTimeoutMs: number;
  readonly #now: () => number;
  readonly #onDamaged: (damage: DamagedRun) => void;
  readonly #watchers = new Watchers();
  readonly #room: QueueRoom;
  #closed = false;

  /** @throws OptionsError on a missing `dir`, an unknown option or a bad value. */
  constructor(options: FileStoreOptions) {
    super();
    const call = 'new FileStore';
    const o = checkStoreOptions(call, options, KNOWN);
    if (typeof o.dir !== 'string' || o.dir === '') {
      throw new OptionsError(`${call}: dir must be a directory path, got ${showValue(o.dir)}`);
    }
    if (o.onDamaged !== undefined && typeof o.onDamaged !== 'function') {
      throw new OptionsError(`${call}: onDamaged must be a function, got ${showValue(o.onDamaged)}`);
    }
    this.dir = resolve(o.dir);
    this.#runs = join(this.dir, 'runs');
    this.#lockTimeoutMs = checkDuration(call, 'lockTimeoutMs', o.lockTimeoutMs, 10_000, 0);
    this.#now = checkClock(call, o.now) ?? Date.now;
    this.#onDamaged = o.onDamaged ?? warnOnce();
    const [runs, lockTimeoutMs, now, onDamaged] = [this.#runs, this.#lockTimeoutMs, this.#now, this.#onDamaged];
    this.#room = { runs, lock: LOCK, lockTimeoutMs, now, onDamaged, turns: new ClaimTurns() };
  }

  protected async loadChecked(runId: string): Promise<StoredRun | null> {
    return this.#guard('load', () => readRun(join(this.#runs, runDirName(runId)), runId));
  }

  protected async saveChecked(runId: string, w: RunWrite, expectedVersion: number, lease?: Lease): Promise<number> {
    // The head file is written whole every save, so a delta would save nothing on disk.
    if (w.base !== undefined) {
      throw new OptionsError(
        `save: FileStore keeps no head bases (keepsBase is not set): write the head whole (run ${JSON.stringify(runId)})`,
      );
    }
    return this.#guard('save', () => {
      const dir = join(this.#runs, runDirName(runId));
      return withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
        const found = await readHead('save', dir, runId);
        const current = found?.meta ?? null;
        const now = nowOf(this.#now, 'save');
        const fenced = fenceRecord('save', runId, await currentLease('save', dir, runId, found), lease, now);
        const version = current?.version ?? 0;
        const stored = current?.entries ?? 0;
        checkSave(runId, current, w.from, expectedVersion);
        const agent = agentAfterSave(runId, current?.agent ?? null, w.agent);
        // A new run: whatever a crashed create or delete left in its directory is not part of it.
        if (!current) await this.#clearLeftovers(dir);
        const journal = current?.journal ?? `journal-${randomUUID()}.log`;
        let journalBytes = current?.journalBytes ?? 0;
        if (w.append.length > 0) {
          const bytes = encodeEntries(w.append);
          await writeAt(join(dir, journal), journalBytes, bytes);
          journalBytes += bytes.length;
        }
        const meta: HeadMeta = {
          runId,
          version: version + 1,
          status: w.status,
          pendingCalls: w.pendingCalls,
          updatedAt: new Date(now).toISOString(),
          entries: stored + w.append.length,
          journal,
          journalBytes,
          ...(fenced ? { lease: fenced } : {}),
          agent,
          decision: null,
        };
        await replaceFile(join(dir, HEAD), dir, encodeHead(meta, w.head), randomUUID());
        if (!current) {
          // The run's directory entry itself (and, for the first run, that of runs/).
          await syncDir(this.#runs);
          await syncDir(this.dir);
          // The head holds the lease record now.
          if (fenced) await dropLeaseFile(dir);
        }
        if (!isLive(fenced, now)) this.#watchers.notify();
        return version + 1;
      });
    });
  }

  protected async summaryChecked(runId: string): Promise<RunSummary | null> {
    return this.#guard('summary', async () => {
      const found = await readHead('summary', join(this.#runs, runDirName(runId)), runId);
      return found ? summaryOf(found.meta) : null;
    });
  }

  protected async listChecked({ status, expired, limit, agent }: ListOptions): Promise<RunSummary[]> {
    const now = expired === undefined ? 0 : nowOf(this.#now, 'list');
    return this.#guard('list', async () => {
      const heads = await readAllHeads(this.#runs, this.#onDamaged);
      return heads
        .map((h) => h.meta)
        .filter((m) => (status === undefined || m.status === status) && (agent === undefined || m.agent === agent))
        .filter((m) => matchesExpired(expired, earliestExpiry(m.pendingCalls), now))
        .sort(compareRuns)
        .slice(0, limit ?? Number.POSITIVE_INFINITY)
        .map(summaryOf);
    });
  }

  /**
   * Deletes a run. A damaged run can be deleted too, without an expected version (it has no
   * readable one) and without a lease check (its lease cannot be read, and is forgotten).
   */
  protected async deleteChecked(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean> {
    return this.#guard('delete', async () => {
      const dir = join(this.#runs, runDirName(runId));
      const current = (): Promise<HeadRead | 'damaged' | null> =>
        readHead('delete', dir, runId).catch((error: unknown) => {
          if (error instanceof CheckpointError && expectedVersion === undefined) return 'damaged';
          throw error;
        });
      if (!(await current())) return false;
      const deleted = await withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
        const found = await current();
        if (!found) return false;
        if (found !== 'damaged') {
          const record = found.meta.lease ?? null;
          // The lease rule only: a delete does not extend the lease.
          fenceRecord('delete', runId, record, lease, nowOf(this.#now, 'delete'));
          if (expectedVersion !== undefined && found.meta.version !== expectedVersion) {
            throw deleteConflict(runId, found.meta.version, expectedVersion);
          }
          // The token outlives the run: out of the head before the head goes.
          if (record) await writeLeaseFile(dir, this.#runs, runId, record);
        }
        await rm(join(dir, HEAD)); // the commit: without a head there is no run
        await syncDir(dir);
        await this.#clearLeftovers(dir);
        return true;
      });
      if (deleted) {
        // Best effort: another process may already be making a run with this id in it.
        await rmdir(dir).catch(() => {});
      }
      return deleted;
    });
  }

  protected async claimChecked(runId: string, { owner, leaseMs, wait, signal, process }: CheckedClaim): Promise<Lease> {
    return claimWithin({ wait, signal }, this.#now, async () => {
      const claimed = await this.#changeLease('claim', runId, (current) =>
        claimRecord(runId, current, owner, leaseMs, nowOf(this.#now, 'claim'), process),
      );
      return leaseOf(runId, claimed as LeaseRecord, leaseMs);
    });
  }

  protected async renewChecked(lease: Lease, ms: number): Promise<Lease> {
    const renewed = await this.#changeLease('renew', lease.runId, (current) =>
      renewRecord(current, lease, ms, nowOf(this.#now, 'renew')),
    );
    return leaseOf(lease.runId, renewed as LeaseRecord, ms);
  }

  protected async releaseChecked(lease: Lease): Promise<boolean> {
    const released = await this.#changeLease('release', lease.runId, (current) => releaseRecord(current, lease));
    if (released) this.#watchers.notify();
    return released !== null;
  }

  protected async queueDecisionChecked(runId: string, text: string, expectedVersion: number): Promise<number> {
    const version = await this.#guard('queueDecision', () => queueIn(this.#room, runId, text, expectedVersion));
    this.#watchers.notify();
    return version;
  }

  protected async claimNextChecked(checked: CheckedClaimNext): Promise<{ lease: Lease; run: RunSummary } | null> {
    return this.#guard('claimNext', () => claimNextIn(this.#room, checked));
  }

  /** This process only: another process's changes are seen at the next poll. */
  async watch(listener: () => void): Promise<() => Promise<void>> {
    return this.#watchers.add(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  /** Under the run's lock, changes its lease record (file/lease.ts). @returns what `decide` returned. */
  #changeLease(call: string, runId: string, decide: (current: LeaseRecord | null) => LeaseRecord | null) {
    return this.#guard(call, () => changeLease(this.#room, call, runId, decide));
  }

  /** Runs one operation: refused once closed; a file-system failure becomes a `StoreUnavailableError`. */
  async #guard<T>(call: string, work: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new UserError(`FileStore.${call}: the store is closed (${this.dir})`);
    try {
      return await work();
    } catch (error) {
      if (error instanceof TollgateError) throw error;
      throw ioFault(call, (error as { path?: string })?.path ?? this.dir, error);
    }
  }

  /** Removes every file of the run's directory but its lock files and its lease. Called holding the lock. */
  async #clearLeftovers(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const name of await readdir(dir)) {
      if (name !== LOCK && name !== `${LOCK}.break` && name !== LEASE) await rm(join(dir, name), { force: true });
    }
  }
}
