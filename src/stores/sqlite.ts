/**
 * A `CheckpointStore` in a SQLite file, with better-sqlite3 (12 on Node 20, 13 on Node 22 and 24): `tollgate/sqlite`.
 * (better-sqlite3 13 crashes on Node 20.)
 *
 * - WAL mode: readers never block the writer, nor the writer readers.
 * - `synchronous = FULL` by default: every commit fsyncs the WAL, so a save that returned
 *   survives a power cut — the write-ahead record before a side effect must. `NORMAL` is
 *   faster and still survives a process crash, but a power cut may lose the last saves.
 * - `busy_timeout`: a process that finds the database locked by another waits (up to
 *   `busyTimeoutMs`) instead of failing, then gets a `StoreUnavailableError`. better-sqlite3 is
 *   synchronous, so it waits blocking its event loop; saves are short, so the wait is too.
 * - Every driver error becomes a typed one naming the file (src/stores/sqlite/faults.ts).
 * - A save is one `BEGIN IMMEDIATE` transaction: check the lease (leases.ts), the version and
 *   the entry count, write the head, insert the new entries, extend the lease. O(new entries +
 *   head) per save. A claim, renew or release is one too: no other process can come between
 *   reading a lease and writing it. So are `queueDecision` and `claimNext` (sqlite/queue.ts).
 * - `watch` hears this process only; other processes' changes are seen at a worker's next poll.
 *
 * @example
 * import { SqliteStore } from 'tollgate/sqlite';
 * const store = SqliteStore.open('./tollgate.db');
 * const agent = new Agent({ policy, tools, store });
 */
import Database from 'better-sqlite3';
import { isoTime } from '../clock.js';
import { LeaseLostError, OptionsError, UserError } from '../errors.js';
import { showValue } from '../option-keys.js';
import { agentAfterSave, checkClock, checkDuration, checkStoreOptions } from '../store/arguments.js';
import type { CheckedClaim, CheckedClaimNext } from '../store/checked.js';
import { CheckedGroupStore, type CheckedSettlement } from '../store/checked-groups.js';
import { nowOf } from '../store/clock.js';
import { checkSave, deleteConflict } from '../store/conflicts.js';
import type {
  GroupBudget,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupSpend,
  Lease,
  ListOptions,
  OpenedRun,
  RunSummary,
  RunWrite,
  StoredRun,
} from '../store/contract.js';
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
import { hasEnded } from '../store/open.js';
import { earliestExpiry } from '../store/pending-calls.js';
import { SaveBatches } from './sqlite/batch-commit.js';
import { checkDatabasePath, fault } from './sqlite/faults.js';
import { type GroupTransactions, groupTransactions } from './sqlite/groups.js';
import { listQuery, SUMMARY_COLUMNS } from './sqlite/listing.js';
import { migrate, settingsOf } from './sqlite/migrations.js';
import { leaseAccess, type QueueTransactions, queueTransactions } from './sqlite/queue.js';
import { type RunRow, storedRun, summary } from './sqlite/rows.js';
import type { SqliteSettings } from './sqlite/settings.js';
import { enableWal } from './sqlite/wal.js';

export type { SqliteSettings };

import { Watchers } from '../store/watchers.js';

export interface SqliteStoreOptions {
  /** The database file (created if missing, in a folder that must exist), or `':memory:'`. */
  path: string;
  /** `FULL` fsyncs every commit (durable across power loss); `NORMAL` survives process crashes only. @default 'FULL' */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * How long to wait for another connection's write lock before a `StoreUnavailableError`
   * (0 to 2^31−1 ms). @default 10_000
   */
  busyTimeoutMs?: number;
  /** The clock for `updatedAt`, leases and expiry, in ms since the epoch. @default Date.now */
  now?: () => number;
}

const OPTIONS = ['synchronous', 'busyTimeoutMs', 'now'];
/** Which call is constructing: `SqliteStore.open` names itself in errors, not `new SqliteStore`. */
let opening: string | null = null;

