/**
 * A `PostgresStore`'s way to its server: connections from a `pg` pool, each wait bounded
 * (connect, query), each connection heard when it fails, each failure typed.
 */
import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryArrayConfig, QueryConfig } from 'pg';
import pg from 'pg';
import { StoreUnavailableError, UserError } from '../../errors.js';
import { connectionIsSpent, pgFault } from './faults.js';
import type { Sql } from './migrations.js';
import type { Timeouts } from './pool-settings.js';

const { escapeLiteral } = pg;

/** A pooled connection as the store uses it. */
export interface StoreSql extends Sql {
  /** The rows as arrays of column values, in the statement's column order: no object per row. */
  arrays(text: string, values: unknown[]): Promise<unknown[][]>;
  /**
   * Several statements sent at once (the simple query protocol: one round trip, run as one
   * transaction, each statement with a snapshot of its own): each statement's rows as arrays.
   * `text` takes no parameters: every value in it must be a literal made by `literal`.
   */
  batch(text: string): Promise<unknown[][][]>;
}

/** A value as an SQL literal, for `batch`: a string quoted (pg's escaping), a number as it is, null as NULL. */
export function literal(value: string | number | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`literal: ${value} is not a safe integer`);
    return String(value);
  }
  return escapeLiteral(value);
}

/** The pool a store uses, with its timeouts and error listeners; `use` is the one way to run SQL on it. */
export class Connections {
  readonly #pool: Pool;
  readonly #where: string;
  readonly #timeouts: Timeouts;
  /** The connections that have our error listener. */
  readonly #heard = new WeakSet<PoolClient>();
  /** Statement text → the name it is prepared under on each connection. */
  readonly #names = new Map<string, string>();
  #closed = false;

  /**
   * `where` names the server in messages, without its password. `prepared`: statements run as
   * named prepared statements, each named by a digest of its text (so stores of different schemas
   * sharing a pool never clash).
   */
  constructor(pool: Pool, where: string, timeouts: Timeouts, prepared: readonly string[] = []) {
    this.#pool = pool;
    this.#where = where;
    this.#timeouts = timeouts;
    for (const text of prepared) {
      this.#names.set(text, `tollgate_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
    }
  }

  /** From now on every call is refused (`UserError`); work in flight finishes. */
  close(): void {
    this.#closed = true;
  }

  /**
   * Runs `work` on a pooled connection, each query bounded by the query timeout. A connection
   * that failed (broke, timed out, is being shut down) is discarded rather than pooled again;
   * every failure becomes a typed error (faults.ts). `writes`: a broken connection leaves the
   * outcome unknown, and the message says so.
   */
  async use<T>(call: string, writes: boolean, work: (sql: StoreSql) => Promise<T>): Promise<T> {
    const client = await this.#connect(call);
    this.listen(client);
    const query_timeout = this.#timeouts.queryTimeoutMs;
    const sql: StoreSql = {
      query: (text, values) =>
        client.query({ name: this.#names.get(text), text, values, query_timeout } as QueryConfig),
      arrays: async (text, values) => {
        const config = { name: this.#names.get(text), text, values, query_timeout, rowMode: 'array' };
        return (await client.query(config as QueryArrayConfig)).rows;
      },
      batch: async (text) => {
        const config = { text, query_timeout, rowMode: 'array' };
        const result = (await client.query(config as QueryArrayConfig)) as unknown;
        const results = (Array.isArray(result) ? result : [result]) as { rows: unknown[][] }[];
        return results.map((r) => r.rows);
      },
    };
    try {
      const result = await work(sql);
      client.release();
      return result;
    } catch (error) {
      client.release(connectionIsSpent(error));
      throw pgFault(error, { call, where: this.#where, writes, ...this.#timeouts });
    }
  }

  /**
   * A connection of its own for a long-lived use (`LISTEN`): out of the pool until the caller
   * releases it (`release(true)`: it is closed, not pooled again), heard when it fails.
   */
  async acquire(call: string): Promise<PoolClient> {
    const client = await this.#connect(call);
    this.listen(client);
    return client;
  }

  /**
   * A connection dropped mid-query fails the query and also emits 'error' on its client, which
   * the pool listens to only while the client is idle: unheard, that event kills the process.
   * The failed query already carries the error to the caller, so the event needs no action.
   */
  listen(client: PoolClient): void {
    if (this.#heard.has(client)) return;
    this.#heard.add(client);
    client.on('error', () => {});
  }

  /** A pooled connection, or a `StoreUnavailableError` within the connect timeout. */
  async #connect(call: string): Promise<PoolClient> {
    if (this.#closed) throw new UserError(`${call}: the store is closed`);
    const ms = this.#timeouts.connectTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const connecting = this.#pool.connect();
    // A pool the store made has its own connect timeout; this one also covers a pool given to it.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection within connectTimeoutMs (${ms} ms)`)), ms);
    });
    try {
      return await Promise.race([connecting, timeout]);
    } catch (error) {
      connecting.then((late) => late.release()).catch(() => {});
      const e = error as { message?: unknown; code?: unknown } | null;
      const reason = typeof e?.message === 'string' && e.message !== '' ? e.message : String(e?.code ?? error);
      throw new StoreUnavailableError(
        `${call}: cannot connect to ${this.#where} (${reason}); is the server running and the URL right?`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
