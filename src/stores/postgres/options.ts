/** What a `PostgresStore` can be given besides its connection: every option, with its default. */
import { OptionsError } from '../../errors.js';
import { showValue } from '../../option-keys.js';

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Checks `schema` and `maxConnections`. @returns the schema's name (an identifier, so safe to
 * quote and to put in a literal). @throws OptionsError naming the option and the bad value.
 */
export function checkPoolOptions(call: string, o: PostgresStoreOptions): string {
  const schema = o.schema ?? 'tollgate';
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new OptionsError(
      `${call}: schema must be an identifier (letters, digits, _; at most 63), got ${showValue(schema)}`,
    );
  }
  if (o.maxConnections !== undefined && !(Number.isSafeInteger(o.maxConnections) && o.maxConnections >= 1)) {
    throw new OptionsError(`${call}: maxConnections must be a whole number ≥ 1, got ${showValue(o.maxConnections)}`);
  }
  return schema;
}

export interface PostgresStoreOptions {
  /**
   * The schema holding Tollgate's tables (`runs`, `entries`, `leases`, `tollgate_migrations`); created
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
  /**
   * The clock for `updatedAt`, leases and expiry, in ms since the epoch. @default the database's
   * clock (`clock_timestamp()`), so that workers with skewed clocks agree on when a lease lapses
   */
  now?: () => number;
  /**
   * Run the frequent statements (load, summary, save, the lease's claim, renewal and release) as named
   * prepared statements: each connection parses and plans them once, not on every call. Turn it
   * off behind a pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
   * @default true
   */
  preparedStatements?: boolean;
}

/** The option names, for the strict check (`checkStoreOptions`). */
export const OPTIONS = [
  'schema',
  'connectTimeoutMs',
  'statementTimeoutMs',
  'queryTimeoutMs',
  'maxConnections',
  'now',
  'preparedStatements',
];
