/**
 * The CLI tests run the real, compiled `tollgate`, but never the working tree's `dist/`: `npm run
 * build` there deletes and rebuilds it, so a `tollgate` command someone runs meanwhile would fail.
 * The test copy is compiled into a temp directory named by a hash of everything that goes into it,
 * laid out like an installed package:
 *
 *   <dir>/package.json   a copy: `import 'tollgate'` from a fixture resolves to this copy (self-reference)
 *   <dir>/node_modules   a link to the repository's dependencies
 *   <dir>/dist/…         tsc -p tsconfig.build.json --outDir <dir>/dist
 *   <dir>/fixtures/…     test/cli/fixtures, so their `import 'tollgate'` finds this copy
 *
 * Vitest runs test files in parallel workers, each calling `buildOnce()`: one takes a lock
 * directory and compiles, the others wait for its build. Builds are compiled privately and renamed
 * into place (atomic), so a waiter that gives up on a crashed holder can build its own safely.
 * Unchanged sources reuse the directory across runs.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/** The repository root. */
export const root = join(import.meta.dirname, '..', '..');
const INPUTS = [
  'src',
  'machines',
  'docs/examples',
  'test/cli/fixtures',
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
];
const PREFIX = 'tollgate-cli-build-';
const DONE = '.complete';
/** Builds unused for this long are removed when a new one is made (other checkouts may use theirs). */
const STALE_MS = 24 * 3600 * 1000;
/** How long a worker waits for another's build before compiling its own (a build takes ~10 s). */
const BUILD_WAIT_MS = 120_000;

/** Where a test build is, and its parts. */
export interface TestBuild {
  /** The package directory (package.json, node_modules, dist, fixtures). */
  dir: string;
  /** The `tollgate` command's entry point. */
  bin: string;
  /** A test agent module, by file name, inside the build (so it imports this build). */
  fixture(name: string): string;
}

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => files(join(path, name)));
}

/** A hash of the checkout's path and every input file's path and content. */
function inputsHash(): string {
  // The checkout's own path too: a build links that checkout's node_modules, and another
  // checkout with the same sources must not reuse a build whose link may point at nothing.
  const hash = createHash('sha256').update(root).update('\0');
  for (const input of INPUTS) {
    for (const file of files(join(root, input))) {
      hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex').slice(0, 16);
}

function removeStale(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const path = join(tmpdir(), name);
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Another process removed it first.
    }
  }
}

/** Compiles the package into `dir` (a fresh, private directory). */
function compile(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  // No declarations or source maps: the tests run the JavaScript only, and it halves the build time.
  execFileSync(
    process.execPath,
    [
      tsc,
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      join(dir, 'dist'),
      '--declaration',
      'false',
      '--declarationMap',
      'false',
      '--sourceMap',
      'false',
    ],
    { cwd: root, stdio: 'inherit' },
  );
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  // The inbox page's files, as `npm run build` copies them (package.json's after-build).
  cpSync(join(root, 'src', 'inbox', 'page'), join(dir, 'dist', 'src', 'inbox', 'page'), { recursive: true });
  cpSync(join(root, 'test', 'cli', 'fixtures'), join(dir, 'fixtures'), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, DONE), `${new Date().toISOString()}\n`);
}

let cached: TestBuild | null = null;

/** Sleeps without an event loop (buildOnce is synchronous: test files call it at import). */
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Waits while another worker holds the lock and its build has not landed; gives up after BUILD_WAIT_MS. */
function awaitOther(done: string, lock: string): void {
  const end = Date.now() + BUILD_WAIT_MS;
  while (!existsSync(done) && existsSync(lock) && Date.now() < end) sleep(100);
}

/** Builds the package for the CLI tests (once per content, shared by every worker); returns where. */
export function buildOnce(): TestBuild {
  if (cached) return cached;
  const dir = join(tmpdir(), `${PREFIX}${inputsHash()}`);
  const done = join(dir, DONE);
  if (!existsSync(done)) {
    // The lock only saves work (one compile instead of one per worker); correctness comes from
    // the atomic rename, so a waiter that gives up on a dead holder simply builds its own.
    const lock = `${dir}.lock`;
    let locked = false;
    try {
      mkdirSync(lock);
      locked = true;
    } catch {
      awaitOther(done, lock);
    }
    try {
      if (!existsSync(done)) build(dir);
    } finally {
      if (locked) rmSync(lock, { recursive: true, force: true });
    }
  }
  // Marks it used: removeStale measures from the last use, not from the build.
  utimesSync(dir, new Date(), new Date());
  cached = {
    dir,
    bin: join(dir, 'dist', 'src', 'cli', 'bin.js'),
    fixture: (name) => join(dir, 'fixtures', name),
  };
  return cached;
}

/** Compiles into a private directory, then renames it into place unless another build landed first. */
function build(dir: string): void {
  removeStale();
  const mine = `${dir}.${process.pid}.${Date.now()}.tmp`;
  try {
    compile(mine);
    if (!existsSync(dir)) renameSync(mine, dir);
  } catch (error) {
    // A rename onto a directory another worker just renamed into place fails: theirs is as good.
    if (!existsSync(join(dir, DONE))) throw error;
  } finally {
    rmSync(mine, { recursive: true, force: true });
  }
}
