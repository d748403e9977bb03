/**
 * The package as its users get it: `npm pack` of a copy of this checkout (the files a fresh
 * clone would have), built there by the package's own `prepare` script, then installed with npm
 * into a new project.
 *
 * The build never touches this checkout's `dist/`: a `tollgate` command run meanwhile, or another
 * test file using it, would see it vanish. The tarball is cached under
 * `node_modules/.cache/tollgate-pack/<hash of the copied files>`, so the docs test and the package
 * test build it once between them (a file lock makes the second wait for the first), and not again
 * until a file changes.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import lockfile from 'proper-lockfile';
import { repoRoot } from './package-docs.js';

const cacheRoot = join(repoRoot, 'node_modules', '.cache', 'tollgate-pack');

const run = promisify(execFile);

/** What `npm pack --json` says about the tarball, plus the warnings it printed. */
export interface Packed {
  /** Absolute path of the `.tgz`. */
  tarball: string;
  files: { path: string; size: number }[];
  /** Bytes, compressed. */
  size: number;
  unpackedSize: number;
  entryCount: number;
  /** `npm warn …` lines printed while packing (the build included). */
  warnings: string[];
}

/**
 * The environment for a child npm, tsc or node: without the `npm_*` variables of the `npm test`
 * that may be running us, which a nested npm would read as its own configuration (among them
 * `npm_config_local_prefix`, this checkout, and `npm_config_loglevel=silent` under `npm -s`).
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, ...extra };
}

/** Runs a command; rejects with its output in the message when it exits non-zero. */
export async function exec(
  file: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = childEnv(),
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    throw new Error(
      `${file} ${args.join(' ')} (in ${cwd}) exited ${e.code}\n--- stdout\n${e.stdout}\n--- stderr\n${e.stderr}`,
    );
  }
}

/** Every file a commit of this checkout would hold: tracked or new, minus what .gitignore ignores. */
async function checkoutFiles(): Promise<string[]> {
  const { stdout } = await exec('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], repoRoot);
  return (
    stdout
      .split('\0')
      // node_modules may be a symlink (which `node_modules/` in .gitignore does not match); a file
      // deleted but not yet committed is still listed as cached.
      .filter((path) => path !== '' && path !== 'node_modules' && existsSync(join(repoRoot, path)))
      .sort()
  );
}

/**
 * The cache key. Tests, docs, benchmarks and CI scripts are copied but not hashed, so editing them
 * does not cost a rebuild: the package leaves them out, and listing one in `files` would change
 * package.json, which is hashed.
 */
function hashOf(files: string[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    if (/^(test|docs|bench|\.ci)\//.test(file)) continue;
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(repoRoot, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The packed package, built from the current files (cached; see the module comment). */
export async function packedTarball(): Promise<Packed> {
  const files = await checkoutFiles();
  const dir = join(cacheRoot, hashOf(files));
  const result = join(dir, 'pack.json');
  if (existsSync(result)) return JSON.parse(readFileSync(result, 'utf8')) as Packed;

  mkdirSync(cacheRoot, { recursive: true });
  // While one test file builds, another waits (the lock's mtime is refreshed as long as the
  // holder lives; a holder that died leaves a lock that goes stale and is taken over).
  const release = await lockfile.lock(cacheRoot, {
    lockfilePath: join(cacheRoot, 'build.lock'),
    stale: 30_000,
    retries: { retries: 600, minTimeout: 500, maxTimeout: 500 },
  });
  try {
    if (existsSync(result)) return JSON.parse(readFileSync(result, 'utf8')) as Packed;
    const packed = await buildAndPack(files, dir);
    pruneCache(dir);
    return packed;
  } finally {
    await release();
  }
}

async function buildAndPack(files: string[], dir: string): Promise<Packed> {
  const work = mkdtempSync(join(cacheRoot, 'work-'));
  try {
    const copy = join(work, 'tollgate');
    for (const file of files) {
      mkdirSync(dirname(join(copy, file)), { recursive: true });
      cpSync(join(repoRoot, file), join(copy, file));
    }
    // The build's tools (tsc, @types) come from this checkout's dependencies.
    symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(copy, 'node_modules'), 'dir');
    const out = join(work, 'out');
    mkdirSync(out);
    // Not --ignore-scripts: the lifecycle (`prepare` builds dist/) is part of what is tested.
    const { stdout, stderr } = await exec('npm', ['pack', '--json', '--pack-destination', out], copy);
    const [info] = JSON.parse(stdout) as [Omit<Packed, 'tarball' | 'warnings'> & { filename: string }];
    mkdirSync(dir, { recursive: true });
    const tarball = join(dir, info.filename);
    renameSync(join(out, info.filename), tarball);
    const packed: Packed = {
      tarball,
      files: info.files.map(({ path, size }) => ({ path, size })),
      size: info.size,
      unpackedSize: info.unpackedSize,
      entryCount: info.entryCount,
      warnings: stderr.split('\n').filter((line) => /^npm warn/i.test(line)),
    };
    writeFileSync(join(dir, 'pack.json'), JSON.stringify(packed, null, 2));
    return packed;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Removes tarballs of other versions of the files that nobody used for a day. */
function pruneCache(keep: string): void {
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const name of readdirSync(cacheRoot)) {
    const path = join(cacheRoot, name);
    if (path !== keep && /^[0-9a-f]{16}$/.test(name) && statSync(path).mtimeMs < dayAgo) {
      rmSync(path, { recursive: true, force: true });
    }
  }
}

export interface ProjectOptions {
  /** The project's module format, as `npm init -y` (CommonJS) or with `"type": "module"`. */
  type: 'commonjs' | 'module';
  /**
   * Packages linked from this checkout's node_modules after the install, as a user installs
   * them beside Tollgate: the optional peers (better-sqlite3 compiles a native addon, which a
   * test should not redo) and type packages.
   */
  link?: string[];
}

/** A new npm project in a temp dir with the packed tarball installed; the caller removes it. */
export async function installedProject(packed: Packed, options: ProjectOptions): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-user-'));
  await exec('npm', ['init', '-y'], dir);
  await exec('npm', ['pkg', 'set', `type=${options.type}`], dir);
  // --prefer-offline: the dependencies are in npm's cache after `npm ci`; the registry is asked
  // only for what is missing there.
  await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', packed.tarball], dir);
  for (const name of options.link ?? []) {
    const target = join(dir, 'node_modules', name);
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(realpathSync(join(repoRoot, 'node_modules', name)), target, 'dir');
  }
  return dir;
}

/** The repo's TypeScript compiler, run on a project; resolves with its diagnostics (exit code ignored). */
export async function tsc(project: string): Promise<string> {
  const bin = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await run(process.execPath, [bin, '-p', project, '--pretty', 'false'], { cwd: project, env: childEnv() });
    return '';
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    if (!e.stdout && !e.stderr) throw error;
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}
