/**
 * A `CheckpointStore` in a SQLite file, with better-sqlite3 12: `tollgate/sqlite`.
 * (better-sqlite3 13 crashes on Node 20.)
 *
 * - WAL mode: readers never block the writer, nor the writer readers.
 * - `synchronous = FULL` by default: every commit fsyncs the WAL, so a save that returned
 *   survives a power cut — the write-ahead record before a side effect must. `NORMAL` is
 *   faster and still survives a process crash, but a power cut may lose the last saves.
 * - `busy_timeout`: a process that finds the database locked by another waits (up to
 *   `busyTimeoutMs`) instead of failing. better-sqlite3 is synchronous, so it waits blocking
 *   its event loop; saves are short, so the wait is too.
 * - A save is one `BEGIN IMMEDIATE` transaction: check the version and entry count, write the
 *   head, insert the new entries. O(new entries + head) per save.
 *
 * @example
 * import { SqliteStore } from 'tollgate/sqlite';
 * const store = SqliteStore.open('./tollgate.db');
 * const agent = new Agent({ policy, tools, store });
 */
import Database from 'better-sqlite3';
import { OptionsError, SystemError } from '../errors.js';
import {
  type CheckpointStore,
  checkLimit,
  checkSave,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from '../store.js';
import type { PendingCall, Status } from '../types.js';
import { migrate } from './sqlite/migrations.js';

export interface SqliteStoreOptions {
  /** The database file (created if missing), or `':memory:'`. */
  path: string;
  /** `FULL` fsyncs every commit (durable across power loss); `NORMAL` survives process crashes only. @default 'FULL' */
  synchronous?: 'FULL' | 'NORMAL';
  /** How long to wait for another connection's write lock. @default 10_000 */
  busyTimeoutMs?: number;
  /** The clock for `updatedAt`. @default Date.now */
  now?: () => number;
}

interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  head: string;
  entry_count: number;
  pending: string | null;
  updated_at: string;
}

const summary = (row: Omit<RunRow, 'head' | 'entry_count'>): RunSummary => ({
  runId: row.run_id,
  version: row.version,
  status: row.status,
  pending: row.pending === null ? null : (JSON.parse(row.pending) as PendingCall),
  updatedAt: row.updated_at,
});

export class SqliteStore implements CheckpointStore {
  readonly #db: Database.Database;
  readonly #now: () => number;
  readonly #save: (runId: string, write: RunWrite, expectedVersion: number, at: string) => number;
  readonly #delete: (runId: string, expectedVersion: number | undefined) => boolean;
  readonly #load: (runId: string) => StoredRun | null;

  /** Opens (and if needed creates and migrates) the database at `path`. */
  static open(path: string, options: Omit<SqliteStoreOptions, 'path'> = {}): SqliteStore {
    return new SqliteStore({ ...options, path });
  }

  constructor(options: SqliteStoreOptions) {
    if (typeof options?.path !== 'string' || options.path === '') {
      throw new OptionsError('SqliteStore: options.path must be a file path or ":memory:"');
    }
    const synchronous = options.synchronous ?? 'FULL';
    if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
      throw new OptionsError(`SqliteStore: synchronous must be 'FULL' or 'NORMAL', got ${String(synchronous)}`);
    }
    this.#now = options.now ?? Date.now;
    const db = new Database(options.path);
    this.#db = db;
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${synchronous}`);
      migrate(db);
    } catch (error) {
      db.close();
      throw error;
    }

    const head = db.prepare('SELECT version, entry_count FROM runs WHERE run_id = ?');
    const insert = db.prepare(
      'INSERT INTO runs (run_id, version, status, head, entry_count, pending, updated_at) VALUES (?, 1, ?, ?, ?, ?, ?)',
    );
    const update = db.prepare(
      'UPDATE runs SET version = ?, status = ?, head = ?, entry_count = ?, pending = ?, updated_at = ? WHERE run_id = ?',
    );
    const append = db.prepare('INSERT INTO entries (run_id, idx, body) VALUES (?, ?, ?)');
    const run = db.prepare('SELECT * FROM runs WHERE run_id = ?');
    const entries = db.prepare('SELECT body FROM entries WHERE run_id = ? ORDER BY idx').pluck();
    const dropEntries = db.prepare('DELETE FROM entries WHERE run_id = ?');
    const dropRun = db.prepare('DELETE FROM runs WHERE run_id = ?');

    const save = db.transaction((runId: string, write: RunWrite, expectedVersion: number, at: string) => {
      const current = head.get(runId) as { version: number; entry_count: number } | undefined;
      const version = current?.version ?? 0;
      const stored = current?.entry_count ?? 0;
      checkSave(runId, current ? { version, entries: stored } : null, write.from, expectedVersion);
      const count = stored + write.append.length;
      const pending = write.pending === null ? null : JSON.stringify(write.pending);
      if (current) update.run(version + 1, write.status, write.head, count, pending, at, runId);
      else insert.run(runId, write.status, write.head, count, pending, at);
      for (const [i, body] of write.append.entries()) append.run(runId, stored + i, body);
      return version + 1;
    });
    // IMMEDIATE takes the write lock before reading the version: no other writer can slip in.
    this.#save = (...args) => save.immediate(...args);

    const remove = db.transaction((runId: string, expectedVersion: number | undefined) => {
      const current = head.get(runId) as { version: number } | undefined;
      if (!current) return false;
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw deleteConflict(runId, current.version, expectedVersion);
      }
      dropEntries.run(runId);
      dropRun.run(runId);
      return true;
    });
    this.#delete = (...args) => remove.immediate(...args);

    // One read transaction: the head and entries are of the same version.
    this.#load = db.transaction((runId: string) => {
      const row = run.get(runId) as RunRow | undefined;
      if (!row) return null;
      const bodies = entries.all(runId) as string[];
      if (bodies.length !== row.entry_count) {
        throw new SystemError(
          `sqlite: run ${JSON.stringify(runId)} has ${bodies.length} entries, not ${row.entry_count}`,
        );
      }
      return { ...summary(row), head: row.head, entries: bodies };
    });
  }

  /** The connection's settings as SQLite reports them, and the schema version of the file. */
  get settings(): { journalMode: string; synchronous: string; busyTimeoutMs: number; schemaVersion: number } {
    const level = this.#db.pragma('synchronous', { simple: true }) as number;
    return {
      journalMode: this.#db.pragma('journal_mode', { simple: true }) as string,
      synchronous: ['OFF', 'NORMAL', 'FULL', 'EXTRA'][level] ?? String(level),
      busyTimeoutMs: this.#db.pragma('busy_timeout', { simple: true }) as number,
      schemaVersion: (this.#db.prepare('SELECT max(version) FROM tollgate_migrations').pluck().get() as number) ?? 0,
    };
  }

  async load(runId: string): Promise<StoredRun | null> {
    return this.#load(runId);
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    return this.#save(runId, write, expectedVersion, new Date(this.#now()).toISOString());
  }

  async list(options: ListOptions = {}): Promise<RunSummary[]> {
    checkLimit(options.limit);
    const where = options.status === undefined ? '' : 'WHERE status = @status';
    const limit = options.limit === undefined || !Number.isFinite(options.limit) ? '' : 'LIMIT @limit';
    const rows = this.#db
      .prepare(
        `SELECT run_id, version, status, pending, updated_at FROM runs ${where} ORDER BY updated_at, run_id ${limit}`,
      )
      .all({
        ...(options.status === undefined ? {} : { status: options.status }),
        ...(limit ? { limit: options.limit } : {}),
      });
    return (rows as RunRow[]).map(summary);
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    return this.#delete(runId, expectedVersion);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}
