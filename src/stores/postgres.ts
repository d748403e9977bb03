/**
 * A `CheckpointStore` on PostgreSQL with `pg`: many processes on many machines can share it.
 *
 * A run is a row in `runs` (its small head, version, status, pending call) and its history
 * rows in `entries`, one per entry, append-only. A save is one SQL statement, so one
 * transaction and one round trip: a conditional insert (version 0) or update (`WHERE version
 * = expected AND entry_count = from`) of the head, and the appended entries inserted only if
 * that matched. A concurrent writer that lost waits on the row lock, re-checks the condition,
 * matches nothing and gets a `ConflictError`: never an overwrite. Cost per save: O(new data).
 *
 * @example
 * import { PostgresStore } from 'tollgate/postgres';
 * const store = new PostgresStore(process.env.DATABASE_URL, { schema: 'tollgate' });
 * const agent = new Agent({ store, policy, tools });
 * // … later, in any process:
 * for (const run of await store.list({ status: 'awaiting_approval' })) console.log(run.pending);
 * await store.close();
 */

import type { Pool, PoolClient, PoolConfig } from 'pg';
import pg from 'pg';
import type { PendingCall, Status } from '../../machines/types.js';
import { OptionsError, SystemError, TollgateError, UserError } from '../errors.js';
import {
  type CheckpointStore,
  checkLimit,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
  saveConflict,
} from '../store.js';
import { migrate } from './postgres-migrations.js';
import { type Statements, statements } from './postgres-sql.js';

export { SCHEMA_VERSION } from './postgres-migrations.js';

export interface PostgresStoreOptions {
  /**
   * The schema holding Tollgate's tables (`runs`, `entries`, `tollgate_migrations`); created
   * on first use if missing. Tests isolate themselves in a schema of their own.
   * @default 'tollgate'
   */
  schema?: string;
  /**
   * Give up connecting after this many milliseconds with a `StoreUnavailableError`: an
   * unreachable server fails fast instead of hanging every save.
   * @default 5000
   */
  connectTimeoutMs?: number;
  /** Connections in the pool the store creates (ignored for a pool you pass). @default 10 */
  maxConnections?: number;
  /** The clock for `updatedAt`, in ms since the epoch. @default the database's clock */
  now?: () => number;
}

/** The database cannot be reached (refused, timed out, bad credentials, no such database). */
export class StoreUnavailableError extends SystemError {}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  pending: string | null;
  updated_at: Date;
}

/**
 * A `CheckpointStore` on PostgreSQL. Give it a connection string, a `pg` pool config, or a
 * `pg.Pool` you own. The schema is migrated on first use (or call `migrate()`).
 * `close()` ends the pool the store created; a pool you passed stays yours to end.
 */
export class PostgresStore implements CheckpointStore {
  readonly #sql: Statements;
  readonly #schema: string;
  readonly #pool: Pool;
  readonly #ownsPool: boolean;
  readonly #connectTimeoutMs: number;
  readonly #now: (() => number) | undefined;
  readonly #where: string;
  #ready: Promise<number> | null = null;
  #closed = false;

