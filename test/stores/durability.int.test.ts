/**
 * Relaxed saves (`RunWrite.relaxed`, what `durability: 'points'` asks for) on the stores that
 * honour them: SQLite commits them at synchronous = NORMAL and every other transaction at the
 * store's own level; Postgres commits them with synchronous_commit off for that transaction
 * only. Also: Postgres runs its frequent statements as named prepared statements.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, ConflictError, OptionsError, type RunWrite } from '../../src/index.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { recorder, sequence } from '../support/helpers.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-durability-'));
const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const closing: { close(): Promise<void> | void }[] = [];

afterAll(async () => {
  for (const c of closing) await c.close();
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
  rmSync(root, { recursive: true, force: true });
});

const write = (from: number, append: string[], relaxed?: boolean): RunWrite => ({
  status: 'running',
  head: '{"head":true}',
  from,
  append,
  pendingCalls: [],
  ...(relaxed === undefined ? {} : { relaxed }),
});

describe('RunWrite.relaxed', () => {
  it('is refused unless true or false, by every store, before anything is written', async () => {
    const stores = [new MemoryStore(), new SqliteStore({ path: join(root, 'refused.db') })];
    closing.push(...stores);
    for (const store of stores) {
      await expect(store.save('r', { ...write(0, []), relaxed: 'yes' as never }, 0)).rejects.toThrow(
        /write\.relaxed must be true or false, got "yes"/,
      );
      await expect(store.save('r', { ...write(0, []), relaxed: 'yes' as never }, 0)).rejects.toBeInstanceOf(
        OptionsError,
      );
      expect(await store.load('r')).toBeNull();
    }
  });
});

describe('SqliteStore: a relaxed save', () => {
  /** A store whose clock (read inside each transaction) records the connection's synchronous level. */
  function watched(synchronous?: 'FULL' | 'NORMAL') {
    const levels: string[] = [];
    const store: SqliteStore = new SqliteStore({
      path: join(root, `${Math.random().toString(36).slice(2)}.db`),
      ...(synchronous ? { synchronous } : {}),
      now: () => {
        levels.push(store.settings.synchronous);
        return Date.now();
      },
    });
    closing.push(store);
    return { store, levels };
  }

  it('commits at NORMAL, and every other transaction at the store’s FULL', async () => {
    const { store, levels } = watched();
    await store.save('r', write(0, ['1']), 0);
    await store.save('r', write(1, ['2'], true), 1);
    await store.save('r', write(2, ['3'], false), 2);
    const lease = await store.claim('r', { owner: 'a', leaseMs: 1_000 });
    await store.save('r', write(3, ['4'], true), 3, lease);
    await store.release(lease);
    expect(levels.filter((l) => l !== 'FULL')).toEqual(['NORMAL', 'NORMAL']);
    expect(levels[1]).toBe('NORMAL');
    expect(store.settings.synchronous).toBe('FULL');
    expect((await store.load('r'))?.entries).toEqual(['1', '2', '3', '4']);
  });

  it('gives the connection back at FULL when it is refused', async () => {
    const { store } = watched();
    await store.save('r', write(0, ['1']), 0);
    await expect(store.save('r', write(0, ['x'], true), 0)).rejects.toBeInstanceOf(ConflictError);
    expect(store.settings.synchronous).toBe('FULL');
  });

  it('changes nothing on a store opened at NORMAL', async () => {
    const { store, levels } = watched('NORMAL');
    await store.save('r', write(0, ['1'], true), 0);
    await store.save('r', write(1, ['2']), 1);
    expect(levels).toEqual(['NORMAL', 'NORMAL']);
  });

  it('is what an agent with durability: points makes before each policy call', async () => {
    const { store, levels } = watched();
    const agent = new Agent({
      store,
      durability: 'points',
      policy: sequence({ tool: 'look' }, { tool: 'note' }, { final: 'ok' }),
      tools: [recorder('look').tool, recorder('note', { sideEffect: true, needsApproval: false }).tool],
    });
    expect(await agent.start('go')).toBe('done');
    // Claims and renewals of the lease read the clock too: only the saves' levels vary.
    expect(levels.filter((l) => l === 'NORMAL')).toHaveLength(3);
    expect(store.settings.synchronous).toBe('FULL');
  });
});

