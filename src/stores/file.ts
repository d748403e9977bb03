/**
 * A `CheckpointStore` in a directory: `tollgate/file`. No database, one machine, durable.
 *
 * Each run has a directory with a small head file and an append-only journal of its entries.
 * A save, under the run's lock: append the new entries to the journal and fsync it; then
 * replace the head (which records the version and how many journal bytes belong to the run)
 * by writing a temp file, fsyncing it, renaming it over, and fsyncing the directory. The rename
 * is the commit: a crash before it leaves the old head, which ignores the torn journal tail.
 * A save costs O(new entries + head), whatever the history's length.
 *
 * Reads take no lock: a head is replaced atomically, and the bytes it points to are never
 * rewritten while it is current. Runs are listed by reading every head: fine for thousands of
 * runs, not for millions (use SQLite or Postgres). A damaged run (its head or journal is not
 * what a save wrote: a disk fault, a hand edit) is that run's problem only: `load` and `save`
 * of it throw a `CheckpointError` naming it, and `list` leaves it out and reports it to
 * `onDamaged`, so the approval inbox still shows every other run. `delete` removes it.
 *
 * @example
 * import { FileStore } from 'tollgate/file';
 * const store = new FileStore({ dir: './runs' });
 * const agent = new Agent({ policy, tools, store });
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { CheckpointError, OptionsError, TollgateError, UserError } from '../errors.js';
import { showValue } from '../option-keys.js';
import {
  type CheckpointStore,
  checkSave,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from '../store.js';
import {
  damaged,
  decodeEntries,
  encodeEntries,
  encodeHead,
  type HeadMeta,
  readPrefix,
  replaceFile,
  runDirName,
  syncDir,
  writeAt,
} from './file/format.js';
import { type DamagedRun, HEAD, type HeadRead, ioFault, readAllHeads, readHead } from './file/heads.js';
import { withLock } from './file/lock.js';
import {
  checkClock,
  checkDuration,
  checkListOptions,
  checkRunId,
  checkStoreOptions,
  checkWrite,
  compareRuns,
  timestampOf,
} from './rules.js';

export type { DamagedRun } from './file/heads.js';

export interface FileStoreOptions {
  /** The directory that holds the runs (created if missing). */
  dir: string;
  /** How long a save or delete waits for another process's lock on the same run (0: not at all). @default 10_000 */
  lockTimeoutMs?: number;
  /** The clock for `updatedAt`, in ms since the epoch. @default Date.now */
  now?: () => number;
  /**
   * Told about each run `list` leaves out because it cannot be read (a damaged or unreadable
   * head). The listing goes on without it; `load` of that run throws the same error.
   * @default a process warning (`TOLLGATE_DAMAGED_RUN`), once per run and store
   */
  onDamaged?: (damage: DamagedRun) => void;
}

const KNOWN = ['dir', 'lockTimeoutMs', 'now', 'onDamaged'];
const LOCK = 'lock';
const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

/** A `CheckpointStore` in a directory: one folder per run, a head file and an append-only journal. */
export class FileStore implements CheckpointStore {
  /** The store's directory, absolute. */
  readonly dir: string;
  readonly #runs: string;
  readonly #lockTimeoutMs: number;
  readonly #now: () => number;
  readonly #onDamaged: (damage: DamagedRun) => void;
  #closed = false;

  /** @throws OptionsError on a missing `dir`, an unknown option or a bad value. */
  constructor(options: FileStoreOptions) {
    const call = 'new FileStore';
    const o = checkStoreOptions(call, options, KNOWN);
    if (typeof o.dir !== 'string' || o.dir === '') {
      throw new OptionsError(`${call}: dir must be a directory path, got ${showValue(o.dir)}`);
    }
    if (o.onDamaged !== undefined && typeof o.onDamaged !== 'function') {
      throw new OptionsError(`${call}: onDamaged must be a function, got ${showValue(o.onDamaged)}`);
    }
    this.dir = resolve(o.dir);
    this.#runs = join(this.dir, 'runs');
    this.#lockTimeoutMs = checkDuration(call, 'lockTimeoutMs', o.lockTimeoutMs, 10_000, 0);
    this.#now = checkClock(call, o.now) ?? Date.now;
    this.#onDamaged = o.onDamaged ?? warnOnce();
  }

