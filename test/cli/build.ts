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
 * Vitest runs test files in parallel workers, each calling `buildOnce()`: the first to finish
 * renames its private build into place (an atomic rename, no lock); a worker that loses the race
 * drops its own and uses the winner's. Unchanged sources reuse the directory across runs.
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
  'examples',
  'test/cli/fixtures',
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
];
const PREFIX = 'tollgate-cli-build-';
const DONE = '.complete';
/** Builds unused for this long are removed when a new one is made (other checkouts may use theirs). */
const STALE_MS = 24 * 3600 * 1000;

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

/** A hash of every input file's path and content. */
function inputsHash(): string {
  const hash = createHash('sha256');
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
      '--sourceMap',
      'false',
    ],
    { cwd: root, stdio: 'inherit' },
  );
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  cpSync(join(root, 'test', 'cli', 'fixtures'), join(dir, 'fixtures'), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, DONE), `${new Date().toISOString()}\n`);
}

let cached: TestBuild | null = null;

/** Builds the package for the CLI tests (once per content, shared by every worker); returns where. */
export function buildOnce(): TestBuild {
  if (cached) return cached;
  const dir = join(tmpdir(), `${PREFIX}${inputsHash()}`);
  if (!existsSync(join(dir, DONE))) {
    removeStale();
    const mine = `${dir}.${process.pid}.${Date.now()}.tmp`;
    try {
      compile(mine);
      // Atomic: either ours lands, or another worker's already did (then the rename fails).
      if (!existsSync(dir)) renameSync(mine, dir);
    } catch (error) {
      if (!existsSync(join(dir, DONE))) throw error;
    } finally {
      rmSync(mine, { recursive: true, force: true });
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