describe.skipIf(!target.url)(`PostgresStore ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`, () => {
  /** A store on a pool of one connection, so that the test sees that connection's session. */
  function onOneConnection(options: { preparedStatements?: boolean } = {}) {
    const schema = freshSchema('dur');
    schemas.push(schema);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const store = new PostgresStore(pool, { schema, ...options });
    closing.push(store, { close: () => pool.end() });
    return { store, pool };
  }

  it('a relaxed save leaves the session’s synchronous_commit as it was', async () => {
    const { store, pool } = onOneConnection();
    await store.save('r', write(0, ['1'], true), 0);
    await store.save('r', write(1, ['2'], true), 1);
    expect((await pool.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
    expect((await store.load('r'))?.entries).toEqual(['1', '2']);
    expect((await store.load('r'))?.version).toBe(2);
  });

  it('runs load, save and the lease statements as named prepared statements', async () => {
    const { store, pool } = onOneConnection();
    const lease = await store.claim('r', { owner: 'a', leaseMs: 1_000 });
    await store.save('r', write(0, ['1']), 0, lease);
    await store.save('r', write(1, ['2']), 1, lease);
    await store.load('r');
    await store.release(lease);
    const { rows } = await pool.query<{ name: string }>(
      "SELECT name FROM pg_prepared_statements WHERE name LIKE 'tollgate_%'",
    );
    // claim, the first save (insert), the next (update), load, release.
    expect(rows).toHaveLength(5);
  });

  it('prepares nothing with preparedStatements: false', async () => {
    const { store, pool } = onOneConnection({ preparedStatements: false });
    await store.save('r', write(0, ['1']), 0);
    await store.load('r');
    const { rows } = await pool.query('SELECT name FROM pg_prepared_statements');
    expect(rows).toEqual([]);
  });

  it('refuses a preparedStatements that is not true or false', () => {
    expect(() => new PostgresStore(url, { preparedStatements: 'yes' as never })).toThrow(
      /preparedStatements must be true or false, got "yes"/,
    );
  });
});

describe('SqliteStore: batch commit', () => {
  const open = (name: string) => {
    const store = new SqliteStore({ path: join(root, name) });
    closing.push(store);
    return store;
  };
  /** Empties the WAL of `name` (checkpointed into the database, the file cut to nothing). */
  const emptyWal = (name: string) => {
    const db = new Database(join(root, name));
    try {
      expect(db.pragma('wal_checkpoint(TRUNCATE)', { simple: true })).toBe(0); // 0: not busy
    } finally {
      db.close();
    }
    expect(statSync(join(root, `${name}-wal`)).size).toBe(0);
  };
  const walBytes = (name: string) => statSync(join(root, `${name}-wal`)).size;

  it('saves that wait in one turn share a transaction: far fewer WAL pages than one by one', async () => {
    const together = open('together.db');
    const apart = open('apart.db');
    emptyWal('together.db');
    emptyWal('apart.db');
    await Promise.all(Array.from({ length: 20 }, (_, i) => together.save(`r${i}`, write(0, ['1']), 0)));
    for (let i = 0; i < 20; i++) await apart.save(`r${i}`, write(0, ['1']), 0);
    // One commit writes each page it changed once, plus its commit frame: 20 commits write the
    // run's row, index and entry pages 20 times over.
    expect(walBytes('together.db') * 5).toBeLessThan(walBytes('apart.db'));
    for (let i = 0; i < 20; i++) expect((await together.load(`r${i}`))?.entries).toEqual(['1']);
  });

  it('one save refused on its version or its lease is refused alone; the others in its batch commit', async () => {
    const store = open('refused-alone.db');
    await store.save('b', write(0, ['1']), 0);
    const lease = await store.claim('c', { owner: 'x', leaseMs: 60_000 });
    const outcomes = await Promise.allSettled([
      store.save('a', write(0, ['a1']), 0),
      store.save('b', write(0, ['again']), 0), // b is at version 1
      store.save('c', write(0, ['c1']), 0), // c is leased by x: a save without the lease is fenced
      store.save('d', write(0, ['d1']), 0),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect((outcomes[2] as PromiseRejectedResult).reason.name).toBe('RunBusyError');
    expect((await store.load('a'))?.entries).toEqual(['a1']);
    expect((await store.load('b'))?.entries).toEqual(['1']);
    expect(await store.load('c')).toBeNull();
    expect((await store.load('d'))?.entries).toEqual(['d1']);
    await store.release(lease);
  });

  it('close makes the saves already asked for before it closes the file', async () => {
    const path = join(root, 'close-flushes.db');
    const store = new SqliteStore({ path });
    const saved = store.save('r', write(0, ['1']), 0);
    await store.close();
    expect(await saved).toBe(1);
    const again = new SqliteStore({ path });
    closing.push(again);
    expect((await again.load('r'))?.entries).toEqual(['1']);
  });
});
