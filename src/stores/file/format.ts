/**
 * The file store's on-disk format, and the fsync discipline that makes it crash-safe.
 *
 * Run directory name: `r-` + the run id with every byte outside [a-z0-9_-] written `%XX`
 * (upper case too, so case-insensitive file systems keep `Run` and `run` apart); an encoded id
 * longer than 120 characters is cut and suffixed with a SHA-256 of the whole id. The real id
 * is in the head file.
 *
 * `head.json`: one line of metadata JSON, a newline, then the head exactly as saved. The
 * metadata holds the pending calls (`pendingCalls`; a head written before runs had several
 * holds `pending`, one call or null, and reads as a list of one or none), the run's lease
 * record, once it was claimed (lease.ts), its agent's name and a decision recorded for a worker
 * (`agent`, `decision`: a head written before workers lacks them, and reads as null for both).
 * `journal-<id>.log`: the entries, each `<UTF-8 byte length>:<entry>\n`. Only the first
 * `journalBytes` bytes (recorded in the head) belong to the run: anything after them is the
 * torn tail of a save that crashed before its head was replaced, and is ignored.
 */
import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { type PendingCall, STATUSES, type Status } from '../../../machines/types.js';
import { CheckpointError } from '../../errors.js';
import type { RecordedDecision, RunSummary } from '../../store/contract.js';
import { checkProcess } from '../../store/holder-process.js';
import type { LeaseRecord } from '../../store/leases.js';
import { pendingCallsOf, pendingFields } from '../../store/pending-calls.js';

/** What the head file records besides the head itself. */
export interface HeadMeta {
  runId: string;
  version: number;
  status: Status;
  /** Every pending call, in call order. */
  pendingCalls: PendingCall[];
  updatedAt: string;
  /** How many entries the journal holds for this version. */
  entries: number;
  /** The journal file's name: new for every incarnation of the run id, so a reader never mixes two. */
  journal: string;
  journalBytes: number;
  /** The run's lease record (times in ms on the store's clock), once it was ever claimed. */
  lease?: LeaseRecord;
  /** The agent's name (`StoredRun.agent`). */
  agent: string | null;
  /** A decision recorded for a worker (`StoredRun.decision`). */
  decision: RecordedDecision | null;
}

/** A head's metadata as `list` and `claimNext` give it. */
export function summaryOf(meta: HeadMeta): RunSummary {
  const { runId, version, status, pendingCalls, updatedAt, agent, decision } = meta;
  return { runId, version, status, ...pendingFields(pendingCalls), updatedAt, agent, decision };
}

const MAX_NAME = 120;

