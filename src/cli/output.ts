/**
 * Where the CLI writes. A reader that goes away early (`tollgate show r1 | head -3`) closes the
 * pipe: Node then fails the next write with EPIPE, an `'error'` event that nobody handles kills
 * the process with a stack trace. After EPIPE the stream is treated as closed and later writes
 * are dropped; the command itself goes on (a run keeps its course and its exit code).
 */

const closed = new WeakSet<NodeJS.WriteStream>();
const guarded = new WeakSet<NodeJS.WriteStream>();

function guard(stream: NodeJS.WriteStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  // Any write error on our own output (EPIPE, a destroyed stream) means nobody is reading:
  // there is nobody to tell, so stop writing rather than crash.
  stream.on('error', () => closed.add(stream));
}

/** Installs the EPIPE guards on stdout and stderr (idempotent). */
export function guardOutput(): void {
  guard(process.stdout);
  guard(process.stderr);
}

function write(stream: NodeJS.WriteStream, text: string): void {
  if (closed.has(stream) || stream.destroyed) return;
  stream.write(text);
}

/** Writes to stdout, unless its reader has gone. */
export function out(text: string): void {
  write(process.stdout, text);
}

/** Writes to stderr, unless its reader has gone. */
export function errOut(text: string): void {
  write(process.stderr, text);
}