/** A `CheckpointStore` in one SQLite file, shared by the processes of one machine. */
export class SqliteStore extends CheckedGroupStore {
  /** The database file, as given. */
  readonly path: string;
  readonly keepsBase = true;
  readonly #db: Database.Database;
  readonly #now: () => number;
  readonly #busyTimeoutMs: number;
  /** Saves, committed in batches: those that wait in one event-loop turn share a transaction. */
  readonly #saves: SaveBatches;
  readonly #delete: (runId: string, expectedVersion: number | undefined, lease: Lease | undefined) => boolean;
  readonly #load: (runId: string) => StoredRun | null;
  readonly #summary: Database.Statement;
  /** `open` in one `BEGIN IMMEDIATE` transaction: read, claimed, released at rest, the group read. */
  readonly #open: (runId: string, claim: CheckedClaim) => OpenedRun | null;
  readonly #queue: QueueTransactions;
  readonly #groups: GroupTransactions;
  readonly #watchers = new Watchers();
  /**
   * Reads the run's lease record and writes what `decide` makes of it (nothing for null), in one
   * `BEGIN IMMEDIATE` transaction. @returns what `decide` returned.
   */
  readonly #lease: (runId: string, decide: (current: LeaseRecord | null) => LeaseRecord | null) => LeaseRecord | null;
  /** Renews each lease to its length, in one `BEGIN IMMEDIATE` transaction; a lost one is its `LeaseLostError`. */
  readonly #renewAll: (leases: readonly Lease[], lengths: readonly number[]) => (Lease | LeaseLostError)[];

  /**
   * Opens (and if needed creates and migrates) the database at `path`.
   * @throws OptionsError for a bad option, a directory, or a file whose folder does not exist.
   * @throws StoreDamagedError for a file that is not a SQLite database, or a damaged one.
   * @throws StoreUnavailableError when the file cannot be opened or is locked past `busyTimeoutMs`.
   */
  static open(path: string, options?: Omit<SqliteStoreOptions, 'path'>): SqliteStore {
    const o = checkStoreOptions('SqliteStore.open', options, OPTIONS);
    opening = 'SqliteStore.open';
    try {
      return new SqliteStore({ ...o, path });
    } finally {
      opening = null;
    }
  }

