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
 * runs, not for millions (use SQLite or Postgres).
 *
 * @example
 * import { FileStore } from 'tollgate/file';
 * const store = new FileStore({ dir: './runs' });
 * const agent = new Agent({ policy, tools, store });
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { OptionsError, SystemError } from '../errors.js';
import {
  type CheckpointStore,
  checkLimit,
  checkSave,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from '../store.js';
import {
  decodeEntries,
  decodeHead,
  encodeEntries,
  encodeHead,
  type HeadMeta,
  readPrefix,
  replaceFile,
  runDirName,
  syncDir,
  writeAt,
} from './file/format.js';
import { withLock } from './file/lock.js';

export interface FileStoreOptions {
  /** The directory that holds the runs (created if missing). */
  dir: string;
  /** How long a save or delete waits for another process's lock on the same run. @default 10_000 */
  lockTimeoutMs?: number;
  /** The clock for `updatedAt`. @default Date.now */
  now?: () => number;
}

const HEAD = 'head.json';
const LOCK = 'lock';
const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

export class FileStore implements CheckpointStore {
  /** The store's directory, absolute. */
  readonly dir: string;
  readonly #runs: string;
  readonly #lockTimeoutMs: number;
  readonly #now: () => number;
  #closed = false;

  constructor(options: FileStoreOptions) {
    if (typeof options?.dir !== 'string' || options.dir === '') {
      throw new OptionsError('FileStore: options.dir must be a directory path');
    }
    this.dir = resolve(options.dir);
    this.#runs = join(this.dir, 'runs');
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  async load(runId: string): Promise<StoredRun | null> {
    this.#open();
    const dir = join(this.#runs, runDirName(runId));
    // A delete (and re-create) between reading the head and its journal shows as a missing
    // journal: read again.
    for (let attempt = 0; ; attempt++) {
      const found = await this.#readHead(dir, runId);
      if (!found) return null;
      const { meta, head } = found;
      try {
        const journal = join(dir, meta.journal);
        const bytes = meta.journalBytes === 0 ? Buffer.alloc(0) : await readPrefix(journal, meta.journalBytes);
        const entries = decodeEntries(bytes, meta.entries, journal);
        const { version, status, pending, updatedAt } = meta;
        return { runId, version, status, head, entries, pending, updatedAt };
      } catch (error) {
        if (code(error) !== 'ENOENT' || attempt >= 10) throw error;
      }
    }
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    this.#open();
    const dir = join(this.#runs, runDirName(runId));
    return withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
      const current = (await this.#readHead(dir, runId))?.meta ?? null;
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
        updatedAt: new Date(this.#now()).toISOString(),
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
  }

  async list(options: ListOptions = {}): Promise<RunSummary[]> {
    checkLimit(options.limit);
    this.#open();
    let names: string[];
    try {
      names = await readdir(this.#runs);
    } catch (error) {
      if (code(error) === 'ENOENT') return [];
      throw error;
    }
    const runs: RunSummary[] = [];
    // In batches, so that thousands of runs do not open thousands of files at once.
    for (let i = 0; i < names.length; i += 64) {
      const heads = await Promise.all(names.slice(i, i + 64).map((name) => this.#readHead(join(this.#runs, name))));
      for (const found of heads) {
        if (!found || (options.status !== undefined && found.meta.status !== options.status)) continue;
        const { runId, version, status, pending, updatedAt } = found.meta;
        runs.push({ runId, version, status, pending, updatedAt });
      }
    }
    runs.sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.runId.localeCompare(b.runId));
    return runs.slice(0, options.limit ?? Number.POSITIVE_INFINITY);
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    this.#open();
    const dir = join(this.#runs, runDirName(runId));
    if (!(await this.#readHead(dir, runId))) return false;
    const deleted = await withLock(join(dir, LOCK), this.#lockTimeoutMs, async () => {
      const current = (await this.#readHead(dir, runId))?.meta;
      if (!current) return false;
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw deleteConflict(runId, current.version, expectedVersion);
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
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #open(): void {
    if (this.#closed) throw new SystemError(`FileStore(${this.dir}) is closed`);
  }

  /** The run's head, or null if there is none (or it belongs to another run id). */
  async #readHead(dir: string, runId?: string): Promise<{ meta: HeadMeta; head: string } | null> {
    let text: string;
    try {
      text = await readFile(join(dir, HEAD), 'utf8');
    } catch (error) {
      if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return null;
      throw error;
    }
    const found = decodeHead(text, join(dir, HEAD));
    if (runId !== undefined && found.meta.runId !== runId) {
      throw new SystemError(
        `file store: ${dir} holds run ${JSON.stringify(found.meta.runId)}, not ${JSON.stringify(runId)}`,
      );
    }
    return found;
  }

  /** Removes every file of the run's directory but its lock files. Called holding the lock. */
  async #clearLeftovers(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const name of await readdir(dir)) {
      if (name !== LOCK && name !== `${LOCK}.break`) await rm(join(dir, name), { force: true });
    }
  }
}
