/**
 * Where a store is, from a `--store` value: one identity per store whatever the spelling, and
 * a way to show it that never includes a password.
 *
 * - An SQLite file: `runs.db`, `./runs.db` and `/abs/runs.db` are one store, its absolute path
 *   (through symbolic links of the folders that exist).
 * - A Postgres URL: `postgresql://U@Host/db` and `postgres://U@host:5432/db` are one store. Its
 *   password (in the URL or as `?password=`) is in the connection target only: the key drops it
 *   and the display shows `***`.
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CliUsageError } from './exit-codes.js';

/** The store used when neither `--store` nor `TOLLGATE_STORE` names one: an SQLite file in the current directory. */
export const DEFAULT_STORE = 'tollgate.db';

/** A store, located. */
export interface StoreLocation {
  kind: 'sqlite' | 'postgres';
  /** What to open: the absolute file path, or the URL as given (password included). */
  target: string;
  /** The store's identity (keys `.tollgate/agents.json`): the absolute path, or the normalised URL without its password. */
  key: string;
  /** How to show it: the absolute path, or the normalised URL with its password as `***`. */
  display: string;
  /** True when the URL holds a secret: it must be given again (TOLLGATE_STORE), never printed. */
  secret: boolean;
}

/** The `--store` value in effect: the option, else `$TOLLGATE_STORE` (when not empty), else the default. */
export function storeSpec(option: string | undefined): string {
  if (option !== undefined) return option;
  const env = process.env.TOLLGATE_STORE;
  return env === undefined || env === '' ? DEFAULT_STORE : env;
}

const POSTGRES = /^postgres(ql)?:\/\//i;
const SECRET_PARAMS = new Set(['password', 'sslpassword']);

/** Any `user:password@` in `text` replaced by `user:***@`: for a URL too broken to parse. */
export function redactLoose(text: string): string {
  return text.replace(/(\/\/[^/:@\s]*):[^@\s]*@/g, '$1:***@');
}

function postgresLocation(spec: string): StoreLocation {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new CliUsageError(`--store: not a valid postgres:// URL: ${redactLoose(spec)}`);
  }
  const params = [...url.searchParams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const secret = url.password !== '' || params.some(([name]) => SECRET_PARAMS.has(name));
  // Not lower-cased by URL for a postgres: scheme; host names are case-insensitive.
  const host = url.hostname.toLowerCase();
  const port = url.port || (host ? '5432' : '');
  const base = (password: string) => {
    const user = url.username ? `${url.username}${password}@` : '';
    return `postgres://${user}${host}${port ? `:${port}` : ''}${url.pathname}`;
  };
  const query = (shown: [string, string][]) => (shown.length ? `?${new URLSearchParams(shown).toString()}` : '');
  const key = base('') + query(params.filter(([name]) => !SECRET_PARAMS.has(name)));
  const display =
    base(url.password ? ':***' : '') + query(params.map(([n, v]) => [n, SECRET_PARAMS.has(n) ? '***' : v]));
  return { kind: 'postgres', target: spec, key, display, secret };
}

/** The absolute path of `path`, with the symbolic links of its existing folders resolved. */
function canonicalPath(path: string): string {
  if (existsSync(path)) return realpathSync(path);
  const parent = dirname(path);
  return parent === path ? path : join(canonicalPath(parent), basename(path));
}

/** Locates the store a `--store` value names, relative to `cwd` for a file. */
export function locateStore(spec: string, cwd = process.cwd()): StoreLocation {
  if (spec === '') throw new CliUsageError('--store: empty; give an SQLite file path or a postgres:// URL');
  if (POSTGRES.test(spec)) return postgresLocation(spec);
  if (spec === ':memory:')
    throw new CliUsageError('--store: an in-memory database forgets the run when the command exits; give a file');
  const path = canonicalPath(resolve(cwd, spec));
  return { kind: 'sqlite', target: path, key: path, display: path, secret: false };
}
