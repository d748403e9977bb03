/**
 * What can go wrong with a SQLite database file, as Tollgate's typed errors: a path that cannot
 * be a database is the caller's mistake (`OptionsError`); a file that is not a database, or a
 * damaged one, is `StoreDamagedError`; a lock held past `busyTimeoutMs`, a full or read-only
 * disk, a file that cannot be opened is `StoreUnavailableError`. Every message names the path.
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { OptionsError, StoreDamagedError, StoreUnavailableError, SystemError, TollgateError } from '../../errors.js';

const errno = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

/**
 * Checks, before SQLite sees it, that `path` can be a database file: not a directory, in a
 * folder that exists. (better-sqlite3 throws a bare `TypeError` or "unable to open" for these.)
 */
export function checkDatabasePath(call: string, path: string): void {
  if (path === ':memory:') return;
  const shown = JSON.stringify(path);
  try {
    if (statSync(path).isDirectory()) {
      throw new OptionsError(`${call}: ${shown} is a directory; give the path of a database file in it`);
    }
    return;
  } catch (error) {
    if (error instanceof TollgateError) throw error;
    if (errno(error) !== 'ENOENT' && errno(error) !== 'ENOTDIR') throw fault(call, path, error);
  }
  // The file is missing (SQLite will create it): its folder must exist.
  const folder = dirname(resolve(path));
  let isFolder: boolean;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch (error) {
    if (errno(error) !== 'ENOENT' && errno(error) !== 'ENOTDIR') throw fault(call, path, error);
    throw new OptionsError(`${call}: cannot create ${shown}: its folder ${folder} does not exist; create it first`);
  }
  if (!isFolder) throw new OptionsError(`${call}: cannot create ${shown}: ${folder} is not a folder`);
}

/** A SQLite (or file-system) failure on `path` as a typed error; Tollgate's own errors pass through. */
export function fault(call: string, path: string, error: unknown, busyTimeoutMs?: number): TollgateError {
  if (error instanceof TollgateError) return error;
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  const message = (error as Error | null)?.message ?? String(error);
  const where = `${call}: ${JSON.stringify(path)}`;
  const details = { cause: error };
  // Extended result codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT) share their primary's meaning.
  const primary = code.split('_').slice(0, 2).join('_');
  switch (primary) {
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED': {
      const waited = busyTimeoutMs === undefined ? '' : ` for over busyTimeoutMs (${busyTimeoutMs} ms)`;
      return new StoreUnavailableError(`${where} is locked by another connection${waited}; try again later`, details);
    }
    case 'SQLITE_NOTADB':
      return new StoreDamagedError(
        `${where} is not a SQLite database (or its header is damaged); nothing was changed`,
        details,
      );
    case 'SQLITE_CORRUPT':
      return new StoreDamagedError(`${where} is damaged (${message}); restore it from a backup`, details);
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_PERM':
    case 'SQLITE_READONLY':
    case 'SQLITE_IOERR':
    case 'SQLITE_FULL':
    case 'SQLITE_AUTH':
    case 'SQLITE_NOLFS':
    case 'SQLITE_PROTOCOL':
      return new StoreUnavailableError(`${where} cannot be used: ${message} (${code})`, details);
    default:
      if (errno(error)) return new StoreUnavailableError(`${where} cannot be used: ${message}`, details);
      return new SystemError(`${where}: ${message}${code ? ` (${code})` : ''}`, details);
  }
}
