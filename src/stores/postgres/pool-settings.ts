/**
 * Where and how a `PostgresStore` connects: the connection string checked up front, a
 * description of the server for messages (never its password), and the pool's settings with
 * the timeouts that bound every wait.
 */
import type { Pool, PoolConfig } from 'pg';
import pg from 'pg';
import { OptionsError } from '../../errors.js';
import { showValue } from '../../option-keys.js';
import { checkDuration, MAX_TIMER_MS } from '../../store/arguments.js';

/** The timeouts a store applies, in ms (see `PostgresStoreOptions`). */
export interface Timeouts {
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  queryTimeoutMs: number;
}

/** `connectTimeoutMs` when not given: fast enough to fail a request, slow enough for a TLS login across a region. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** `statementTimeoutMs` when not given: far above a save's or a 10,000-entry run's load (docs/performance.md). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
/** How much longer than the statement timeout the client waits: the server's own cancel should come first. */
export const QUERY_TIMEOUT_MARGIN_MS = 5_000;

/**
 * `text` with any password replaced by `***`: the one in the URL's user info (up to the last
 * `@`, so an unencoded `@` or `#` in a password is hidden too) and `password=` parameters.
 * Works on strings that are not valid URLs: those are the ones error messages show.
 * @example redactUrl('postgres://app:s3cret@db:5432/runs') // 'postgres://app:***@db:5432/runs'
 */
export function redactUrl(text: string): string {
  let out = text;
  const scheme = out.indexOf('://');
  if (scheme >= 0) {
    const rest = out.slice(scheme + 3);
    const at = rest.lastIndexOf('@');
    const colon = at < 0 ? -1 : rest.slice(0, at).indexOf(':');
    if (colon >= 0) out = `${out.slice(0, scheme + 3)}${rest.slice(0, colon)}:***@${rest.slice(at + 1)}`;
  }
  return out.replace(/([?&](?:password|sslpassword)=)[^&]*/gi, '$1***');
}

/** The server a config points at, for messages: never the password. */
export function describeTarget(config: PoolConfig): string {
  if (config.connectionString) return redactUrl(config.connectionString);
  return `${config.host ?? 'localhost'}:${config.port ?? 5432}/${config.database ?? ''}`;
}

/**
 * Throws `OptionsError` unless `text` is a connection string `pg` reads as the user meant it.
 * pg resolves anything else against `postgres://base` (`'not a url'` becomes host `base`),
 * throws a bare `TypeError: Invalid URL` at the first query for a bad port, and silently drops
 * everything after a `#` — often the rest of a password.
 */
export function checkConnectionString(call: string, text: unknown): void {
  if (typeof text !== 'string' || text === '') {
    throw new OptionsError(`${call}: the connection string must be a postgres:// URL, got ${showValue(text)}`);
  }
  const shown = JSON.stringify(redactUrl(text));
  if (!/^(postgres(ql)?:\/\/|socket:)/i.test(text) && !text.startsWith('/')) {
    throw new OptionsError(`${call}: ${shown} is not a Postgres URL (postgres://user:password@host:5432/database)`);
  }
  if (text.includes('#')) {
    throw new OptionsError(
      `${call}: ${shown} holds "#", where a URL ends: pg would ignore the rest; percent-encode it (%23) in a password`,
    );
  }
  try {
    // Parses the string exactly as the pool will, without connecting.
    new pg.Client({ connectionString: text });
  } catch (error) {
    throw new OptionsError(
      `${call}: ${shown} is not a valid URL (${(error as Error)?.message ?? String(error)}): check the host and port, and percent-encode special characters in the password`,
      { cause: error },
    );
  }
}

/** The store's timeouts from its options. @throws OptionsError naming the option and the bad value. */
export function timeoutsOf(
  call: string,
  options: { connectTimeoutMs?: unknown; statementTimeoutMs?: unknown; queryTimeoutMs?: unknown },
): Timeouts {
  const connectTimeoutMs = checkDuration(
    call,
    'connectTimeoutMs',
    options.connectTimeoutMs,
    DEFAULT_CONNECT_TIMEOUT_MS,
  );
  const statementTimeoutMs = checkDuration(
    call,
    'statementTimeoutMs',
    options.statementTimeoutMs,
    DEFAULT_STATEMENT_TIMEOUT_MS,
  );
  const queryTimeoutMs = checkDuration(
    call,
    'queryTimeoutMs',
    options.queryTimeoutMs,
    Math.min(MAX_TIMER_MS, statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS),
  );
  return { connectTimeoutMs, statementTimeoutMs, queryTimeoutMs };
}

/**
 * The config of the pool a store makes: its own defaults, then the caller's `PoolConfig`, then
 * the store's explicit options. `statement_timeout` is sent at connect time, so the server
 * cancels a statement that runs too long (waiting on a lock, say) and says so. (The client's
 * query timeout is set on each query instead, so that it bounds a pool given to the store too.)
 */
export function poolConfigOf(
  connection: string | PoolConfig,
  timeouts: Timeouts,
  explicit: { statementTimeoutMs?: unknown; maxConnections?: number },
): PoolConfig {
  const given: PoolConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
  return {
    max: 10,
    statement_timeout: timeouts.statementTimeoutMs,
    ...given,
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    ...(explicit.statementTimeoutMs === undefined ? {} : { statement_timeout: timeouts.statementTimeoutMs }),
    ...(explicit.maxConnections === undefined ? {} : { max: explicit.maxConnections }),
  };
}

/** Duck-typed, so a pool from another copy of `pg` is still recognised. */
export function isPool(value: unknown): value is Pool {
  const v = value as Partial<Pool> | null;
  return typeof v?.connect === 'function' && typeof v.query === 'function' && typeof v.end === 'function';
}
