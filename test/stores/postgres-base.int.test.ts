// PostgresStore keeps each run's base (`RunWrite.base`, for head deltas) in its row: written by
// the statement that writes the head, on the single-save path and in a batch commit, kept by a
// save without one and by a recorded decision, gone with the run. Against the real server at
// TOLLGATE_PG_URL, in schemas of this file's own (dropped afterwards).
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunWrite } from '../../src/index.js';
import { PostgresStore, SCHEMA_VERSION } from '../../src/stores/postgres.js';
import { dropSchema, freshSchema, oldSchema, postgresTarget } from '../support/postgres.js';

const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const pools: pg.Pool[] = [];

/**
 * A store on a pool of its own (migrated), in a fresh schema or `schema`; `batches()` counts the
 * batch-commit statements it sent (their first parameter is an array of run ids).
 */
async function open(schema = freshSchema('base')): Promise<{ store: PostgresStore; batches: () => number }> {
  if (!schemas.includes(schema)) schemas.push(schema);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pools.push(pool);
  let batches = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const values = (args[0] as { values?: unknown[] }).values ?? (args[1] as unknown[] | undefined);
      if (Array.isArray(values?.[0])) batches++;
      return query(...args);
    };
  });
  const store = new PostgresStore(pool, { schema });
  await store.migrate();
  const migrating = batches; // the migrations' own array parameters
  return { store, batches: () => batches - migrating };
}

const write = (from: number, extra: Partial<RunWrite> = {}): RunWrite => ({
  status: 'running',
  head: `{"delta":${from}}`,
  from,
  append: [`"e${from}"`],
  pendingCalls: [],
  ...extra,
});

/** The base `load` returns for `runId` (undefined when the run is missing). */
const baseOf = async (store: PostgresStore, runId: string) => (await store.load(runId))?.base;

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
});

