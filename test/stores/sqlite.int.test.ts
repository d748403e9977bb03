/** SQLite specifics the conformance suite does not see: pragmas, WAL, locking, migrations. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunWrite, SchemaVersionError, StoreUnavailableError, SystemError } from '../../src/index.js';
import { type ListFilter, listQuery } from '../../src/stores/sqlite/listing.js';
import { MIGRATIONS, migrate, SCHEMA_VERSION } from '../../src/stores/sqlite/migrations.js';
import { CLAIM_QUERIES } from '../../src/stores/sqlite/queue.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `${++n}.db`);
const write = (from = 0, append: string[] = []): RunWrite => ({
  status: 'running',
  head: '{}',
  from,
  append,
  pendingCalls: [],
});

function migrationRows(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT version, name, applied_at FROM tollgate_migrations ORDER BY version').all();
  } finally {
    db.close();
  }
}

/** A Node child process running `code` (an ES module, TypeScript imports allowed); resolves with its stdout. */
function child(code: string): { started: Promise<void>; done: Promise<string> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: 'pipe' });
  let out = '';
  let err = '';
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (out.includes('started')) markStarted();
  });
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const done = new Promise<string>((resolve, reject) =>
    proc.on('close', (status) => (status === 0 ? resolve(out) : reject(new Error(`child failed (${status}): ${err}`)))),
  );
  return { started, done };
}

