/**
 * A scratch directory to run the built `tollgate` in, as a child process: its output, exit code,
 * the payments the test agents made (a ledger file), and the store's contents.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { buildOnce } from './build.js';

/** The built package the CLI tests run (test/cli/build.ts). */
export const build = buildOnce();

/** A test agent module of the build, by file name (test/cli/fixtures). */
export const fixture = (name: string) => build.fixture(name);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node <bin> ...args` in `cwd`; never throws for a non-zero exit. */
export async function runNode(bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Result> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], {
      cwd,
      env,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A fresh directory with a `cli(args)` that runs the built command there. */
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
  const ledger = join(dir, 'ledger.txt');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NO_COLOR: '1',
    TOLLGATE_TEST_LEDGER: ledger,
    TOLLGATE_USER: 'tester',
  };
  delete env.FORCE_COLOR;
  delete env.TOLLGATE_STORE;
  const cli = (args: string[], extraEnv: Record<string, string> = {}, bin = build.bin): Promise<Result> =>
    runNode(bin, args, dir, { ...env, ...extraEnv });
  const paid = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n').filter(Boolean) : []);
  const stored = async (runId: string, file = 'tollgate.db') => {
    const store = SqliteStore.open(join(dir, file));
    try {
      return await store.load(runId);
    } finally {
      await store.close();
    }
  };
  return { dir, env, cli, paid, stored };
}