describe.skipIf(!target.url)(
  `PostgresStore bases ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`,
  () => {
    it('one save at a time: a run created with a base loads it, a save without one keeps it, a save with one replaces it; summaries have none', async () => {
      const { store, batches } = await open();
      expect(store.keepsBase).toBe(true);
      expect(await store.save('r', write(0, { base: '{"base":1}' }), 0)).toBe(1);
      expect(await store.load('r')).toMatchObject({ version: 1, head: '{"delta":0}', base: '{"base":1}' });
      expect(await store.save('r', write(1), 1)).toBe(2);
      expect(await store.load('r')).toMatchObject({ version: 2, head: '{"delta":1}', base: '{"base":1}' });
      expect(await store.save('r', write(2, { base: '{"base":2,"text":"ü ✓ 𝄞"}' }), 2)).toBe(3);
      expect(await store.load('r')).toMatchObject({
        version: 3,
        head: '{"delta":2}',
        base: '{"base":2,"text":"ü ✓ 𝄞"}',
        entries: ['"e0"', '"e1"', '"e2"'],
      });
      expect(await store.save('r', write(3, { relaxed: true }), 3)).toBe(4);
      expect(await baseOf(store, 'r')).toBe('{"base":2,"text":"ü ✓ 𝄞"}');
      // A run created without a base has none.
      expect(await store.save('plain', write(0), 0)).toBe(1);
      expect(await baseOf(store, 'plain')).toBeNull();
      expect(await store.save('plain', write(1), 1)).toBe(2);
      expect(await baseOf(store, 'plain')).toBeNull();
      expect(batches()).toBe(0);
      expect(await store.summary('r')).not.toHaveProperty('base');
      for (const run of await store.list()) expect(run).not.toHaveProperty('base');
    });

    it('a batch commit stores each run’s own base: given ones are written, runs saved without one keep theirs', async () => {
      const { store, batches } = await open();
      const ids = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
      // Creations in one turn: even runs with a base, odd ones without.
      const created = await Promise.all(
        ids.map((id, i) => store.save(id, write(0, i % 2 === 0 ? { base: `{"base":"${id}:1"}` } : {}), 0)),
      );
      expect(created).toEqual(ids.map(() => 1));
      expect(batches()).toBe(1);
      expect(await Promise.all(ids.map((id) => baseOf(store, id)))).toEqual([
        '{"base":"g0:1"}',
        null,
        '{"base":"g2:1"}',
        null,
        '{"base":"g4:1"}',
        null,
      ]);
      // Updates in one turn: g0 and g1 get a new base, the others give none and keep theirs.
      const updated = await Promise.all(
        ids.map((id, i) => store.save(id, write(1, i < 2 ? { base: `{"base":"${id}:2"}` } : {}), 1)),
      );
      expect(updated).toEqual(ids.map(() => 2));
      expect(batches()).toBe(2);
      expect(await Promise.all(ids.map((id) => baseOf(store, id)))).toEqual([
        '{"base":"g0:2"}',
        '{"base":"g1:2"}',
        '{"base":"g2:1"}',
        null,
        '{"base":"g4:1"}',
        null,
      ]);
      for (const id of ids) {
        expect(await store.load(id)).toMatchObject({ version: 2, head: '{"delta":1}', entries: ['"e0"', '"e1"'] });
      }
    });

    it('a recorded decision keeps the base, and so does the save that applies it', async () => {
      const { store } = await open();
      const call = { callId: 'c1', expiresAt: null } as never;
      await store.save('r', write(0, { status: 'awaiting_approval', pendingCalls: [call], base: '{"b":"kept"}' }), 0);
      const decision = { decisions: { c1: { approve: true } }, by: 'alice', at: '2026-01-01T00:01:00.000Z' };
      expect(await store.queueDecision('r', decision, 1)).toBe(2);
      expect(await store.load('r')).toMatchObject({ version: 2, decision, head: '{"delta":0}', base: '{"b":"kept"}' });
      expect(await store.save('r', write(1), 2)).toBe(3);
      expect(await store.load('r')).toMatchObject({ version: 3, decision: null, base: '{"b":"kept"}' });
    });

    it('a deleted run takes its base with it: created again, alone or in a batch, it starts with none', async () => {
      const { store, batches } = await open();
      await Promise.all(['a', 'b'].map((id) => store.save(id, write(0, { base: `{"old":"${id}"}` }), 0)));
      await store.save('c', write(0, { base: '{"old":"c"}' }), 0);
      for (const id of ['a', 'b', 'c']) expect(await store.delete(id)).toBe(true);
      expect(await store.load('c')).toBeNull();
      await store.save('c', write(0), 0);
      await Promise.all(['a', 'b'].map((id) => store.save(id, write(0), 0)));
      expect(batches()).toBe(2);
      for (const id of ['a', 'b', 'c']) expect(await store.load(id)).toMatchObject({ version: 1, base: null });
      expect(await store.save('c', write(1, { base: '{"new":"c"}' }), 1)).toBe(2);
      expect(await baseOf(store, 'c')).toBe('{"new":"c"}');
    });

    it('a database at the schema before bases (version 6) upgrades: its runs load with base null and take one on their next save', async () => {
      const { schema, s, client: old } = await oldSchema(url, 'base_upgrade', 6, schemas);
      try {
        // A row exactly as the code before this schema wrote it.
        await old.query(
          `INSERT INTO ${s}.runs (run_id, version, status, head, entry_count, pending, updated_at, agent)
           VALUES ('old', 2, 'running', '{"whole":true}', 1, NULL, '2026-01-01T00:00:00.000Z', 'refunds')`,
        );
        await old.query(`INSERT INTO ${s}.entries (run_id, idx, body) VALUES ('old', 0, '"a"')`);
        const { store } = await open(schema);
        expect(await store.migrate()).toBe(SCHEMA_VERSION);
        const { rows } = await old.query(`SELECT version, name FROM ${s}.tollgate_migrations ORDER BY version`);
        expect(rows.slice(6, 9)).toEqual([
          { version: 7, name: 'head base' },
          { version: 8, name: 'entries without a foreign key' },
          { version: 9, name: 'group holds' },
        ]);
        expect(await store.load('old')).toMatchObject({
          version: 2,
          head: '{"whole":true}',
          base: null,
          entries: ['"a"'],
          agent: 'refunds',
        });
        expect(await store.save('old', write(1), 2)).toBe(3);
        expect(await baseOf(store, 'old')).toBeNull();
        expect(await store.save('old', write(2, { base: '{"base":"now"}' }), 3)).toBe(4);
        expect(await baseOf(store, 'old')).toBe('{"base":"now"}');
      } finally {
        await old.end();
      }
    });

    it('from version 7, the entries lose their foreign key and keep their rows; a delete still takes a run’s entries with it', async () => {
      const { schema, s, client: old } = await oldSchema(url, 'fk_upgrade', 7, schemas);
      try {
        const keys = `SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = '${s}.entries'::regclass AND contype = 'f'`;
        expect((await old.query(keys)).rows[0].n).toBe(1);
        await old.query(
          `INSERT INTO ${s}.runs (run_id, version, status, head, entry_count, pending, updated_at)
           VALUES ('old', 1, 'running', '{}', 2, NULL, '2026-01-01T00:00:00.000Z')`,
        );
        await old.query(`INSERT INTO ${s}.entries (run_id, idx, body) VALUES ('old', 0, '"a"'), ('old', 1, '"b"')`);
        const { store } = await open(schema);
        expect((await old.query(keys)).rows[0].n).toBe(0);
        expect((await store.load('old'))?.entries).toEqual(['"a"', '"b"']);
        expect(await store.delete('old')).toBe(true);
        const left = await old.query(`SELECT count(*)::int AS n FROM ${s}.entries WHERE run_id = 'old'`);
        expect(left.rows[0].n).toBe(0);
        expect(await store.save('old', write(0), 0)).toBe(1);
        expect((await store.load('old'))?.entries).toEqual(['"e0"']);
      } finally {
        await old.end();
      }
    });

    it('a delete that waits for a save in flight takes that save’s entries too: the run made again starts clean', async () => {
      const { store } = await open();
      const schema = schemas.at(-1) as string;
      const s = `"${schema}"`;
      expect(await store.save('r', write(0), 0)).toBe(1);
      // A save in flight, by hand: the run's row updated and an entry added, not yet committed.
      const saver = new pg.Client({ connectionString: url });
      await saver.connect();
      try {
        await saver.query('BEGIN');
        await saver.query(`UPDATE ${s}.runs SET version = 2, entry_count = 2 WHERE run_id = 'r'`);
        await saver.query(`INSERT INTO ${s}.entries (run_id, idx, body) VALUES ('r', 1, '"late"')`);
        const [{ pid }] = (await saver.query('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
        const deleting = store.delete('r');
        // The delete waits for the row (seen in pg_stat_activity: blocked by this client); the save commits first.
        const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))`;
        for (let tries = 0; (await saver.query(waiting, [pid])).rows[0].n === 0; tries++) {
          if (tries > 500) throw new Error('the delete never waited for the save in flight');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await saver.query('COMMIT');
        expect(await deleting).toBe(true);
        const left = await saver.query(`SELECT count(*)::int AS n FROM ${s}.entries WHERE run_id = 'r'`);
        expect(left.rows[0].n).toBe(0);
        expect(await store.load('r')).toBeNull();
        expect(await store.save('r', write(0), 0)).toBe(1);
        expect(await store.save('r', write(1), 1)).toBe(2);
        expect((await store.load('r'))?.entries).toEqual(['"e0"', '"e1"']);
      } finally {
        await saver.end();
      }
    });
  },
);