  /** Like `SqliteStore.open(options.path, options)`. */
  constructor(options: SqliteStoreOptions) {
    super();
    const call = opening ?? 'new SqliteStore';
    const o = checkStoreOptions(call, options, ['path', ...OPTIONS]);
    if (typeof o.path !== 'string' || o.path === '') {
      throw new OptionsError(`${call}: path must be a file path or ":memory:", got ${showValue(o.path)}`);
    }
    const synchronous = o.synchronous ?? 'FULL';
    if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
      throw new OptionsError(`${call}: synchronous must be "FULL" or "NORMAL", got ${showValue(synchronous)}`);
    }
    this.path = o.path;
    this.#busyTimeoutMs = checkDuration(call, 'busyTimeoutMs', o.busyTimeoutMs, 10_000, 0);
    this.#now = checkClock(call, o.now) ?? Date.now;
    checkDatabasePath(call, o.path);
    let db: Database.Database;
    try {
      db = new Database(o.path);
    } catch (error) {
      throw fault(call, o.path, error);
    }
    this.#db = db;
    try {
      db.pragma(`busy_timeout = ${this.#busyTimeoutMs}`);
      enableWal(db, this.#busyTimeoutMs);
      db.pragma(`synchronous = ${synchronous}`);
      migrate(db);
    } catch (error) {
      db.close();
      throw fault(call, o.path, error, this.#busyTimeoutMs);
    }

    const head = db.prepare('SELECT version, entry_count, agent, status FROM runs WHERE run_id = ?');
    // Every save clears a recorded decision: the worker that applied it is the one saving.
    const insert = db.prepare(
      `INSERT INTO runs (run_id, version, status, head, base, entry_count, pending, pending_expires_at, updated_at, agent)
       VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // A write without a base keeps the stored one.
    const update = db.prepare(
      `UPDATE runs SET version = ?, status = ?, head = ?, base = coalesce(?, base), entry_count = ?, pending = ?,
       pending_expires_at = ?, updated_at = ?, agent = ?, decision = NULL WHERE run_id = ?`,
    );
    // The same for a save that keeps the status and the agent: SQLite rewrites an index entry when
    // the statement sets one of its columns, so this one leaves `runs_running` and, for a run with
    // no agent, `runs_by_agent` alone (sqlite/listing.ts).
    const refresh = db.prepare(
      `UPDATE runs SET version = ?, head = ?, base = coalesce(?, base), entry_count = ?, pending = ?,
       pending_expires_at = ?, updated_at = ?, decision = NULL WHERE run_id = ?`,
    );
    const append = db.prepare('INSERT INTO entries (run_id, idx, body) VALUES (?, ?, ?)');
    const run = db.prepare('SELECT * FROM runs WHERE run_id = ?');
    const entries = db.prepare('SELECT body FROM entries WHERE run_id = ? ORDER BY idx').pluck();
    const dropEntries = db.prepare('DELETE FROM entries WHERE run_id = ?');
    const dropRun = db.prepare('DELETE FROM runs WHERE run_id = ?');
    const leases = leaseAccess(db);
    const { read: readLease, write: writeLease } = leases;
    this.#queue = queueTransactions(db, this.#now, leases);
    this.#groups = groupTransactions(db);

    const save = db.transaction((runId: string, write: RunWrite, expectedVersion: number, lease: Lease | undefined) => {
      const now = nowOf(this.#now, 'save');
      const before = readLease(runId);
      const fenced = fenceRecord('save', runId, before, lease, now);
      const current = head.get(runId) as
        | { version: number; entry_count: number; agent: string | null; status: string }
        | undefined;
      const version = current?.version ?? 0;
      const stored = current?.entry_count ?? 0;
      checkSave(runId, current ? { version, entries: stored } : null, write.from, expectedVersion);
      const agent = agentAfterSave(runId, current?.agent ?? null, write.agent);
      const count = stored + write.append.length;
      const calls = write.pendingCalls;
      const pending = calls.length === 0 ? null : JSON.stringify(calls);
      const at = isoTime(now);
      const expiry = earliestExpiry(calls);
      const base = write.base ?? null;
      if (!current) insert.run(runId, write.status, write.head, base, count, pending, expiry, at, agent);
      else if (current.status === write.status && current.agent === agent) {
        refresh.run(version + 1, write.head, base, count, pending, expiry, at, runId);
      } else update.run(version + 1, write.status, write.head, base, count, pending, expiry, at, agent, runId);
      for (const [i, body] of write.append.entries()) append.run(runId, stored + i, body);
      if (fenced && fenced !== before) leases.extend(runId, fenced.expiresAt as number); // fenceRecord moved the end only
      if (!isLive(fenced, now)) this.#watchers.notify();
      return version + 1;
    });
    // Each save in a savepoint of its own, inside its batch's BEGIN IMMEDIATE transaction (which
    // takes the write lock before reading any lease and version: no other writer can slip in). A
    // batch of relaxed saves commits without an fsync (sqlite/batch-commit.ts).
    this.#saves = new SaveBatches(db, synchronous, save, (error) =>
      fault('SqliteStore.save', this.path, error, this.#busyTimeoutMs),
    );

    const remove = db.transaction((runId: string, expectedVersion: number | undefined, lease: Lease | undefined) => {
      const current = head.get(runId) as { version: number } | undefined;
      if (!current) return false;
      // The lease rule only: a delete does not extend the lease, and its row stays.
      fenceRecord('delete', runId, readLease(runId), lease, nowOf(this.#now, 'delete'));
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw deleteConflict(runId, current.version, expectedVersion);
      }
      dropEntries.run(runId);
      dropRun.run(runId);
      return true;
    });
    this.#delete = (...args) => remove.immediate(...args);

    const lease = db.transaction((runId: string, decide: (current: LeaseRecord | null) => LeaseRecord | null) => {
      const next = decide(readLease(runId));
      if (next) writeLease(runId, next);
      return next;
    });
    this.#lease = (...args) => lease.immediate(...args);

    // Each lease renewed by the shared rule or refused alone, all in one transaction; a renewal
    // moves the end only, so it rewrites no index entry (sqlite/queue.ts `extend`).
    const renewAll = db.transaction((all: readonly Lease[], lengths: readonly number[]) => {
      const now = nowOf(this.#now, 'renew');
      return all.map((one, i): Lease | LeaseLostError => {
        const ms = lengths[i] as number;
        try {
          const renewed = renewRecord(readLease(one.runId), one, ms, now);
          leases.extend(one.runId, renewed.expiresAt as number);
          return leaseOf(one.runId, renewed, ms);
        } catch (error) {
          if (error instanceof LeaseLostError) return error;
          throw error;
        }
      });
    });
    this.#renewAll = (all, lengths) => renewAll.immediate(all, lengths);

    // The write lock is taken first (IMMEDIATE): the run read is the latest, and nobody writes it
    // between the read and the claim. A run that has ended is read and nothing written.
    const openRun = db.transaction((runId: string, { owner, leaseMs, process }: CheckedClaim): OpenedRun | null => {
      const row = run.get(runId) as RunRow | undefined;
      if (!row) return null;
      const stored = storedRun(this.path, row, entries.all(runId) as string[]);
      if (hasEnded(stored.status)) return { run: stored, lease: null, group: null };
      const record = claimRecord(runId, readLease(runId), owner, leaseMs, nowOf(this.#now, 'open'), process);
      const claimed = leaseOf(runId, record, leaseMs);
      const kept = stored.status === 'running';
      writeLease(runId, kept ? record : (releaseRecord(record, claimed) as LeaseRecord));
      return { run: stored, lease: kept ? claimed : null, group: this.#groups.groupOf(runId) };
    });
    this.#open = (...args) => openRun.immediate(...args);

    this.#summary = db.prepare(`SELECT ${SUMMARY_COLUMNS} FROM runs WHERE run_id = ?`);
    // One read transaction: the head and entries are of the same version.
    this.#load = db.transaction((runId: string) => {
      const row = run.get(runId) as RunRow | undefined;
      if (!row) return null;
      return storedRun(this.path, row, entries.all(runId) as string[]);
    });
  }

  /** The connection's settings as SQLite reports them, and the schema version of the file. */
  get settings(): SqliteSettings {
    return settingsOf(this.#db);
  }

  protected async loadChecked(runId: string): Promise<StoredRun | null> {
    return this.#guard('load', () => this.#load(runId));
  }

  protected async saveChecked(runId: string, w: RunWrite, expectedVersion: number, lease?: Lease): Promise<number> {
    return this.#guard('save', () => this.#saves.add(runId, w, expectedVersion, lease));
  }

  protected async listChecked({ status, expired, limit, agent }: ListOptions): Promise<RunSummary[]> {
    const params = {
      ...(agent === undefined ? {} : { agent }),
      ...(expired === undefined ? {} : { now: nowOf(this.#now, 'list') }),
      ...(limit === undefined ? {} : { limit }),
    };
    return this.#guard('list', () => {
      const rows = this.#db.prepare(listQuery({ status, agent, expired, limit })).all(params);
      return (rows as RunRow[]).map(summary);
    });
  }

  protected async summaryChecked(runId: string): Promise<RunSummary | null> {
    return this.#guard('summary', () => {
      const row = this.#summary.get(runId) as RunRow | undefined;
      return row ? summary(row) : null;
    });
  }

  protected async deleteChecked(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean> {
    return this.#guard('delete', () => this.#delete(runId, expectedVersion, lease));
  }

  protected async claimChecked(runId: string, { owner, leaseMs, wait, signal, process }: CheckedClaim): Promise<Lease> {
    return claimWithin({ wait, signal }, this.#now, async () =>
      this.#guard('claim', () => {
        const claimed = this.#lease(runId, (current) =>
          claimRecord(runId, current, owner, leaseMs, nowOf(this.#now, 'claim'), process),
        );
        return leaseOf(runId, claimed as LeaseRecord, leaseMs);
      }),
    );
  }

  protected override async openChecked(runId: string, claim: CheckedClaim): Promise<OpenedRun | null> {
    return claimWithin(claim, this.#now, async () => this.#guard('open', () => this.#open(runId, claim)));
  }

  protected async renewChecked(lease: Lease, ms: number): Promise<Lease> {
    const [renewed] = this.#guard('renew', () => this.#renewAll([lease], [ms]));
    if (renewed instanceof LeaseLostError) throw renewed;
    return renewed as Lease;
  }

  /** One `BEGIN IMMEDIATE` transaction for all of them: one commit, one fsync. */
  protected override async renewManyChecked(
    leases: readonly Lease[],
    lengths: readonly number[],
  ): Promise<(Lease | LeaseLostError)[]> {
    if (leases.length === 0) return [];
    return this.#guard('renewMany', () => this.#renewAll(leases, lengths));
  }

  protected async releaseChecked(lease: Lease): Promise<boolean> {
    const released = this.#guard('release', () => this.#lease(lease.runId, (c) => releaseRecord(c, lease)) !== null);
    if (released) this.#watchers.notify();
    return released;
  }

  protected async queueDecisionChecked(runId: string, text: string, expectedVersion: number): Promise<number> {
    const version = this.#guard('queueDecision', () => this.#queue.queue(runId, text, expectedVersion));
    this.#watchers.notify();
    return version;
  }

  protected async claimNextChecked(checked: CheckedClaimNext): Promise<{ lease: Lease; run: RunSummary } | null> {
    return this.#guard('claimNext', () => this.#queue.claimNext(checked));
  }

  protected async setGroupBudgetChecked(group: string, budget: GroupBudget | null): Promise<void> {
    this.#guard('setGroupBudget', () => this.#groups.setBudget(group, budget));
  }

  protected async groupSpendChecked(group: string): Promise<GroupSpend> {
    return this.#guard('groupSpend', () => this.#groups.spend(group, null, nowOf(this.#now, 'groupSpend')));
  }

  /** One `BEGIN IMMEDIATE` transaction: spends from every connection and process add up exactly. */
  protected async spendGroupChecked(group: string, charge: Required<GroupCharge>): Promise<GroupSpend> {
    return this.#guard('spendGroup', () => this.#groups.spend(group, charge, nowOf(this.#now, 'spendGroup')));
  }

  protected async holdGroupChecked(group: string, request: GroupHoldRequest): Promise<GroupHoldResult> {
    return this.#guard('holdGroup', () => this.#groups.hold(group, request, nowOf(this.#now, 'holdGroup')));
  }

  protected async settleGroupChecked(group: string, settlement: CheckedSettlement): Promise<GroupSpend> {
    return this.#guard('settleGroup', () => this.#groups.settle(group, settlement, nowOf(this.#now, 'settleGroup')));
  }

  protected async joinGroupChecked(runId: string, group: string): Promise<void> {
    this.#guard('joinGroup', () => this.#groups.join(runId, group));
  }

  protected async groupOfChecked(runId: string): Promise<string | null> {
    return this.#guard('groupOf', () => this.#groups.groupOf(runId));
  }

  /** This process only: another process's changes are seen at the next poll. */
  async watch(listener: () => void): Promise<() => Promise<void>> {
    return this.#watchers.add(listener);
  }

  async close(): Promise<void> {
    this.#saves.flush(); // the saves already asked for are made, not dropped
    if (this.#db.open) this.#db.close();
  }

  /** Runs one operation: refused once closed; a driver error becomes a typed one naming the file. */
  #guard<T>(call: string, work: () => T): T {
    if (!this.#db.open) throw new UserError(`SqliteStore.${call}: the store is closed (${JSON.stringify(this.path)})`);
    try {
      return work();
    } catch (error) {
      throw fault(`SqliteStore.${call}`, this.path, error, this.#busyTimeoutMs);
    }
  }
}
