/**
 * A cross-process lock for one run directory: a lock file created exclusively (O_EXCL), holding
 * the owner's pid, its start time, host and boot id. A lock whose owner is dead (same host, and
 * the pid is gone, now names a process started at another time — pids are reused, within seconds
 * on a busy machine — or the machine has rebooted since) is stale and gets broken; breakers take turns through a
 * second exclusive file and re-check the lock under it, so a live owner's lock is never removed.
 * Within one process, callers queue on a promise chain first, so they never poll each other.
 *
 * Limits: one machine. On a shared network file system a lock from another host is never
 * considered stale; use SQLite or Postgres there.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { StoreUnavailableError } from '../../errors.js';
import { statFields, thisProcess } from '../../process-identity.js';

interface Owner {
  pid: number;
  /** When the process started (Linux: clock ticks since boot); absent where /proc is not. */
  start?: string;
  host: string;
  boot: string;
  token: string;
}

/** Identifies this boot of the machine, so a lock from before a reboot is stale even if its pid is reused. */
const BOOT = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

/** An unreadable lock file (its writer died between create and write) is stale after this long. */
const UNREADABLE_STALE_MS = 10_000;

/** Same-process queues, keyed by lock path: the file lock only arbitrates between processes. */
const queues = new Map<string, Promise<unknown>>();
/** The tokens of locks this process holds or is acquiring. */
const mine = new Set<string>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

/**
 * Whether the process that started at `start` still has `pid`; undefined where /proc cannot say
 * (no such entry: gone, or hidden by a hidepid mount, which the signal tells apart). A zombie has
 * exited: it only waits for its parent.
 */
function sameProcess(pid: number, start: string): boolean | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const now = statFields(text);
  return now ? now.startTime === start && now.state !== 'Z' && now.state !== 'X' : undefined;
}

const START = thisProcess().startTime ?? undefined;

function alive(pid: number, start: string | undefined): boolean {
  if (start !== undefined) {
    const same = sameProcess(pid, start);
    if (same !== undefined) return same === true; // a process with a reused pid is not the owner
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return code(error) === 'EPERM'; // exists, owned by someone else
  }
}

/** Creates `path` with `body` if it does not exist; creates its directory if that is missing. */
async function create(path: string, body: string): Promise<boolean> {
  for (;;) {
    try {
      await writeFile(path, body, { flag: 'wx' });
      return true;
    } catch (error) {
      if (code(error) === 'EEXIST') return false;
      if (code(error) !== 'ENOENT') throw error;
      await mkdir(dirname(path), { recursive: true }); // a delete removed the run directory
    }
  }
}

/**
 * The lock's raw content and whether its owner is gone; null if there is no lock now. An
 * unreadable lock (its writer died between creating and writing it) says when it turns stale.
 */
async function inspect(path: string): Promise<{ raw: string; stale: boolean; staleAt?: number } | null> {
  let raw: string;
  let mtimeMs: number;
  try {
    [raw, { mtimeMs }] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
  } catch (error) {
    if (code(error) === 'ENOENT') return null;
    throw error;
  }
  let owner: Owner;
  try {
    owner = JSON.parse(raw) as Owner;
  } catch {
    const staleAt = mtimeMs + UNREADABLE_STALE_MS;
    return { raw, stale: Date.now() > staleAt, staleAt };
  }
  // Our own pid with a token we do not know was left by a dead process whose pid we now have.
  const dead =
    owner.boot !== BOOT ||
    (owner.pid === process.pid
      ? !mine.has(owner.token)
      : !alive(owner.pid, typeof owner.start === 'string' ? owner.start : undefined));
  return { raw, stale: owner.host === hostname() && dead };
}

/**
 * Removes the lock at `path` if it still is the stale one we saw (`raw`).
 * @returns false if another process is breaking it just now.
 */
async function breakStale(path: string, raw: string, body: string): Promise<boolean> {
  const breaker = `${path}.break`;
  if (!(await create(breaker, body))) {
    // Another process is breaking it. If that breaker died mid-way, its marker is stale too.
    const other = await inspect(breaker);
    if (other?.stale) await rm(breaker, { force: true });
    return false;
  }
  try {
    const now = await readFile(path, 'utf8').catch(() => null);
    if (now === raw) await rm(path, { force: true });
  } finally {
    await rm(breaker, { force: true });
  }
  return true;
}

async function acquire(path: string, token: string, timeoutMs: number): Promise<void> {
  const owner: Owner = { pid: process.pid, start: START, host: hostname(), boot: BOOT, token };
  const body = JSON.stringify(owner);
  const deadline = Date.now() + timeoutMs;
  for (let wait = 1; ; wait = Math.min(wait * 2, 25)) {
    if (await create(path, body)) return;
    const held = await inspect(path);
    if (!held) continue;
    if (held.stale) {
      if (!(await breakStale(path, held.raw, body))) await sleep(1);
      continue;
    }
    // An unreadable lock is waited out until it turns stale, whatever the timeout: it has no owner
    // to wait for, and giving up first would fail every caller until someone breaks it.
    const waitingOut = held.staleAt !== undefined && Date.now() <= held.staleAt;
    if (Date.now() > deadline && !waitingOut) {
      const by = held.raw === '' ? 'a writer that died before writing it (empty)' : held.raw;
      throw new StoreUnavailableError(`file store: ${path} has been locked for over ${timeoutMs} ms by ${by}`);
    }
    await sleep(wait);
  }
}

/** Runs `fn` holding the lock at `path`, against other processes and this one. */
export function withLock<T>(path: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(path) ?? Promise.resolve();
  const run = previous.then(async () => {
    const token = randomUUID();
    mine.add(token);
    try {
      await acquire(path, token, timeoutMs);
      try {
        return await fn();
      } finally {
        await rm(path, { force: true });
      }
    } finally {
      mine.delete(token);
    }
  });
  const tail = run.catch(() => {});
  queues.set(path, tail);
  void tail.then(() => {
    if (queues.get(path) === tail) queues.delete(path);
  });
  return run;
}