describe('SqliteStore: connection settings', () => {
  it('WAL, synchronous FULL by default or NORMAL on request, a busy timeout', async () => {
    const path = fresh();
    const store = SqliteStore.open(path);
    expect(store.settings).toEqual({
      journalMode: 'wal',
      synchronous: 'FULL',
      busyTimeoutMs: 10_000,
      schemaVersion: SCHEMA_VERSION,
    });
    await store.close();
    const normal = new SqliteStore({ path, synchronous: 'NORMAL', busyTimeoutMs: 250 });
    expect(normal.settings).toMatchObject({ journalMode: 'wal', synchronous: 'NORMAL', busyTimeoutMs: 250 });
    await normal.close();
    expect(() => new SqliteStore({ path, synchronous: 'OFF' as never })).toThrow(/synchronous must be/);
    expect(() => new SqliteStore({ path: '' })).toThrow(
      'new SqliteStore: path must be a file path or ":memory:", got ""',
    );
  });

  it('a save waits for another process’s write transaction instead of failing (busy_timeout)', async () => {
    const path = fresh();
    const store = SqliteStore.open(path);
    await store.save('r', write(0, ['"a"']), 0);
    // Another process takes the write lock and holds it for 800 ms.
    const holder = child(`
      import Database from 'better-sqlite3';
      const db = new Database(${JSON.stringify(path)});
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('started');
      const until = Date.now() + 800;
      while (Date.now() < until);
      db.exec('COMMIT');
      db.close();`);
    await holder.started;
    const waited = Date.now();
    expect(await store.save('r', write(1, ['"b"']), 1)).toBe(2);
    expect(Date.now() - waited).toBeGreaterThan(100);
    await holder.done;
    // Readers are never blocked in WAL mode, even while a writer holds its lock.
    const db = new Database(path);
    db.exec('BEGIN IMMEDIATE');
    expect((await store.load('r'))?.entries).toEqual(['"a"', '"b"']);
    // And with a short timeout a writer gives up with a typed StoreUnavailableError, not a ConflictError.
    const impatient = new SqliteStore({ path, busyTimeoutMs: 20 });
    const busy = await impatient.save('r', write(2), 2).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(StoreUnavailableError);
    expect(busy).toMatchObject({ cause: { code: 'SQLITE_BUSY' } });
    expect((busy as Error).message).toBe(
      `SqliteStore.save: ${JSON.stringify(path)} is locked by another connection for over busyTimeoutMs (20 ms); try again later`,
    );
    expect((await impatient.load('r'))?.version).toBe(2);
    db.exec('ROLLBACK');
    db.close();
    expect(await impatient.save('r', write(2), 2)).toBe(3);
    await impatient.close();
    await store.close();
  });

  it('each list is served by an index: by status in list order, the running few sorted, by agent, or all in list order', async () => {
    const path = fresh();
    await SqliteStore.open(path).close();
    const db = new Database(path, { readonly: true });
    const plan = (filter: ListFilter) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${listQuery(filter)}`)
        .all({ agent: 'a', now: 0, limit: 1 })
        .map((row) => (row as { detail: string }).detail)
        .join('; ');
    try {
      for (const status of ['awaiting_approval', 'done', 'cancelled', 'budget_exhausted'] as const) {
        expect(plan({ status })).toMatch(/SEARCH runs USING INDEX runs_by_status \(status=\?\)/);
        expect(plan({ status, expired: true, limit: 5 })).toMatch(/INDEX runs_by_status/);
        expect(plan({ status })).not.toMatch(/TEMP B-TREE/); // no sort: the index is in list order
      }
      expect(plan({ status: 'running' })).toMatch(/INDEX runs_running/);
      expect(plan({})).toMatch(/SCAN runs USING INDEX runs_by_update/);
      expect(plan({})).not.toMatch(/TEMP B-TREE/);
      for (const status of [undefined, 'running', 'awaiting_approval'] as const) {
        expect(plan({ agent: 'a', ...(status ? { status } : {}) })).toMatch(
          /SEARCH runs USING INDEX runs_by_agent \(agent=\?\)/,
        );
      }
    } finally {
      db.close();
    }
  });

  it('claimNext finds each class through its own index: a decision or an expiry, a lapsed lease, a running run; never a scan of all runs', async () => {
    const path = fresh();
    await SqliteStore.open(path).close();
    const db = new Database(path, { readonly: true });
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ agents: '["a"]', now: 0 }) as { detail: string }[])
        .map((row) => row.detail)
        .join('; ');
    try {
      const decided = plan(CLAIM_QUERIES.decided);
      expect(decided).toMatch(/SCAN runs USING INDEX runs_decided/); // the few runs with a decision
      expect(decided).toMatch(
        /SEARCH runs USING COVERING INDEX runs_expiring \(pending_expires_at>\? AND pending_expires_at<\?\)/,
      );
      expect(decided).toMatch(/SEARCH r USING PRIMARY KEY \(run_id=\?\)/);
      expect(decided).not.toMatch(/runs_by_agent|SCAN r\b/); // never the backlog
      const lapsed = plan(CLAIM_QUERIES.lapsed);
      expect(lapsed).toMatch(/^SCAN l USING INDEX leases_held/); // the few held leases
      expect(lapsed).toMatch(/SEARCH r USING PRIMARY KEY \(run_id=\?\)/);
      expect(lapsed).not.toMatch(/runs_by_agent|SCAN r\b/);
      // The running runs (at work, and the backlog), sorted; never every run kept.
      expect(plan(CLAIM_QUERIES.running)).toMatch(/^SCAN r USING INDEX runs_running/);
    } finally {
      db.close();
    }
  });

  it('a save that keeps a run running rewrites one listing index page, not three (WAL frames counted)', async () => {
    const path = fresh();
    const store = SqliteStore.open(path);
    await store.save('r', write(0, ['"a"']), 0);
    await store.save('w', { ...write(0, ['"a"']), agent: 'refunds' }, 0);
    // Frames each save adds to the WAL (no checkpoint runs: far below 1,000 pages).
    const framesOf = async (save: () => Promise<number>) => {
      const before = statSync(`${path}-wal`).size;
      await save();
      return (statSync(`${path}-wal`).size - before) / (24 + 4096);
    };
    // The run's row, its new entry, and its runs_by_update entry: the status and agent indexes
    // keep no running run, and `runs_running` is keyed by the run id alone.
    expect(await framesOf(() => store.save('r', write(1, ['"b"']), 1))).toBe(3);
    expect(await framesOf(() => store.save('r', write(2, ['"c"']), 2))).toBe(3);
    // A run with an agent has its runs_by_agent entry rewritten too.
    expect(await framesOf(() => store.save('w', { ...write(1, ['"b"']), agent: 'refunds' }, 1))).toBe(4);
    // Pausing moves the run into runs_by_status and out of runs_running.
    const paused = await framesOf(() => store.save('r', { ...write(3, []), status: 'awaiting_approval' }, 3));
    expect(paused).toBeGreaterThanOrEqual(3);
    expect((await store.list({ status: 'awaiting_approval' })).map((r) => r.runId)).toEqual(['r']);
    expect((await store.list({ status: 'running' })).map((r) => r.runId)).toEqual(['w']);
    await store.close();
  });
});

describe('SqliteStore: migrations', () => {
  it('a new database gets every step, each recorded in tollgate_migrations', async () => {
    const path = fresh();
    await SqliteStore.open(path).close();
    const rows = migrationRows(path) as { version: number; name: string; applied_at: string }[];
    expect(rows.map((r) => [r.version, r.name])).toEqual(MIGRATIONS.map((m) => [m.version, m.name]));
    for (const r of rows) expect(new Date(r.applied_at).toISOString()).toBe(r.applied_at);
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
  });

  it('opening an up-to-date database changes nothing, and does not need the write lock', async () => {
    const path = fresh();
    const first = SqliteStore.open(path);
    await first.save('r', write(0, ['"kept"']), 0);
    await first.close();
    const before = migrationRows(path);
    // Another connection holds the write lock: an open that tried to migrate would wait and fail.
    const db = new Database(path);
    db.exec('BEGIN IMMEDIATE');
    const again = new SqliteStore({ path, busyTimeoutMs: 20 });
    db.exec('ROLLBACK');
    db.close();
    expect(migrationRows(path)).toEqual(before);
    expect((await again.load('r'))?.entries).toEqual(['"kept"']);
    await again.close();
  });

  it('an older database is brought up to date, keeping its runs', async () => {
    const path = fresh();
    const old = new Database(path);
    expect(migrate(old, MIGRATIONS.slice(0, 1))).toBe(1);
    old.prepare("INSERT INTO runs VALUES ('r', 1, 'done', '{}', 0, NULL, '2026-01-01T00:00:00.000Z')").run();
    old.close();
    const store = SqliteStore.open(path);
    expect(store.settings.schemaVersion).toBe(SCHEMA_VERSION);
    expect(await store.list()).toEqual([
      {
        runId: 'r',
        version: 1,
        status: 'done',
        pendingCalls: [],
        pending: null,
        updatedAt: '2026-01-01T00:00:00.000Z',
        agent: null,
        decision: null,
      },
    ]);
    await store.close();
    expect(migrationRows(path)).toHaveLength(MIGRATIONS.length);
  });

  it('a database made before workers (version 4) upgrades: its runs have no agent and no decision; the new columns work', async () => {
    const path = fresh();
    const old = new Database(path);
    expect(migrate(old, MIGRATIONS.slice(0, 4))).toBe(4);
    old
      .prepare(
        `INSERT INTO runs (run_id, version, status, head, entry_count, pending, pending_expires_at, updated_at)
         VALUES ('old', 1, 'running', '{}', 0, NULL, NULL, '2026-01-01T00:00:00.000Z')`,
      )
      .run();
    old.close();
    const store = SqliteStore.open(path);
    expect(store.settings.schemaVersion).toBe(SCHEMA_VERSION);
    const run = await store.load('old');
    expect([run?.agent, run?.decision]).toEqual([null, null]);
    expect(await store.claimNext({ owner: 'w', leaseMs: 1_000, agents: ['refunds'] })).toBeNull();
    expect(
      await store.save(
        'old',
        { status: 'running', head: '{}', from: 0, append: [], pendingCalls: [], agent: 'refunds' },
        1,
      ),
    ).toBe(2);
    expect((await store.list({ agent: 'refunds' })).map((r) => r.runId)).toEqual(['old']);
    expect((await store.claimNext({ owner: 'w', leaseMs: 1_000, agents: ['refunds'] }))?.run.runId).toBe('old');
    await store.close();
    const db = new Database(path, { readonly: true });
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE agent = 'refunds' ORDER BY updated_at, run_id")
      .all() as { detail: string }[];
    db.close();
    expect(plan.map((p) => p.detail).join('; ')).toMatch(/runs_by_agent/);
  });

  it('a database made by the schema before leases (version 2) upgrades and keeps its runs; one pending call reads as a list of one', async () => {
    const path = fresh();
    const old = new Database(path);
    expect(migrate(old, MIGRATIONS.slice(0, 2))).toBe(2);
    // Rows exactly as the code before this schema wrote them: one pending call as one object.
    const call = {
      id: 'old:1#1',
      key: 'old:1',
      step: 1,
      tool: 'pay',
      args: { cents: 500 },
      attempt: 1,
      requestedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-01-01T00:05:00.000Z',
    };
    const insert = old.prepare('INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run('old', 3, 'awaiting_approval', '{"h":1}', 2, JSON.stringify(call), '2026-01-01T00:00:00.000Z');
    insert.run('done', 1, 'done', '{"h":2}', 0, null, '2026-01-01T00:00:01.000Z');
    old.prepare("INSERT INTO entries VALUES ('old', 0, '\"a\"'), ('old', 1, '\"b\"')").run();
    old.close();

    const store = SqliteStore.open(path);
    expect(store.settings.schemaVersion).toBe(SCHEMA_VERSION);
    expect(migrationRows(path)).toHaveLength(MIGRATIONS.length);
    const run = await store.load('old');
    expect(run).toMatchObject({ version: 3, status: 'awaiting_approval', head: '{"h":1}', entries: ['"a"', '"b"'] });
    expect(run?.pendingCalls).toEqual([call]);
    expect(run?.pending).toEqual(call);
    expect((await store.list()).map((r) => [r.runId, r.pendingCalls])).toEqual([
      ['old', [call]],
      ['done', []],
    ]);
    // The upgrade computed the old call's expiry: the filter sees it.
    expect((await store.list({ expired: true })).map((r) => r.runId)).toEqual(['old']);
    expect((await store.list({ expired: false })).map((r) => r.runId)).toEqual(['done']);

    // The old run can be claimed and saved with its lease; pending calls are now stored as a list.
    const lease = await store.claim('old', { owner: 'worker', leaseMs: 60_000 });
    expect(lease.token).toBe(1);
    const next = { ...write(2), status: 'awaiting_approval' as const, pendingCalls: [call, call] };
    expect(await store.save('old', next, 3, lease)).toBe(4);
    await store.close();
    const db = new Database(path, { readonly: true });
    const stored = db.prepare("SELECT pending FROM runs WHERE run_id = 'old'").pluck().get() as string;
    db.close();
    expect(JSON.parse(stored)).toEqual([call, call]);
  });

  it('a database made before partial listing indexes (version 7) upgrades: its runs list as before, by status and agent', async () => {
    const path = fresh();
    const old = new Database(path);
    expect(migrate(old, MIGRATIONS.slice(0, 7))).toBe(7);
    const add = old.prepare(
      `INSERT INTO runs (run_id, version, status, head, entry_count, pending, pending_expires_at, updated_at, agent)
       VALUES (?, 1, ?, '{}', 0, NULL, NULL, ?, ?)`,
    );
    const rows = [
      ['a', 'running', '2026-01-01T00:00:03.000Z', null],
      ['b', 'awaiting_approval', '2026-01-01T00:00:01.000Z', 'refunds'],
      ['c', 'running', '2026-01-01T00:00:02.000Z', 'refunds'],
      ['d', 'done', '2026-01-01T00:00:04.000Z', null],
      ['e', 'awaiting_approval', '2026-01-01T00:00:00.000Z', null],
    ] as const;
    for (const row of rows) add.run(...row);
    old.close();
    const store = SqliteStore.open(path);
    expect(store.settings.schemaVersion).toBe(SCHEMA_VERSION);
    const ids = async (options?: Parameters<SqliteStore['list']>[0]) => (await store.list(options)).map((r) => r.runId);
    expect(await ids()).toEqual(['e', 'b', 'c', 'a', 'd']);
    expect(await ids({ status: 'running' })).toEqual(['c', 'a']);
    expect(await ids({ status: 'awaiting_approval' })).toEqual(['e', 'b']);
    expect(await ids({ status: 'done' })).toEqual(['d']);
    expect(await ids({ agent: 'refunds' })).toEqual(['b', 'c']);
    expect(await ids({ agent: 'refunds', status: 'running' })).toEqual(['c']);
    // A running run saved again stays in list order by its new update time.
    expect(await store.save('a', { ...write(0, ['"x"']) }, 1)).toBe(2);
    expect(await ids({ status: 'running' })).toEqual(['c', 'a']);
    expect(await store.save('c', { ...write(0, []), agent: 'refunds' }, 1)).toBe(2);
    expect(await ids({ status: 'running' })).toEqual(['a', 'c']);
    await store.close();
    const db = new Database(path, { readonly: true });
    const indexes = Object.fromEntries(
      (
        db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'").all() as {
          name: string;
          sql: string | null;
        }[]
      ).map((r) => [r.name, r.sql]),
    );
    db.close();
    expect(indexes.runs_by_status).toMatch(/WHERE status <> 'running'$/);
    expect(indexes.runs_running).toMatch(/\(run_id\) WHERE status = 'running'$/);
    expect(indexes.runs_by_agent).toMatch(/WHERE agent IS NOT NULL$/);
    expect(indexes.runs_by_update).toMatch(/\(updated_at, run_id\)$/);
  });

  it('a database made before leases kept their holder’s process (version 8) upgrades: a lease held then shows no process, and is only left to lapse', async () => {
    const path = fresh();
    const old = new Database(path);
    expect(migrate(old, MIGRATIONS.slice(0, 8))).toBe(8);
    const until = Date.now() + 60_000;
    old.prepare("INSERT INTO leases (run_id, token, owner, expires_at) VALUES ('held', 3, 'old-worker', ?)").run(until);
    old.close();
    const store = SqliteStore.open(path);
    expect(store.settings.schemaVersion).toBe(SCHEMA_VERSION);
    await expect(store.claim('held', { owner: 'new', leaseMs: 1_000 })).rejects.toMatchObject({
      name: 'RunBusyError',
      holder: 'old-worker',
      token: 3,
      holderProcess: null,
    });
    const process = { host: 'h', bootId: 'b', pidNamespace: '1', pid: 2, startTime: '3' };
    const lease = await store.claim('fresh', { owner: 'new', leaseMs: 60_000, process });
    await expect(store.claim('fresh', { owner: 'other', leaseMs: 1_000 })).rejects.toMatchObject({
      holderProcess: process,
    });
    expect(await store.release(lease)).toBe(true);
    await store.close();
  });

  it('a database from a newer Tollgate is refused with SchemaVersionError, untouched', async () => {
    const path = fresh();
    await SqliteStore.open(path).close();
    const db = new Database(path);
    db.prepare("INSERT INTO tollgate_migrations VALUES (?, 'from the future', '2030-01-01T00:00:00.000Z')").run(
      SCHEMA_VERSION + 1,
    );
    db.close();
    const before = migrationRows(path);
    let error: unknown;
    try {
      SqliteStore.open(path);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error).toBeInstanceOf(SystemError);
    expect(error).toMatchObject({ found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION });
    expect((error as Error).message).toMatch(/newer than this Tollgate knows.*upgrade Tollgate/);
    expect(migrationRows(path)).toEqual(before);
    // The refused store closed its connection: the file is not left locked.
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE; ROLLBACK');
    other.close();
  });

  it('a failing step rolls back every step of that migration', () => {
    const db = new Database(fresh());
    const broken = {
      version: MIGRATIONS.length + 1,
      name: 'broken',
      up: (d: Database.Database) => {
        d.exec('CREATE TABLE half_done (x)');
        throw new Error('step failed');
      },
    };
    expect(() => migrate(db, [...MIGRATIONS, broken])).toThrow('step failed');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables).toEqual([]); // not even the steps before it, nor the migrations table
    expect(migrate(db)).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('two processes opening a new database at once: one migrates, the other finds it done', async () => {
    const path = fresh();
    const open = () =>
      child(`
        const { SqliteStore } = await import(${JSON.stringify(join(import.meta.dirname, '../../src/stores/sqlite.ts'))});
        const store = SqliteStore.open(${JSON.stringify(path)});
        process.stdout.write(String(store.settings.schemaVersion));
        await store.close();`).done;
    expect(await Promise.all([open(), open()])).toEqual([String(SCHEMA_VERSION), String(SCHEMA_VERSION)]);
    expect(migrationRows(path)).toHaveLength(MIGRATIONS.length);
  });

  it('opening a new database another process is writing waits for the switch to WAL (SQLite answers busy at once there)', async () => {
    // A database still in rollback mode, its write lock held by another process for 600 ms:
    // SQLite refuses `journal_mode = WAL` at once, without calling the busy handler.
    const path = fresh();
    const holder = child(`
      import Database from 'better-sqlite3';
      const db = new Database(${JSON.stringify(path)});
      db.exec('CREATE TABLE unrelated (x)');
      db.exec('BEGIN IMMEDIATE');
      db.exec('INSERT INTO unrelated VALUES (1)');
      process.stdout.write('started');
      const until = Date.now() + 600;
      while (Date.now() < until);
      db.exec('COMMIT');
      db.close();`);
    await holder.started;
    const impatient = (() => {
      try {
        return SqliteStore.open(path, { busyTimeoutMs: 50 });
      } catch (error) {
        return error;
      }
    })();
    expect(impatient).toBeInstanceOf(StoreUnavailableError);
    expect(impatient).toMatchObject({ cause: { code: 'SQLITE_BUSY' } });
    const store = SqliteStore.open(path);
    expect(store.settings).toMatchObject({ journalMode: 'wal', schemaVersion: SCHEMA_VERSION });
    await holder.done;
    await store.close();
  });
});
