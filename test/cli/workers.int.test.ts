/**
 * `tollgate submit`, `tollgate worker` and `approve --queue`, as child processes of the built
 * command.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { build, fixture, workspace } from './workspace.js';

describe('worker commands: usage', () => {
  it('refuses bad arguments with exit 2, creating no store', async () => {
    const { cli, stored } = workspace();
    expect((await cli(['worker'])).code).toBe(2);
    expect((await cli(['worker', fixture('pay-agent.mjs'), '--concurrency', '0'])).code).toBe(2);
    expect((await cli(['worker', fixture('pay-agent.mjs'), '--concurrency', 'lots'])).code).toBe(2);
    for (const bad of ['0', '1.5', 'soon', '2147483648', '']) {
      const refused = await cli(['worker', fixture('pay-agent.mjs'), '--lease-ms', bad]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--lease-ms <ms>.*expected a whole number from 1 to 2147483647/);
    }
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
  it('--lease-ms sets the lease of the runs a worker holds: renewed every third of it to now + leaseMs', async () => {
    const { dir, env, cli } = workspace();
    expect((await cli(['submit', fixture('slow-agent.mjs'), 'wait a minute', '--run-id', 's1'])).code).toBe(0);
    const worker = spawn(
      process.execPath,
      [build.bin, 'worker', fixture('slow-agent.mjs'), '--poll-ms', '50', '--lease-ms', '7777'],
      { cwd: dir, env },
    );
    let output = '';
    worker.stdout.on('data', (chunk) => {
      output += chunk;
    });
    const exited = new Promise((done) => worker.on('close', done));
    /** When the worker's lease on s1 ends, in ms after now (the store's clock is this machine's), once it holds one. */
    const leftOfLease = () => {
      const db = new Database(join(dir, 'tollgate.db'), { readonly: true });
      try {
        const row = db.prepare("SELECT expires_at FROM leases WHERE run_id = 's1' AND owner IS NOT NULL").get() as
          | { expires_at: number }
          | undefined;
        return row ? row.expires_at - Date.now() : null;
      } finally {
        db.close();
      }
    };
    try {
      for (let i = 0; i < 200 && leftOfLease() === null; i++) await new Promise((r) => setTimeout(r, 50));
      expect(output).toMatch(/· lease 7777 ms ·/);
      // Its call takes a minute: the worker holds the run, renewing every 2.6 s to now + 7.8 s.
      for (let i = 0; i < 4; i++) {
        const left = leftOfLease() as number;
        expect(left).toBeLessThanOrEqual(7_777);
        expect(left).toBeGreaterThan(7_777 - 2_592 - 1_000);
        await new Promise((r) => setTimeout(r, 1_500));
      }
    } finally {
      worker.kill('SIGKILL');
      await exited;
    }
  });

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
