/**
 * The command as a finished tool: --version, help that teaches, cancel, errors a script can parse,
 * output into a closed pipe, and decide-later commands that work from anywhere.
 */

import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { callIdOf } from '../../machines/index.js';
import { build, fixture, workspace } from './workspace.js';

const root = join(import.meta.dirname, '..', '..');

/** Runs the CLI with its stdout pipe closed by the reader before it writes: every write fails with EPIPE. */
function withClosedStdout(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [build.bin, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' } });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('tollgate as a finished command', () => {
  it('the CLI under test is a copy built outside the working tree: npm test leaves dist/ alone', () => {
    expect(relative(root, build.dir).startsWith('..')).toBe(true);
    expect(readFileSync(build.bin, 'utf8')).toContain('main.js');
  });

  it('--version prints the package version', async () => {
    const { cli } = workspace();
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });

  it('help gives examples, the exit codes and the default store', async () => {
    const { cli } = workspace();
    const help = (await cli(['--help'])).stdout;
    expect(help).toContain('Examples:\n  $ tollgate run ');
    expect(help).toMatch(/Exit codes:\n\s+0 {2}done[\s\S]*\n\s+6 {2}the run is cancelled/);
    expect(help).toContain('else ./tollgate.db');
    expect(help).toContain('cancel');
    for (const command of ['run', 'approve', 'deny', 'resume', 'cancel']) {
      expect((await cli([command, '--help'])).stdout, command).toContain('Example');
    }
    expect((await cli(['runs', '--help'])).stdout.replace(/\s+/g, ' ')).toContain(
      '(default: $TOLLGATE_STORE, else ./tollgate.db)',
    );
  });

  it('cancel ends a run as cancelled with its reason (exit 0: what was asked); a second cancel is refused', async () => {
    const { cli, paid } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'x1'])).code).toBe(3);
    const cancel = await cli(['cancel', 'x1', '--reason', 'customer withdrew']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain('cancelled: customer withdrew');
    const show = JSON.parse((await cli(['show', 'x1', '--json'])).stdout);
    expect(show).toMatchObject({ status: 'cancelled', cancelReason: 'customer withdrew', pending: null });
    const again = await cli(['cancel', 'x1', '--json']);
    expect(again.code).toBe(2);
    expect(JSON.parse(again.stderr)).toMatchObject({
      error: { name: 'RunStateError', runId: 'x1', status: 'cancelled' },
    });
    expect((await cli(['approve', 'x1'])).code).toBe(2);
    expect(paid()).toEqual([]);
  });

  it('run --system starts from system messages and the goal; show prints them; submit takes them too', async () => {
    const { cli } = workspace();
    const args = ['--system', 'You pay only the amounts asked.', '--system', 'Be brief.', '--run-id', 's1'];
    // The fixture's policy looks up only when the goal is the whole history: here it answers at once.
    const live = await cli(['run', fixture('pay-agent.mjs'), 'pay', ...args, '--no-input']);
    expect(live.code).toBe(0);
    expect(live.stdout).toMatch(/system {4}You pay only the amounts asked\.\nsystem {4}Be brief\.\ngoal {6}pay\n/);
    const shown = JSON.parse((await cli(['show', 's1', '--json'])).stdout);
    expect(shown.history.slice(0, 3)).toEqual([
      { role: 'system', content: 'You pay only the amounts asked.' },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'pay' },
    ]);
    const text = (await cli(['show', 's1'])).stdout;
    expect(text).toMatch(/system {4}You pay only the amounts asked\.\nsystem {4}Be brief\.\ngoal {6}pay\n/);
    expect(
      (await cli(['submit', fixture('pay-agent.mjs'), 'pay', '--system', 'Be brief.', '--run-id', 's2'])).code,
    ).toBe(0);
    expect(JSON.parse((await cli(['show', 's2', '--json'])).stdout).history[0]).toEqual({
      role: 'system',
      content: 'Be brief.',
    });
    // send --queue saves the next message for a worker and runs nothing; resume (or a worker) answers it.
    expect((await cli(['send', 's1', 'and now?', '--queue', '--max-steps', '9'])).code).toBe(2);
    const queued = await cli(['send', 's1', 'and now?', '--queue', '--json']);
    expect([queued.code, JSON.parse(queued.stdout)]).toEqual([0, { runId: 's1', status: 'running' }]);
    const waiting = JSON.parse((await cli(['show', 's1', '--json'])).stdout);
    expect([waiting.status, waiting.steps, waiting.history.at(-1)]).toEqual([
      'running',
      1,
      { role: 'user', content: 'and now?' },
    ]);
    expect((await cli(['resume', 's1'])).code).toBe(0);
    expect(JSON.parse((await cli(['show', 's1', '--json'])).stdout)).toMatchObject({ status: 'done', steps: 2 });
  });

  it('under --json every error is one JSON object on stderr', async () => {
    const { cli } = workspace();
    const cases: [string[], object][] = [
      [['show', 'nope', '--json'], { name: 'RunNotFoundError', exitCode: 2, runId: 'nope' }],
      [['bogus', '--json'], { name: 'CommanderError', exitCode: 2, code: 'commander.unknownCommand' }],
      [['run', '--json'], { name: 'CommanderError', exitCode: 2, code: 'commander.missingArgument' }],
      [['runs', '--json', '--store', 'postgres://a:pw@127.0.0.1:1/x'], { name: 'StoreUnavailableError', exitCode: 1 }],
      [['run', fixture('no-agent.mjs'), 'go', '--json'], { name: 'CliUsageError', exitCode: 2 }],
    ];
    for (const [args, error] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe((error as { exitCode: number }).exitCode);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      const parsed = JSON.parse(r.stderr);
      expect(parsed.error, args.join(' ')).toMatchObject({ ...error, message: expect.any(String) });
      expect(parsed.error.message).not.toMatch(/^error:|:pw@/);
    }
  });

  it('--run-id cannot be empty', async () => {
    const { cli, dir } = workspace();
    const r = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', '']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a run id cannot be empty');
    expect((await cli(['runs'])).stdout).toBe(`no runs in store ${dir}/tollgate.db (no such file)\n`);
  });

  it('output into a closed pipe (show | head) ends quietly with the exit code of the work', async () => {
    const { cli, dir } = workspace();
    expect((await cli(['run', fixture('loop-agent.mjs'), 'think', '--run-id', 'p1', '--max-steps', '40'])).code).toBe(
      4,
    );
    const show = await withClosedStdout(['show', 'p1'], dir);
    expect(show.stderr).toBe('');
    expect(show.code).toBe(0);
    // A run goes on when its reader has gone: it still ends on its budget, and is stored.
    const run = await withClosedStdout(
      ['run', fixture('loop-agent.mjs'), 'think', '--run-id', 'p2', '--max-steps', '3'],
      dir,
    );
    expect(run).toEqual({ code: 4, stderr: '' });
    expect(JSON.parse((await cli(['show', 'p2', '--json'])).stdout)).toMatchObject({
      status: 'budget_exhausted',
      steps: 3,
    });
  });

  it('the printed decide-later commands use absolute paths and the call id, and work as printed from another directory of the project', async () => {
    const { cli, dir, paid, env } = workspace();
    mkdirSync(join(dir, 'agents'));
    const module = relative(dir, fixture('pay-agent.mjs'));
    const run = await cli(['run', module, 'pay', '--run-id', 'a1', '--store', 'data/runs.db']);
    expect(run.code).toBe(3);
    const lines = run.stdout.split('\n').filter((l) => /^\s+npx --no-install tollgate (approve|deny) /.test(l));
    expect(lines).toEqual([
      `  npx --no-install tollgate approve a1 --call-id '${callIdOf('a1:2', 1, 'pay', { amount: 250 })}' --store ${dir}/data/runs.db --agent ${fixture('pay-agent.mjs')} --note '…'`,
      `  npx --no-install tollgate deny a1 --call-id '${callIdOf('a1:2', 1, 'pay', { amount: 250 })}' --store ${dir}/data/runs.db --agent ${fixture('pay-agent.mjs')} --note '…'`,
    ]);
    // The workspace as a project that installed tollgate: npx finds its command in node_modules/.bin.
    writeFileSync(join(dir, 'package.json'), '{"private": true}\n');
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    const shim = join(dir, 'node_modules', '.bin', 'tollgate');
    writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(build.bin)} "$@"\n`);
    chmodSync(shim, 0o755);
    const command = (lines[0] as string).trim().replace("'…'", 'ok');
    // Without the npm_* variables of an `npm test` running us: npx would read them as its own settings.
    const shell = Object.fromEntries(Object.entries(env).filter(([key]) => !/^npm_/i.test(key)));
    const approve = await promisify(execFile)('/bin/sh', ['-c', command], { cwd: join(dir, 'agents'), env: shell })
      .then(() => ({ code: 0 }))
      .catch((error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr }));
    expect(approve.code).toBe(0);
    expect(paid()).toEqual(['a1:2 250']);
  });
});
