/**
 * Where a file store keeps a run's lease. While the run has a head, in the head's metadata
 * (`lease`): a save rewrites the head anyway, so checking and extending the lease costs no extra
 * write or fsync. While it has none (claimed before its first save, or deleted), in `lease.json`
 * in the run's directory: the first save moves the record into the head, and a delete moves it
 * back out before it removes the head, so the token survives and only grows. Every change is
 * made holding the run's lock, and written like a head (temp file, fsync, rename, fsync).
 */
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { LeaseRecord } from '../../store/leases.js';
import { damaged, encodeHead, leaseProblem, replaceFile, runDirName, syncDir } from './format.js';
import { HEAD, type HeadRead, ioFault, readHead } from './heads.js';
import { withLock } from './lock.js';

export const LEASE = 'lease.json';

const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

/**
 * The lease record in `dir`'s `lease.json`, or null when there is none.
 * @throws CheckpointError naming the run when it is not what a store wrote.
 */
export async function readLeaseFile(call: string, dir: string, runId: string): Promise<LeaseRecord | null> {
  const path = join(dir, LEASE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return null;
    throw ioFault(call, path, error);
  }
  let stored: { runId?: unknown } & Partial<LeaseRecord>;
  try {
    stored = JSON.parse(text);
  } catch (error) {
    throw damaged(runId, path, `is not JSON (${String(error)})`, error);
  }
  const problem = leaseProblem(stored);
  if (problem) throw damaged(runId, path, `is not a lease: ${problem}`);
  if (stored.runId !== runId) throw damaged(runId, path, `holds the lease of run ${JSON.stringify(stored.runId)}`);
  const { token, owner = null, expiresAt = null, process = null } = stored;
  return { token: token as number, owner, expiresAt, process };
}

/** Writes `lease.json` durably; `runsDir` is synced too, for a run directory made just now. */
export async function writeLeaseFile(dir: string, runsDir: string, runId: string, lease: LeaseRecord): Promise<void> {
  const { token, owner, expiresAt, process = null } = lease;
  const text = JSON.stringify({ runId, token, owner, expiresAt, process });
  await replaceFile(join(dir, LEASE), dir, text, randomUUID());
  await syncDir(runsDir);
}

/** Removes `lease.json` once the head holds the record (a leftover would only be ignored). */
export async function dropLeaseFile(dir: string): Promise<void> {
  await rm(join(dir, LEASE), { force: true });
}

/** The run's lease: the head's while it has one, else `lease.json`'s. Call holding the run's lock. */
export async function currentLease(
  call: string,
  dir: string,
  runId: string,
  found: HeadRead | null,
): Promise<LeaseRecord | null> {
  if (found) return found.meta.lease ?? null;
  return readLeaseFile(call, dir, runId);
}

/**
 * Under the run's lock: reads its lease record and writes what `decide` makes of it (nothing
 * for null) where it lives, the head or `lease.json`. The head is rewritten as it was, with
 * the new record: its version and `updatedAt` do not change. @returns what `decide` returned.
 */
export function changeLease(
  room: { runs: string; lock: string; lockTimeoutMs: number },
  call: string,
  runId: string,
  decide: (current: LeaseRecord | null) => LeaseRecord | null,
): Promise<LeaseRecord | null> {
  const dir = join(room.runs, runDirName(runId));
  return withLock(join(dir, room.lock), room.lockTimeoutMs, async () => {
    const found = await readHead(call, dir, runId);
    const next = decide(await currentLease(call, dir, runId, found));
    if (!next) return null;
    if (found) {
      const head = encodeHead({ ...found.meta, lease: next }, found.head);
      await replaceFile(join(dir, HEAD), dir, head, randomUUID());
    } else await writeLeaseFile(dir, room.runs, runId, next);
    return next;
  });
}