export function runDirName(runId: string): string {
  let name = 'r-';
  for (const byte of Buffer.from(runId, 'utf8')) {
    const c = String.fromCharCode(byte);
    name += /[a-z0-9_-]/.test(c) ? c : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(runId, 'utf8').digest('hex');
  return `${name.slice(0, MAX_NAME - 66)}~${hash}`;
}

/** The run id a directory name stands for, or null when it cannot be told (a hashed long id, not a run). */
export function runIdOfDirName(name: string): string | null {
  if (!name.startsWith('r-') || name.includes('~')) return null;
  const bytes: number[] = [];
  for (let i = 2; i < name.length; i++) {
    if (name[i] !== '%') bytes.push(name.charCodeAt(i));
    else {
      bytes.push(Number.parseInt(name.slice(i + 1, i + 3), 16));
      i += 2;
    }
  }
  return bytes.some(Number.isNaN) ? null : Buffer.from(bytes).toString('utf8');
}

export function encodeHead(meta: HeadMeta, head: string): string {
  return `${JSON.stringify(meta)}\n${head}`;
}

/** A damaged run: a `CheckpointError` that names the run (when known) and the file. */
export function damaged(runId: string | null, path: string, what: string, cause?: unknown): CheckpointError {
  const run = runId === null ? 'a run' : `run ${JSON.stringify(runId)}`;
  return new CheckpointError(`file store: ${run} is damaged: ${path} ${what}`, undefined, {
    ...(runId === null ? {} : { runId }),
    ...(cause === undefined ? {} : { cause }),
  });
}

const JOURNAL_NAME = /^journal-[0-9a-f-]{36}\.log$/;
const count = (n: unknown, min: number) => Number.isSafeInteger(n) && (n as number) >= min;

/** What is wrong with a stored lease record, or null. */
export function leaseProblem(lease: Partial<LeaseRecord> | null): string | null {
  if (lease === null || typeof lease !== 'object' || Array.isArray(lease)) return 'lease is not an object';
  if (!count(lease.token, 1)) return 'lease.token is not a whole number ≥ 1';
  const released = lease.owner === null && lease.expiresAt === null;
  const held = typeof lease.owner === 'string' && Number.isSafeInteger(lease.expiresAt);
  if (!released && !held) return 'lease has neither an owner and an expiry nor null for both';
  if (lease.process !== undefined && lease.process !== null) {
    try {
      checkProcess('lease', lease.process);
    } catch (error) {
      return (error as Error).message;
    }
  }
  return null;
}

const isObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** What is wrong with the pending calls of a head's metadata (either form), or null. */
function pendingProblem(meta: Partial<HeadMeta> & { pending?: unknown }): string | null {
  if ('pendingCalls' in meta) {
    const calls = meta.pendingCalls;
    return Array.isArray(calls) && calls.every(isObject) ? null : 'pendingCalls is not an array of objects';
  }
  return meta.pending === null || isObject(meta.pending) ? null : 'pending is not an object or null';
}

/** What is wrong with a head's metadata, or null. The journal name is checked too: it is a path. */
function metaProblem(meta: (Partial<HeadMeta> & { pending?: unknown }) | null): string | null {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return 'metadata is not an object';
  if (typeof meta.runId !== 'string') return 'runId is not a string';
  if (!count(meta.version, 1)) return 'version is not a whole number ≥ 1';
  if (!STATUSES.includes(meta.status as Status)) return `status ${JSON.stringify(meta.status)} is not a status`;
  const pending = pendingProblem(meta);
  if (pending) return pending;
  if (meta.lease !== undefined) {
    const lease = leaseProblem(meta.lease);
    if (lease) return lease;
  }
  if (meta.agent !== undefined && meta.agent !== null && typeof meta.agent !== 'string') {
    return 'agent is not a string or null';
  }
  if (meta.decision !== undefined && meta.decision !== null && !isObject(meta.decision)) {
    return 'decision is not an object or null';
  }
  const at = meta.updatedAt;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at)) || new Date(at).toISOString() !== at) {
    return 'updatedAt is not an ISO-8601 time';
  }
  if (!count(meta.entries, 0)) return 'entries is not a whole number ≥ 0';
  if (typeof meta.journal !== 'string' || !JOURNAL_NAME.test(meta.journal)) return 'journal is not a journal file name';
  if (!count(meta.journalBytes, 0)) return 'journalBytes is not a whole number ≥ 0';
  return null;
}

/**
 * A head file's metadata and head.
 * @throws CheckpointError naming the run (`runId`, when the caller knows it) and the file.
 */
export function decodeHead(text: string, path: string, runId: string | null): { meta: HeadMeta; head: string } {
  const cut = text.indexOf('\n');
  if (cut < 0) throw damaged(runId, path, 'has no metadata line');
  let meta: HeadMeta;
  try {
    meta = JSON.parse(text.slice(0, cut)) as HeadMeta;
  } catch (error) {
    throw damaged(runId, path, `has a metadata line that is not JSON (${String(error)})`, error);
  }
  const problem = metaProblem(meta);
  if (problem)
    throw damaged(runId ?? (typeof meta?.runId === 'string' ? meta.runId : null), path, `has bad metadata: ${problem}`);
  // A head from before runs had several pending calls: its one call (or null) as a list.
  const { pending, ...rest } = meta as HeadMeta & { pending?: unknown };
  if (!('pendingCalls' in meta)) rest.pendingCalls = pendingCallsOf(pending);
  // A head from before workers: no agent, no decision.
  rest.agent ??= null;
  rest.decision ??= null;
  return { meta: rest, head: text.slice(cut + 1) };
}

export function encodeEntries(entries: readonly string[]): Buffer {
  return Buffer.from(entries.map((e) => `${Buffer.byteLength(e, 'utf8')}:${e}\n`).join(''), 'utf8');
}

