/**
 * Which store a command uses, and what it leaves behind: the run → module registry is written only
 * for a run that exists and keyed by the store's identity; reading never creates a database; a
 * Postgres password is never printed or stored.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { build, fixture, workspace } from './workspace.js';

const registry = (dir: string) => JSON.parse(readFileSync(join(dir, '.tollgate', 'agents.json'), 'utf8'));

describe('the run → module registry (.tollgate/agents.json)', () => {
  it('a run refused for a taken --run-id re-points nothing: approve still runs the first module', async () => {
    const { cli, dir, paid } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'r1'])).code).toBe(3);
    const before = readFileSync(join(dir, '.tollgate', 'agents.json'), 'utf8');
    const again = await cli(['run', fixture('other-pay-agent.mjs'), 'pay more', '--run-id', 'r1']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`run "r1" already exists in store ${dir}/tollgate.db`);
    expect(readFileSync(join(dir, '.tollgate', 'agents.json'), 'utf8')).toBe(before);
    expect((await cli(['approve', 'r1'])).code).toBe(0);
    expect(paid()).toEqual(['r1:2 250']);
  });

  it('is keyed by where the store is, not how --store was spelt', async () => {
    const { cli, dir, paid } = workspace();
    mkdirSync(join(dir, 'sub'));
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'k1', '--store', 'runs.db'])).code).toBe(3);
    expect(registry(dir)).toEqual({
      version: 2,
      stores: { [join(dir, 'runs.db')]: { k1: fixture('pay-agent.mjs') } },
    });
    // Another spelling of the same file finds the run's module.
    const approve = await cli(['approve', 'k1', '--store', './sub/../runs.db', '--note', 'ok']);
    expect(approve.code).toBe(0);
    expect(paid()).toEqual(['k1:2 250']);
  });

  it('a version 1 file is migrated: its Postgres password is not kept', async () => {
    const { cli, dir } = workspace();
    mkdirSync(join(dir, '.tollgate'));
    writeFileSync(
      join(dir, '.tollgate', 'agents.json'),
      JSON.stringify({ 'postgres://app:s3cret@db/ops#old': '/srv/agent.js', 'tollgate.db#x': '/srv/x.js' }),
    );
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'n1'])).code).toBe(3);
    const text = readFileSync(join(dir, '.tollgate', 'agents.json'), 'utf8');
    expect(text).not.toContain('s3cret');
    expect(JSON.parse(text).stores).toEqual({
      'postgres://app@db:5432/ops': { old: '/srv/agent.js' },
      [join(dir, 'tollgate.db')]: { x: '/srv/x.js', n1: fixture('pay-agent.mjs') },
    });
  });
});

describe('reading never creates a store', () => {
  it('runs, show, export and a failing approve/deny/resume/cancel leave no file, and name the store they read', async () => {
    const { cli, dir } = workspace();
    const db = join(dir, 'tollgate.db');
    const runs = await cli(['runs']);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toBe(`no runs in store ${db} (no such file)\n`);
    expect(JSON.parse((await cli(['runs', '--json'])).stdout)).toEqual([]);
    const missing = `no run "nope" in store ${db} (no such file)`;
    for (const args of [
      ['show', 'nope'],
      ['export', 'nope'],
      ['approve', 'nope', '--agent', fixture('pay-agent.mjs')],
      ['deny', 'nope', '--note', 'no'],
      ['resume', 'nope'],
      ['cancel', 'nope'],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim(), args.join(' ')).toBe(`tollgate: ${missing}`);
    }
    expect((await cli(['runs', '--store', 'deep/er/runs.db'])).code).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('on an existing store: the listing and show name it', async () => {
    const { cli, dir } = workspace();
    await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', 'e1']);
    const runs = await cli(['runs']);
    expect(runs.stdout.split('\n')[0]).toBe(`1 run in store ${dir}/tollgate.db`);
    expect((await cli(['show', 'e1'])).stdout.split('\n')[0]).toContain(`· store ${dir}/tollgate.db`);
    expect((await cli(['show', 'nope'])).stderr).toContain(`no run "nope" in store ${dir}/tollgate.db\n`);
  });
});

describe('Postgres passwords', () => {
  it('an unreachable store is named without its password', async () => {
    const { cli } = workspace();
    const r = await cli(['runs', '--store', 'postgres://app:s3cret@127.0.0.1:1/ops']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot connect/);
    expect(r.stderr).not.toContain('s3cret');
  });

  it.skipIf(!process.env.TOLLGATE_PG_URL)(
    'are not printed or stored; the printed command works with TOLLGATE_STORE (needs TOLLGATE_PG_URL)',
    async () => {
      const { cli, dir, paid } = workspace();
      // The test server trusts local connections, so any password connects: enough to see where it leaks.
      const url = new URL(process.env.TOLLGATE_PG_URL as string);
      url.password = 's3cret-pw';
      const runId = `pg-secret-${process.pid}-${Date.now()}`;
      const run = await cli(['run', fixture('pay-agent.mjs'), 'pay', '--run-id', runId, '--store', url.href]);
      expect(run.code).toBe(3);
      const shown = `postgres://${url.username}:***@${url.hostname}:${url.port || 5432}${url.pathname}`;
      expect(run.stdout).toContain(`store ${shown}`);
      expect(run.stdout).toContain(`(with TOLLGATE_STORE set to ${shown}: the password is not printed)`);
      const approveLine = run.stdout.split('\n').find((l) => l.includes('tollgate approve')) as string;
      expect(approveLine).toContain('--store "$TOLLGATE_STORE"');
      expect(run.stdout + run.stderr).not.toContain('s3cret');
      expect(readFileSync(join(dir, '.tollgate', 'agents.json'), 'utf8')).not.toContain('s3cret');
      expect(existsSync(join(dir, 'tollgate.db'))).toBe(false);

      // The printed command, as a user would paste it, from another directory.
      const command = approveLine
        .trim()
        .replace(/^npx --no-install tollgate /, `node ${build.bin} `)
        .replace("'…'", 'ok');
      const out = execFileSync('sh', ['-c', command], {
        cwd: build.dir,
        env: { ...process.env, NO_COLOR: '1', TOLLGATE_STORE: url.href, TOLLGATE_TEST_LEDGER: join(dir, 'ledger.txt') },
        encoding: 'utf8',
      });
      expect(out).toContain('status    done');
      expect(paid()).toEqual([`${runId}:2 250`]);
      const { PostgresStore } = await import('../../src/stores/postgres.js');
      const store = new PostgresStore(process.env.TOLLGATE_PG_URL as string);
      await store.delete(runId).finally(() => store.close());
    },
  );
});
