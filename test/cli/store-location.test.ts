/** One identity per store whatever the spelling of --store; never a password in a key or a display. */
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { laterCommands } from '../../src/cli/later.js';
import { locateStore, redactLoose } from '../../src/cli/store-location.js';

describe('locateStore', () => {
  it('runs.db, ./runs.db, the absolute path and a path through a symbolic link are one SQLite store', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-loc-'));
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    const cwd = join(dir, 'real');
    const keys = ['runs.db', './runs.db', join(cwd, 'runs.db'), '../link/runs.db'].map((s) => locateStore(s, cwd).key);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toBe(join(cwd, 'runs.db'));
    expect(locateStore('runs.db', cwd)).toMatchObject({ kind: 'sqlite', display: join(cwd, 'runs.db'), secret: false });
  });

  it('a Postgres URL is normalised (scheme, host case, default port, parameter order) and its password is no part of the key', () => {
    const spellings = [
      'postgres://app@db.example.com:5432/ops?sslmode=require&application_name=t',
      'postgresql://app@DB.Example.com/ops?application_name=t&sslmode=require',
      'postgres://app:s3cret@db.example.com/ops?application_name=t&sslmode=require',
      'postgres://app@db.example.com/ops?password=s3cret&application_name=t&sslmode=require',
    ];
    const located = spellings.map((s) => locateStore(s));
    expect(new Set(located.map((l) => l.key)).size).toBe(1);
    expect(located[0]?.key).toBe('postgres://app@db.example.com:5432/ops?application_name=t&sslmode=require');
    for (const l of located) {
      expect(l.key).not.toContain('s3cret');
      expect(l.display).not.toContain('s3cret');
    }
    expect(located[2]).toMatchObject({
      secret: true,
      target: spellings[2],
      display: 'postgres://app:***@db.example.com:5432/ops?application_name=t&sslmode=require',
    });
    expect(located[3]?.display).toContain('password=***');
    expect(located[0]?.secret).toBe(false);
  });

  it('refuses an empty store, :memory: and a broken URL, without echoing a password', () => {
    expect(() => locateStore('')).toThrow(/--store: empty/);
    expect(() => locateStore(':memory:')).toThrow(/forgets the run/);
    expect(() => locateStore('postgres://app:s3cret@bad host/db')).toThrow(
      /not a valid postgres:\/\/ URL: postgres:\/\/app:\*\*\*@bad host\/db$/,
    );
    expect(redactLoose('cannot reach postgres://u:pw@h/db and postgres://v:x@k/e')).toBe(
      'cannot reach postgres://u:***@h/db and postgres://v:***@k/e',
    );
  });
});

describe('laterCommands', () => {
  it('names the call id, the absolute store and module; a secret store through $TOLLGATE_STORE', () => {
    const sqlite = locateStore('/srv/runs.db');
    expect(laterCommands('r 1', 'r 1:2#1', sqlite, '/srv/agent.js')).toEqual([
      `npx --no-install tollgate approve 'r 1' --call-id 'r 1:2#1' --store /srv/runs.db --agent /srv/agent.js --note '…'`,
      `npx --no-install tollgate deny 'r 1' --call-id 'r 1:2#1' --store /srv/runs.db --agent /srv/agent.js --note '…'`,
    ]);
    const pg = locateStore('postgres://app:s3cret@db/ops');
    const lines = laterCommands('r1', 'r1:2#1', pg, '/srv/agent.js');
    expect(lines.join('\n')).not.toContain('s3cret');
    expect(lines[0]).toContain('--store "$TOLLGATE_STORE"');
    expect(lines[2]).toBe('(with TOLLGATE_STORE set to postgres://app:***@db:5432/ops: the password is not printed)');
  });
});
