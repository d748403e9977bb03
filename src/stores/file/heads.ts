/**
 * Reading run heads, one at a time (`load`, `save`, `delete`) and all of them (`list`). A head
 * that cannot be read is that run's problem only: `list` reports it through `onDamaged` and
 * goes on with the others, so one damaged run never hides the approval inbox.
 *
 * A run's own head is read synchronously, as its journal (format.ts `readPrefix`): one small file,
 * where `fs.promises` makes four thread-pool round trips (open, stat, read, close), and the
 * store's calls read it once or twice each (`Agent.load` of an ended run: its summary, then the
 * run). The event loop waits for a local file's read, as it does for every SQLite statement.
 * `list` reads its many heads through the thread pool, 64 at a time, not blocking the loop.
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError, StoreUnavailableError, type TollgateError } from '../../errors.js';
import type { StoredRun } from '../../store/contract.js';
import {
  damaged,
  decodeEntries,
  decodeHead,
  type HeadMeta,
  readPrefix,
  runDirName,
  runIdOfDirName,
  summaryOf,
} from './format.js';

export const HEAD = 'head.json';

/** A run `list` could not read: reported, then left out of the listing. */
export interface DamagedRun {
  /** The run's id, when the head or the directory name tells it; null for a hashed long id. */
  runId: string | null;
  /** The run's directory. */
  dir: string;
  /** What is wrong: a `CheckpointError` for a damaged head, a `StoreUnavailableError` for one that cannot be read. */
  error: TollgateError;
}

export interface HeadRead {
  meta: HeadMeta;
  head: string;
}

const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

/** A file-system failure as a typed error that names the path. */
export function ioFault(call: string, path: string, error: unknown): StoreUnavailableError {
  const e = error as NodeJS.ErrnoException;
  return new StoreUnavailableError(
    `FileStore.${call}: ${path}: ${e?.code ?? ''} ${e?.message ?? String(error)}`.trim(),
    {
      cause: error,
    },
  );
}

/** How a head file's text is read: at once (one run's head) or through the thread pool (`list`). */
type ReadText = (path: string) => string | Promise<string>;

const readNow: ReadText = (path) => readFileSync(path, 'utf8');
const readPooled: ReadText = (path) => readFile(path, 'utf8');

/**
 * The head in `dir`, or null if there is none. `runId` is the run the caller asked for (null
 * while listing: the head says whose it is); `named` the run an error message names; `read`
 * how its file is read (at once, unless given another way).
 * @throws CheckpointError (naming the run) when the head is damaged or belongs to another run.
 * @throws StoreUnavailableError when it cannot be read (permissions, I/O).
 */
export async function readHead(
  call: string,
  dir: string,
  runId: string | null,
  named: string | null = runId,
  read: ReadText = readNow,
): Promise<HeadRead | null> {
  const path = join(dir, HEAD);
  let text: string;
  try {
    text = await read(path);
  } catch (error) {
    if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return null;
    throw ioFault(call, path, error);
  }
  const found = decodeHead(text, path, named);
  if (runId !== null && found.meta.runId !== runId) {
    throw damaged(runId, path, `holds run ${JSON.stringify(found.meta.runId)} instead`);
  }
  return found;
}

/**
 * The run in `dir` (its head, then the journal's entries it counts), or null when it has none.
 * A delete (and re-create) between reading the head and its journal shows as a missing
 * journal: read again. A journal that stays missing is damage.
 */
export async function readRun(dir: string, runId: string): Promise<StoredRun | null> {
  for (let attempt = 0; ; attempt++) {
    const found = await readHead('load', dir, runId);
    if (!found) return null;
    const { meta, head } = found;
    const journal = join(dir, meta.journal);
    try {
      const bytes = meta.journalBytes === 0 ? Buffer.alloc(0) : await readPrefix(journal, meta.journalBytes, runId);
      return { ...summaryOf(meta), head, entries: decodeEntries(bytes, meta.entries, journal, runId) };
    } catch (error) {
      if (code(error) !== 'ENOENT') throw error;
      if (attempt >= 10) throw damaged(runId, journal, 'is missing', error);
    }
  }
}

/**
 * Every readable head under `runsDir`, read 64 at a time (thousands of runs must not open
 * thousands of files at once). Each unreadable one goes to `onDamaged` instead.
 */
export async function readAllHeads(runsDir: string, onDamaged: (damage: DamagedRun) => void): Promise<HeadRead[]> {
  let names: string[];
  try {
    names = await readdir(runsDir);
  } catch (error) {
    if (code(error) === 'ENOENT') return [];
    throw ioFault('list', runsDir, error);
  }
  const heads: HeadRead[] = [];
  for (let i = 0; i < names.length; i += 64) {
    const batch = names.slice(i, i + 64).map(async (name) => {
      const dir = join(runsDir, name);
      try {
        const found = await readHead('list', dir, null, runIdOfDirName(name), readPooled);
        // A head copied into another run's directory would be listed twice, or under a name load cannot find.
        if (found && runDirName(found.meta.runId) !== name) {
          throw damaged(runIdOfDirName(name), join(dir, HEAD), `holds run ${JSON.stringify(found.meta.runId)} instead`);
        }
        if (found) heads.push(found);
      } catch (error) {
        if (!(error instanceof CheckpointError || error instanceof StoreUnavailableError)) throw error;
        onDamaged({ runId: error.runId ?? runIdOfDirName(name), dir, error });
      }
    });
    await Promise.all(batch);
  }
  return heads;
}

/** The default `onDamaged`: one process warning per damaged run and store, not one per `list` (the inbox is polled). */
export function warnOnce(): (damage: DamagedRun) => void {
  const told = new Set<string>();
  return ({ dir, error }) => {
    if (told.has(dir)) return;
    told.add(dir);
    process.emitWarning(`${error.message}; list() leaves it out`, { code: 'TOLLGATE_DAMAGED_RUN' });
  };
}
