/**
 * The file store's on-disk format, and the fsync discipline that makes it crash-safe.
 *
 * Run directory name: `r-` + the run id with every byte outside [a-z0-9_-] written `%XX`
 * (upper case too, so case-insensitive file systems keep `Run` and `run` apart); an encoded id
 * longer than 120 characters is cut and suffixed with a SHA-256 of the whole id. The real id
 * is in the head file.
 *
 * `head.json`: one line of metadata JSON, a newline, then the head exactly as saved.
 * `journal-<id>.log`: the entries, each `<UTF-8 byte length>:<entry>\n`. Only the first
 * `journalBytes` bytes (recorded in the head) belong to the run: anything after them is the
 * torn tail of a save that crashed before its head was replaced, and is ignored.
 */
import { createHash } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import type { PendingCall, Status } from '../../../machines/types.js';
import { SystemError } from '../../errors.js';

/** What the head file records besides the head itself. */
export interface HeadMeta {
  runId: string;
  version: number;
  status: Status;
  pending: PendingCall | null;
  updatedAt: string;
  /** How many entries the journal holds for this version. */
  entries: number;
  /** The journal file's name: new for every incarnation of the run id, so a reader never mixes two. */
  journal: string;
  journalBytes: number;
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

export function encodeHead(meta: HeadMeta, head: string): string {
  return `${JSON.stringify(meta)}\n${head}`;
}

export function decodeHead(text: string, path: string): { meta: HeadMeta; head: string } {
  const cut = text.indexOf('\n');
  try {
    if (cut < 0) throw new Error('no metadata line');
    return { meta: JSON.parse(text.slice(0, cut)) as HeadMeta, head: text.slice(cut + 1) };
  } catch (error) {
    throw new SystemError(`file store: ${path} is corrupt: ${String(error)}`, { cause: error });
  }
}

export function encodeEntries(entries: readonly string[]): Buffer {
  return Buffer.from(entries.map((e) => `${Buffer.byteLength(e, 'utf8')}:${e}\n`).join(''), 'utf8');
}

export function decodeEntries(bytes: Buffer, count: number, path: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    const colon = bytes.indexOf(0x3a, at);
    const length = colon <= at ? Number.NaN : Number(bytes.toString('latin1', at, colon));
    const end = colon + 1 + length;
    if (!Number.isInteger(length) || bytes[end] !== 0x0a) {
      throw new SystemError(`file store: ${path} is corrupt at byte ${at}`);
    }
    out.push(bytes.toString('utf8', colon + 1, end));
    at = end + 1;
  }
  if (out.length !== count) throw new SystemError(`file store: ${path} holds ${out.length} entries, not ${count}`);
  return out;
}

/** Reads exactly the first `length` bytes of a file. */
export async function readPrefix(path: string, length: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await file.read(buffer, read, length - read, read);
      if (bytesRead === 0) throw new SystemError(`file store: ${path} is shorter than its head says (${length} bytes)`);
      read += bytesRead;
    }
    return buffer;
  } finally {
    await file.close();
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