  constructor(connection: string | PoolConfig | Pool, options: PostgresStoreOptions = {}) {
    const schema = options.schema ?? 'tollgate';
    if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
      throw new OptionsError(
        `PostgresStore: schema must be an identifier (letters, digits, _; at most 63), got ${JSON.stringify(schema)}`,
      );
    }
    const timeout = options.connectTimeoutMs ?? 5000;
    if (!Number.isFinite(timeout) || timeout <= 0) {
      throw new OptionsError(`PostgresStore: connectTimeoutMs must be a positive number, got ${String(timeout)}`);
    }
    this.#schema = schema;
    this.#sql = statements(`"${schema}"`);
    this.#connectTimeoutMs = timeout;
    this.#now = options.now;
    if (isPool(connection)) {
      this.#pool = connection;
      this.#ownsPool = false;
      this.#where = 'the given pool';
    } else {
      if (typeof connection !== 'string' && (connection === null || typeof connection !== 'object')) {
        throw new OptionsError('PostgresStore: give a connection string, a pg PoolConfig or a pg.Pool');
      }
      const config: PoolConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
      this.#pool = new pg.Pool({
        max: options.maxConnections ?? 10,
        connectionTimeoutMillis: timeout,
        ...config,
      });
      this.#ownsPool = true;
      this.#where = describeTarget(config);
      // An idle connection that the server drops (restart, failover) emits 'error' on the pool;
      // unheard, it would kill the process. The next query simply opens a new connection.
      this.#pool.on('error', () => {});
    }
  }

  /**
   * Creates or upgrades the schema (also done on first use). Concurrent callers in any number
   * of processes are serialised by an advisory lock.
   * @returns the schema version.
   */
  migrate(): Promise<number> {
    if (!this.#ready) {
      const ready = this.#use((client) => migrate(client, this.#schema));
      // A failed attempt (server down) is not remembered: the next call tries again.
      ready.catch(() => {
        if (this.#ready === ready) this.#ready = null;
      });
      this.#ready = ready;
    }
    return this.#ready;
  }

  async load(runId: string): Promise<StoredRun | null> {
    // One statement: head and entries come from the same snapshot.
    const { rows } = await this.#query<RunRow & { head: string; entry_count: number; entries: string[] }>(
      this.#sql.load,
      [runId],
    );
    const row = rows[0];
    if (!row) return null;
    if (row.entries.length !== row.entry_count) {
      throw new SystemError(
        `postgres: run ${JSON.stringify(runId)} should have ${row.entry_count} entries but has ${row.entries.length}`,
        { runId },
      );
    }
    return { ...summaryOf(row), head: row.head, entries: row.entries };
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    const valid = Number.isSafeInteger(expectedVersion) && Number.isSafeInteger(write.from) && write.from >= 0;
    if (valid && (expectedVersion > 0 || write.from === 0)) {
      const values = [
        runId,
        write.status,
        write.head,
        write.from,
        write.append,
        write.pending === null ? null : JSON.stringify(write.pending),
        this.#now ? new Date(this.#now()) : null,
      ];
      const sql = expectedVersion === 0 ? this.#sql.insertRun : this.#sql.updateRun;
      if (expectedVersion > 0) values.push(expectedVersion);
      try {
        const { rows } = await this.#query<{ version: number }>(sql, values);
        if (rows[0]) return rows[0].version;
      } catch (error) {
        // The entries' primary key: someone appended at these indexes. Cannot happen while the
        // version check holds, but a duplicate is a conflict, never an overwrite.
        if ((error as { code?: string }).code !== '23505') throw error;
      }
    }
    const { rows } = await this.#query<{ version: number; entry_count: number }>(this.#sql.current, [runId]);
    const actual = rows[0];
    throw saveConflict(
      runId,
      actual ? { version: actual.version, entries: actual.entry_count } : null,
      write.from,
      expectedVersion,
    );
  }

  async list(options: ListOptions = {}): Promise<RunSummary[]> {
    const { status, limit } = options;
    checkLimit(limit);
    const { rows } = await this.#query<RunRow>(this.#sql.list, [status ?? null, limit ?? null]);
    return rows.map(summaryOf);
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    const { rowCount } = await this.#query(this.#sql.delete, [runId, expectedVersion ?? null]);
    if (rowCount) return true;
    if (expectedVersion === undefined) return false;
    const { rows } = await this.#query<{ version: number }>(this.#sql.current, [runId]);
    const actual = rows[0]?.version;
    if (actual === undefined) return false;
    throw deleteConflict(runId, actual, expectedVersion);
  }

  /** Ends the pool the store created; a pool given to the constructor is left open. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#ready?.catch(() => {});
    if (this.#ownsPool) await this.#pool.end();
  }

  async #query<R extends object = Record<string, unknown>>(text: string, values: unknown[]) {
    await this.migrate();
    return this.#use((client) => client.query<R>(text, values));
  }

  /**
   * Runs `work` on a pooled connection. A connection that failed (no SQLSTATE: reset, ended) is
   * discarded rather than returned to the pool, and the failure is a `StoreUnavailableError`.
   */
  async #use<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#connect();
    try {
      const result = await work(client);
      client.release();
      return result;
    } catch (error) {
      const sqlState = (error as { code?: unknown }).code;
      const serverSaid = typeof sqlState === 'string' && /^[0-9A-Z]{5}$/.test(sqlState);
      // The connection is fine after an error the server reported (or one of ours).
      client.release(serverSaid || error instanceof TollgateError ? undefined : true);
      if (serverSaid || error instanceof TollgateError) throw error;
      throw new StoreUnavailableError(`PostgresStore: lost the connection to ${this.#where} (${reasonOf(error)})`, {
        cause: error,
      });
    }
  }

  /** A pooled connection, or a `StoreUnavailableError` within the connect timeout. */
  async #connect(): Promise<PoolClient> {
    if (this.#closed) throw new UserError('PostgresStore: the store is closed');
    let timer: NodeJS.Timeout | undefined;
    const connecting = this.#pool.connect();
    // The pool has its own timeout when the store made it; this one also covers a given pool.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no connection within ${this.#connectTimeoutMs} ms`)),
        this.#connectTimeoutMs,
      );
    });
    try {
      return await Promise.race([connecting, timeout]);
    } catch (error) {
      connecting.then((late) => late.release()).catch(() => {});
      throw new StoreUnavailableError(
        `PostgresStore: cannot connect to ${this.#where} (${reasonOf(error)}); is the server running and the URL right?`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | null;
  return String(e?.code ?? e?.message ?? error);
}

/** Duck-typed, so a pool from another copy of `pg` is still recognised. */
function isPool(value: unknown): value is Pool {
  const v = value as Partial<Pool> | null;
  return typeof v?.connect === 'function' && typeof v.query === 'function' && typeof v.end === 'function';
}

function summaryOf(row: RunRow): RunSummary {
  return {
    runId: row.run_id,
    version: row.version,
    status: row.status,
    pending: row.pending === null ? null : (JSON.parse(row.pending) as PendingCall),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Where the pool connects, for error messages: never the password. */
function describeTarget(config: PoolConfig): string {
  if (config.connectionString) {
    try {
      const url = new URL(config.connectionString);
      url.password = '';
      url.search = ''; // `?password=…` and `?sslkey=…` are options too
      return url.toString();
    } catch {
      return 'the configured server';
    }
  }
  return `${config.host ?? 'localhost'}:${config.port ?? 5432}/${config.database ?? ''}`;
}
