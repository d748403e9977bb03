/**
 * `tollgate submit`, `tollgate worker` and `approve --queue`, as child processes of the built
 * command.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { build, fixture, workspace } from './workspace.js';

describe('worker commands: usage', () => {
  it('refuses bad arguments with exit 2, creating no store', async () => {
    const { cli, stored } = workspace();
    expect((await cli(['worker'])).code).toBe(2);
    expect((await cli(['worker', fixture('pay-agent.mjs'), '--concurrency', '0'])).code).toBe(2);
    expect((await cli(['worker', fixture('pay-agent.mjs'), '--concurrency', 'lots'])).code).toBe(2);
    expect((await cli(['worker', fixture('pay-agent.mjs'), fixture('pay-agent.mjs')])).code).toBe(2);
    expect((await cli(['submit', fixture('no-agent.mjs'), 'go'])).code).toBe(2);
    expect((await cli(['submit', fixture('pay-agent.mjs'), 'go', '--run-id', ''])).code).toBe(2);
    const queued = await cli(['approve', 'r1', '--queue', '--max-steps', '3']);
    expect(queued.code).toBe(2);
    expect(queued.stderr).toMatch(/limits cannot go with it/);
    expect((await cli(['deny', 'r1', '--queue'])).code).toBe(2); // a denial needs a note
    await expect(stored('r1')).resolves.toBeNull();
  });
});

describe('worker commands: the flow', () => {
  it('submit stores a run; a worker starts it; approve --queue records; the next worker applies it; SIGTERM stops each', async () => {
    const { dir, env, cli, paid, stored } = workspace();
    const submitted = await cli(['submit', fixture('pay-agent.mjs'), 'pay inv-7', '--run-id', 'w1', '--json']);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(JSON.parse(submitted.stdout)).toEqual({ runId: 'w1', agent: 'payer', status: 'running' });
    expect((await stored('w1'))?.status).toBe('running');

    const until = async (status: string) => {
      for (let i = 0; i < 400 && (await stored('w1'))?.status !== status; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await stored('w1'))?.status).toBe(status);
    };
    /** Runs a worker until `status`, then stops it with SIGTERM; resolves with its exit code and output. */
    const workUntil = async (status: string) => {
      const worker = spawn(process.execPath, [build.bin, 'worker', fixture('pay-agent.mjs'), '--poll-ms', '50'], {
        cwd: dir,
        env,
      });
      let output = '';
      worker.stdout.on('data', (chunk) => {
        output += chunk;
      });
      const exited = new Promise<number | null>((done) => worker.on('close', (code) => done(code)));
      try {
        await until(status);
      } finally {
        worker.kill('SIGTERM');
      }
      return { code: await exited, output };
    };

    const first = await workUntil('awaiting_approval');
    expect(first.code).toBe(0);
    expect(first.output).toMatch(/settled\s+w1 → awaiting_approval/);
    expect(paid()).toEqual([]);

    const recorded = await cli(['approve', 'w1', '--queue', '--note', 'ok']);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toMatch(/recorded: approve w1:2#1\S* by tester/);
    expect((await cli(['runs'])).stdout).toMatch(/w1 .*payer.*\(decided by tester; a worker applies it\)/);
    expect(paid()).toEqual([]); // recording runs nothing
    expect((await cli(['approve', 'w1', '--queue'])).code).toBe(2); // the first decider wins

    const second = await workUntil('done');
    expect(second.code).toBe(0);
    expect(paid()).toEqual(['w1:2 250']);
  });
});
