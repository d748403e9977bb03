/**
 * How the command loads what it needs, as a user installs it: TypeScript agent modules through
 * tsx, and one line saying what to do when tsx, better-sqlite3 or Tollgate's own build is missing.
 * The "installs" are copies of the test build with a dependency left out or a file removed.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { build, fixture, workspace } from './workspace.js';

const modules = join(import.meta.dirname, '..', '..', 'node_modules');

/** A copy of the test build whose node_modules lacks `without`; returns its dir and bin. */
function install(without: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-install-'));
  for (const part of ['dist', 'fixtures', 'package.json'])
    cpSync(join(build.dir, part), join(dir, part), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  for (const name of readdirSync(modules)) {
    if (!without.includes(name)) symlinkSync(join(modules, name), join(dir, 'node_modules', name));
  }
  return { dir, bin: join(dir, 'dist', 'src', 'cli', 'bin.js') };
}

describe('agent modules in TypeScript', () => {
  it('run and approve a .ts module through tsx', async () => {
    const { cli, paid } = workspace();
    const run = await cli(['run', fixture('pay-agent.ts'), 'pay', '--run-id', 't1']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(3);
    expect(run.stdout).toContain('agent ts-payer');
    expect(run.stdout).toContain(`--agent ${fixture('pay-agent.ts')}`);
    // A later process loads the module again, from the registry.
    const approve = await cli(['approve', 't1', '--note', 'ok']);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toContain('answer    paid in TypeScript');
    expect(paid()).toEqual(['t1:1 42']);
  });

  it('without tsx, says what to install (exit 1) and creates nothing', async () => {
    const { bin } = install(['tsx']);
    const { cli, dir } = workspace();
    const r = await cli(['run', fixture('pay-agent.ts'), 'pay'], {}, bin);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `tollgate: agent module ${fixture('pay-agent.ts')} is TypeScript, which needs tsx: npm install --save-dev tsx (or compile the module to JavaScript)`,
    );
    expect(readdirSync(dir)).toEqual([]);
    // JavaScript modules need no tsx.
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay'], {}, bin)).code).toBe(3);
  });
});

describe('what is missing, said once', () => {
  it('without better-sqlite3: an environment error (exit 1) naming the install command', async () => {
    const { bin } = install(['better-sqlite3']);
    const { cli } = workspace();
    // A store file to read (with no file, `runs` needs no driver: there is nothing to read).
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay'])).code).toBe(3);
    for (const args of [['runs'], ['run', fixture('pay-agent.mjs'), 'pay'], ['runs', '--json']]) {
      const r = await cli(args, {}, bin);
      expect(r.code, args.join(' ')).toBe(1);
      const major = Number(process.versions.node.split('.')[0]) >= 22 ? 13 : 12; // the driver for this Node
      const message = `this store needs better-sqlite3, which is not installed: npm install better-sqlite3@${major}`;
      if (args.includes('--json')) expect(JSON.parse(r.stderr).error).toMatchObject({ message, exitCode: 1 });
      else expect(r.stderr.trim()).toBe(`tollgate: ${message}`);
    }
  });

  it("a file of Tollgate's build missing (a rebuild in progress) is named as such, not blamed on a driver", async () => {
    const { cli } = workspace();
    expect((await cli(['run', fixture('pay-agent.mjs'), 'pay'])).code).toBe(3);
    const store = install();
    const sqlite = join(store.dir, 'dist', 'src', 'stores', 'sqlite.js');
    rmSync(sqlite);
    const runs = await cli(['runs'], {}, store.bin);
    expect(runs.code).toBe(1);
    expect(runs.stderr.trim()).toBe(`tollgate: Tollgate's build is missing (${sqlite}): run npm run build`);

    const cli2 = install();
    const main = join(cli2.dir, 'dist', 'src', 'cli', 'main.js');
    rmSync(main);
    const help = await cli(['--help'], {}, cli2.bin);
    expect(help.code).toBe(1);
    expect(help.stderr.trim()).toBe(`tollgate: Tollgate's build is missing (${main}): run npm run build`);
  });
});
