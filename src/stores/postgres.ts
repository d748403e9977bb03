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
 * Every wait is bounded (connect, statement, query timeouts), every pooled connection has an
 * error listener, and every failure reaches the caller as a typed error naming the server
 * without its password: a dropped or black-holed connection never kills or hangs the process.
 *
 * @example
 * import { PostgresStore } from 'tollgate/postgres';
 * const store = new PostgresStore(process.env.DATABASE_URL, { schema: 'tollgate' });
 * const agent = new Agent({ store, policy, tools });
 * // … later, in any process:
 * for (const run of await store.list({ status: 'awaiting_approval' })) console.log(run.pending);
 * await store.close();
 */

import type { Pool, PoolConfig } from 'pg';
import pg from 'pg';
import type { PendingCall, Status } from '../../machines/types.js';
import { CheckpointError, OptionsError, StoreUnavailableError } from '../errors.js';
import { showValue } from '../option-keys.js';
import {
  type CheckpointStore,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
  saveConflict,
} from '../store.js';
import { checkConnectionString, describeTarget, poolConfigOf, timeoutsOf } from './postgres/connection.js';
import { Connections } from './postgres/connections.js';
import { sqlStateOf } from './postgres/faults.js';
import { migrate } from './postgres/migrations.js';
import { type Statements, statements } from './postgres/sql.js';
import { checkClock, checkListOptions, checkRunId, checkStoreOptions, checkWrite, timestampOf } from './rules.js';

export { redactUrl } from './postgres/connection.js';
export { SCHEMA_VERSION } from './postgres/migrations.js';
/** Also exported by `tollgate`; kept here for code that imported it from `tollgate/postgres`. */
export { StoreUnavailableError };

export interface PostgresStoreOptions {
  /**
   * The schema holding Tollgate's tables (`runs`, `entries`, `tollgate_migrations`); created
   * on first use if missing. Tests isolate themselves in a schema of their own.
   * @default 'tollgate'
   */
  schema?: string;
  /**
   * Give up connecting (or waiting for a free pooled connection) after this many milliseconds
   * with a `StoreUnavailableError`: an unreachable or black-holed server fails fast instead of
   * hanging every save.
   * @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * The server cancels a statement that runs longer than this (Postgres `statement_timeout`,
   * set when a connection opens): a save stuck behind a lock fails with a
   * `StoreUnavailableError`, and nothing of it is committed. Applies to the pool the store
   * creates; set `statement_timeout` in your own pool's config.
   * @default 10000
   */
  statementTimeoutMs?: number;
  /**
   * The client gives up on a query whose answer has not come after this long (the server or
   * the network stopped answering), drops the connection, and throws `StoreUnavailableError`.
   * Whether a save cut off this way was committed is unknown: load the run to see.
   * Keep it above `statementTimeoutMs`, so that a slow statement is cancelled by the server first.
   * @default statementTimeoutMs + 5000
   */
  queryTimeoutMs?: number;
  /** Connections in the pool the store creates (ignored for a pool you pass). @default 10 */
  maxConnections?: number;
  /** The clock for `updatedAt`, in ms since the epoch. @default the database's clock */
  now?: () => number;
}