  async load(runId: string): Promise<StoredRun | null> {
    checkRunId('load', runId);
    return this.#guard('load', async () => {
      const dir = join(this.#runs, runDirName(runId));
      // A delete (and re-create) between reading the head and its journal shows as a missing
      // journal: read again. A journal that stays missing is damage.
      for (let attempt = 0; ; attempt++) {
        const found = await readHead('load', dir, runId);
        if (!found) return null;
        const { meta, head } = found;
        const journal = join(dir, meta.journal);
        try {
          const bytes = meta.journalBytes === 0 ? Buffer.alloc(0) : await readPrefix(journal, meta.journalBytes, runId);
          const entries = decodeEntries(bytes, meta.entries, journal, runId);
          const { version, status, pending, updatedAt } = meta;
          return { runId, version, status, head, entries, pending, updatedAt };
        } catch (error) {
          if (code(error) !== 'ENOENT') throw error;
          if (attempt >= 10) throw damaged(runId, journal, 'is missing', error);
        }
      }
    });
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    checkWrite('save', runId, write, expectedVersion);
    return this.#guard('save', () => {
      const dir = join(this.#runs, runDirName(runId));
      return withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
        const current = (await readHead('save', dir, runId))?.meta ?? null;
        const version = current?.version ?? 0;
        const stored = current?.entries ?? 0;
        checkSave(runId, current, write.from, expectedVersion);
        // A new run: whatever a crashed create or delete left in its directory is not part of it.
        if (!current) await this.#clearLeftovers(dir);
        const journal = current?.journal ?? `journal-${randomUUID()}.log`;
        let journalBytes = current?.journalBytes ?? 0;
        if (write.append.length > 0) {
          const bytes = encodeEntries(write.append);
          await writeAt(join(dir, journal), journalBytes, bytes);
          journalBytes += bytes.length;
        }
        const meta: HeadMeta = {
          runId,
          version: version + 1,
          status: write.status,
          pending: write.pending,
          updatedAt: timestampOf(this.#now),
          entries: stored + write.append.length,
          journal,
          journalBytes,
        };
        await replaceFile(join(dir, HEAD), dir, encodeHead(meta, write.head), randomUUID());
        if (!current) {
          // The run's directory entry itself (and, for the first run, that of runs/).
          await syncDir(this.#runs);
          await syncDir(this.dir);
        }
        return version + 1;
      });
    });
  }

  async list(options?: ListOptions): Promise<RunSummary[]> {
    const { status, limit } = checkListOptions(options);
    return this.#guard('list', async () => {
      const heads = await readAllHeads(this.#runs, this.#onDamaged);
      const runs: RunSummary[] = [];
      for (const { meta } of heads) {
        if (status !== undefined && meta.status !== status) continue;
        const { runId, version, status: s, pending, updatedAt } = meta;
        runs.push({ runId, version, status: s, pending, updatedAt });
      }
      return runs.sort(compareRuns).slice(0, limit ?? Number.POSITIVE_INFINITY);
    });
  }

  /** Deletes a run. A damaged run can be deleted too, without an expected version (it has no readable one). */
  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    checkRunId('delete', runId);
    return this.#guard('delete', async () => {
      const dir = join(this.#runs, runDirName(runId));
      const current = (): Promise<HeadRead | 'damaged' | null> =>
        readHead('delete', dir, runId).catch((error: unknown) => {
          if (error instanceof CheckpointError && expectedVersion === undefined) return 'damaged';
          throw error;
        });
      if (!(await current())) return false;
      const deleted = await withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
        const found = await current();
        if (!found) return false;
        if (found !== 'damaged' && expectedVersion !== undefined && found.meta.version !== expectedVersion) {
          throw deleteConflict(runId, found.meta.version, expectedVersion);
        }
        await rm(join(dir, HEAD)); // the commit: without a head there is no run
        await syncDir(dir);
        await this.#clearLeftovers(dir);
        return true;
      });
      if (deleted) {
        // Best effort: another process may already be making a run with this id in it.
        await rmdir(dir).catch(() => {});
      }
      return deleted;
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  /** Runs one operation: refused once closed; a file-system failure becomes a `StoreUnavailableError`. */
  async #guard<T>(call: string, work: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new UserError(`FileStore.${call}: the store is closed (${this.dir})`);
    try {
      return await work();
    } catch (error) {
      if (error instanceof TollgateError) throw error;
      throw ioFault(call, (error as { path?: string })?.path ?? this.dir, error);
    }
  }

  /** Removes every file of the run's directory but its lock files. Called holding the lock. */
  async #clearLeftovers(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const name of await readdir(dir)) {
      if (name !== LOCK && name !== `${LOCK}.break`) await rm(join(dir, name), { force: true });
    }
  }
}

/** The default `onDamaged`: one process warning per damaged run and store, not one per `list` (the inbox is polled). */
function warnOnce(): (damage: DamagedRun) => void {
  const told = new Set<string>();
  return ({ dir, error }) => {
    if (told.has(dir)) return;
    told.add(dir);
    process.emitWarning(`${error.message}; list() leaves it out`, { code: 'TOLLGATE_DAMAGED_RUN' });
  };
}
