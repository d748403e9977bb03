/**
 * Switching a database to WAL, waiting for other connections as `busy_timeout` would.
 *
 * SQLite does not call the busy handler for `PRAGMA journal_mode = WAL` when another
 * connection holds the write lock of a database still in rollback mode (waiting could
 * deadlock, so it answers SQLITE_BUSY at once — measured on better-sqlite3 12). Two processes
 * opening a new file together hit exactly that: one is migrating while the other asks for
 * WAL. So the switch is retried, with short sleeps, until `busyTimeoutMs` has passed.
 */
import type Database from 'better-sqlite3';

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the thread for `ms` (the constructor is synchronous, as the driver's own busy wait is). */
function sleep(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/**
 * Sets `journal_mode = WAL` on `db`, retrying a busy answer until `busyTimeoutMs` has passed.
 * @throws the driver's last SQLITE_BUSY once the time is up, or any other error at once.
 */
export function enableWal(db: Database.Database, busyTimeoutMs: number, now: () => number = Date.now): void {
  const deadline = now() + busyTimeoutMs;
  let pause = 2;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      const left = deadline - now();
      if (!isBusy(error) || left <= 0) throw error;
      sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 50);
    }
  }
}