const OPTIONS = ['schema', 'connectTimeoutMs', 'statementTimeoutMs', 'queryTimeoutMs', 'maxConnections', 'now'];
const CALL = 'new PostgresStore';
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
 * `close()` ends the pool the store created; a pool you passed stays yours to end (and its
 * idle connections' errors are yours to listen to: `pool.on('error', …)`).
 */
export class PostgresStore implements CheckpointStore {
  readonly #sql: Statements;
  readonly #schema: string;
  readonly #pool: Pool;
  readonly #ownsPool: boolean;
  readonly #connections: Connections;
  readonly #now: (() => number) | undefined;
  #ready: Promise<number> | null = null;
  #closed = false;

  /** @throws OptionsError for a malformed URL, an unknown option or a bad value; nothing is connected yet. */
  constructor(connection: string | PoolConfig | Pool, options?: PostgresStoreOptions) {
    const o = checkStoreOptions(CALL, options, OPTIONS);
    const schema = o.schema ?? 'tollgate';
    if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
      throw new OptionsError(
        `${CALL}: schema must be an identifier (letters, digits, _; at most 63), got ${showValue(schema)}`,
      );
    }
    if (o.maxConnections !== undefined && !(Number.isSafeInteger(o.maxConnections) && o.maxConnections >= 1)) {
      throw new OptionsError(`${CALL}: maxConnections must be a whole number ≥ 1, got ${showValue(o.maxConnections)}`);
    }
    const timeouts = timeoutsOf(CALL, o);
    this.#now = checkClock(CALL, o.now);
    this.#schema = schema;
    this.#sql = statements(`"${schema}"`);
    if (isPool(connection)) {
      this.#pool = connection;
      this.#ownsPool = false;
      this.#connections = new Connections(connection, 'the given pool', timeouts);
      return;
    }
    if (typeof connection === 'string') checkConnectionString(CALL, connection);
    else if (connection === null || typeof connection !== 'object') {
      throw new OptionsError(
        `${CALL}: give a connection string, a pg PoolConfig or a pg.Pool, got ${showValue(connection)}`,
      );
    } else if (connection.connectionString !== undefined) {
      checkConnectionString(CALL, connection.connectionString);
    }
    const config = poolConfigOf(connection, timeouts, o);
    this.#pool = new pg.Pool(config);
    this.#ownsPool = true;
    this.#connections = new Connections(this.#pool, describeTarget(config), timeouts);
    // An idle connection that the server drops (restart, failover) emits 'error' on the pool;
    // unheard, it would kill the process. The next query simply opens a new connection.
    this.#pool.on('error', () => {});
    this.#pool.on('connect', (client) => this.#connections.listen(client));
  }

  /**
   * Creates or upgrades the schema (also done on first use). Concurrent callers in any number
   * of processes are serialised by an advisory lock.
   * @returns the schema version.
   */
  migrate(): Promise<number> {
    return this.#migrate('PostgresStore.migrate');
  }

  async load(runId: string): Promise<StoredRun | null> {
    checkRunId('load', runId);
    // One statement: head and entries come from the same snapshot.
    const { rows } = await this.#query<RunRow & { head: string; entry_count: number; entries: string[] }>(
      'load',
      this.#sql.load,
      [runId],
    );
    const row = rows[0];
    if (!row) return null;
    if (row.entries.length !== row.entry_count) {
      throw new CheckpointError(
        `postgres: run ${JSON.stringify(runId)} is damaged: it should have ${row.entry_count} entries but has ${row.entries.length}`,
        undefined,
        { runId },
      );
    }
    return { ...summaryOf(row), head: row.head, entries: row.entries };
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    checkWrite('save', runId, write, expectedVersion);
    // Creating a run with entries already stored cannot match anything: a conflict.
    if (expectedVersion > 0 || write.from === 0) {
      const values = [
        runId,
        write.status,
        write.head,
        write.from,
        write.append,
        write.pending === null ? null : JSON.stringify(write.pending),
        this.#now ? timestampOf(this.#now) : null,
      ];
      const sql = expectedVersion === 0 ? this.#sql.insertRun : this.#sql.updateRun;
      if (expectedVersion > 0) values.push(expectedVersion);
      try {
        const { rows } = await this.#query<{ version: number }>('save', sql, values);
        if (rows[0]) return rows[0].version;
      } catch (error) {
        // The entries' primary key: someone appended at these indexes. Cannot happen while the
        // version check holds, but a duplicate is a conflict, never an overwrite.
        if (sqlStateOf((error as Error).cause) !== '23505') throw error;
      }
    }
    const { rows } = await this.#query<{ version: number; entry_count: number }>('save', this.#sql.current, [runId]);
    const actual = rows[0];
    throw saveConflict(
      runId,
      actual ? { version: actual.version, entries: actual.entry_count } : null,
      write.from,
      expectedVersion,
    );
  }

  async list(options?: ListOptions): Promise<RunSummary[]> {
    const { status, limit } = checkListOptions(options);
    const { rows } = await this.#query<RunRow>('list', this.#sql.list, [status ?? null, limit ?? null]);
    return rows.map(summaryOf);
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    checkRunId('delete', runId);
    const { rowCount } = await this.#query('delete', this.#sql.delete, [runId, expectedVersion ?? null]);
    if (rowCount) return true;
    if (expectedVersion === undefined) return false;
    const { rows } = await this.#query<{ version: number }>('delete', this.#sql.current, [runId]);
    const actual = rows[0]?.version;
    if (actual === undefined) return false;
    throw deleteConflict(runId, actual, expectedVersion);
  }

  /** Ends the pool the store created; a pool given to the constructor is left open. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#connections.close();
    await this.#ready?.catch(() => {});
    if (this.#ownsPool) await this.#pool.end();
  }

  #migrate(call: string): Promise<number> {
    if (!this.#ready) {
      const ready = this.#connections.use(call, true, (sql) => migrate(sql, this.#schema));
      // A failed attempt (server down) is not remembered: the next call tries again.
      ready.catch(() => {
        if (this.#ready === ready) this.#ready = null;
      });
      this.#ready = ready;
    }
    return this.#ready;
  }

  async #query<R extends object = Record<string, unknown>>(op: string, text: string, values: unknown[]) {
    const call = `PostgresStore.${op}`;
    await this.#migrate(call);
    return this.#connections.use(call, op === 'save' || op === 'delete', (sql) => sql.query<R>(text, values));
  }
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