/** The journal's entries. @throws CheckpointError naming the run and the file when they are not what the head says. */
export function decodeEntries(bytes: Buffer, count: number, path: string, runId: string): string[] {
  const out = isAscii(bytes) ? asciiEntries(bytes.toString('latin1'), path, runId) : utf8Entries(bytes, path, runId);
  if (out.length !== count) throw damaged(runId, path, `holds ${out.length} entries, not ${count}`);
  return out;
}

/**
 * A journal of ASCII bytes (most are, though a run's strings may hold any character, written as
 * UTF-8) decoded once and cut as a string, its indexes the bytes': one native call, not two per
 * entry (docs/performance.md).
 */
function asciiEntries(text: string, path: string, runId: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    const colon = text.indexOf(':', at);
    const length = colon <= at ? Number.NaN : lengthOf(text, at, colon);
    const end = colon + 1 + length;
    if (Number.isNaN(length) || text.charCodeAt(end) !== 0x0a) throw damaged(runId, path, `is corrupt at byte ${at}`);
    out.push(text.slice(colon + 1, end));
    at = end + 1;
  }
  return out;
}

/**
 * An entry's length as the journal writes it (decimal digits, no leading zero) from
 * `text[from, to)`, or NaN. Not `Number(text)`, which takes a sign, white space and hex: a
 * damaged `\n-4:` would send the reader back to where it was, over and over.
 */
function lengthOf(text: string, from = 0, to = text.length): number {
  const digits = to - from;
  if (digits < 1 || digits > 15 || (digits > 1 && text.charCodeAt(from) === 0x30)) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return Number.NaN;
    n = n * 10 + d;
  }
  return n;
}

/** Any journal: each entry's length in bytes, its text decoded as UTF-8. */
function utf8Entries(bytes: Buffer, path: string, runId: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    const colon = bytes.indexOf(0x3a, at);
    const length = colon <= at ? Number.NaN : lengthOf(bytes.toString('latin1', at, colon));
    const end = colon + 1 + length;
    if (Number.isNaN(length) || bytes[end] !== 0x0a) {
      throw damaged(runId, path, `is corrupt at byte ${at}`);
    }
    out.push(bytes.toString('utf8', colon + 1, end));
    at = end + 1;
  }
  return out;
}

/**
 * Reads exactly the first `length` bytes of a run's journal, synchronously (heads.ts says why):
 * from the page cache, without a thread-pool round trip a call.
 * @throws CheckpointError if it is shorter.
 */
export async function readPrefix(path: string, length: number, runId: string): Promise<Buffer> {
  const fd = openSync(path, 'r');
  try {
    // Handed out only once every byte of it was read.
    const buffer = Buffer.allocUnsafe(length);
    let read = 0;
    while (read < length) {
      const bytesRead = readSync(fd, buffer, read, length - read, read);
      if (bytesRead === 0) throw damaged(runId, path, `is shorter than its head says (${length} bytes)`);
      read += bytesRead;
    }
    return buffer;
  } finally {
    closeSync(fd);
  }
}

/** Writes `bytes` at `offset` (dropping any torn tail after the old end) and fsyncs. */
export async function writeAt(path: string, offset: number, bytes: Buffer): Promise<void> {
  const file = await open(path, 'r+').catch(async (error) => {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return open(path, 'wx');
  });
  try {
    if ((await file.stat()).size > offset) await file.truncate(offset);
    let written = 0;
    while (written < bytes.length) {
      const { bytesWritten } = await file.write(bytes, written, bytes.length - written, offset + written);
      written += bytesWritten;
    }
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Makes a directory's entries (a rename, a new or removed file) durable. */
export async function syncDir(path: string): Promise<void> {
  let dir: Awaited<ReturnType<typeof open>> | undefined;
  try {
    dir = await open(path, 'r');
    await dir.sync();
  } catch (error) {
    // Windows cannot open or fsync a directory; there a rename is as durable as the OS makes it.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL') throw error;
  } finally {
    await dir?.close();
  }
}

/** Replaces `path` atomically: write a temp file, fsync it, rename it over, fsync the directory. */
export async function replaceFile(path: string, dir: string, text: string, tempSuffix: string): Promise<void> {
  const temp = `${path}.${tempSuffix}.tmp`;
  const file = await open(temp, 'wx');
  try {
    await file.writeFile(text, 'utf8');
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  await syncDir(dir);
}
