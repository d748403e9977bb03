// PostgresStore leases and pending calls against the real server at TOLLGATE_PG_URL: the
// upgrade of a database made before them, the database's clock, and the lease checked in the
// save's own statement. Without a server the whole file is skipped, saying why.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseLostError, type RunWrite } from '../../src/index.js';
import { LeaseHolder } from '../../src/runtime/lease.js';
import { MIGRATIONS } from '../../src/stores/postgres/migrations.js';
import { PostgresStore, SCHEMA_VERSION } from '../../src/stores/postgres.js';
import { dropSchema, freshSchema, oldSchema, postgresTarget } from '../support/postgres.js';

const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const stores: PostgresStore[] = [];
const clients: pg.Client[] = [];
const pools: pg.Pool[] = [];

function open(schema = freshSchema('pglease')): PostgresStore {
  if (!schemas.includes(schema)) schemas.push(schema);
  const store = new PostgresStore(url, { schema });
  stores.push(store);
  return store;
}

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

const write = (from: number, extra: Partial<RunWrite> = {}): RunWrite => ({
  status: 'running',
  head: '{"head":true}',
  from,
  append: [],
  pendingCalls: [],
  ...extra,
});

/** A pending call as the seed's code stored it: one object in the `pending` column. */
const oneCall = {
  id: 'old:1#1',
  key: 'old:1',
  step: 1,
  tool: 'pay',
  args: { cents: 500, memo: 'lone \ud800 nul \u0000' },
  attempt: 1,
  requestedAt: '2026-01-01T00:00:00.000Z',
  expiresAt: '2026-01-01T00:05:00.000Z',
};

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(clients.map((c) => c.end()));
  await Promise.all(pools.map((p) => p.end()));
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
});

describe.skipIf(!target.url)(
  `PostgresStore leases ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`,
  () => {
    it('a database made by the schema before leases (version 2) upgrades and keeps its runs; one pending call reads as a list of one', async () => {
      const { schema, s, client: old } = await oldSchema(url, 'upgrade', 2, schemas);
      clients.push(old);
      // Rows exactly as the code before this schema wrote them.
      await old.query(
        `INSERT INTO ${s}.runs (run_id, version, status, head, entry_count, pending, updated_at)
       VALUES ('old', 3, 'awaiting_approval', '{"h":1}', 2, $1, '2026-01-01T00:00:00.000Z'),
              ('done', 1, 'done', '{"h":2}', 0, NULL, '2026-01-01T00:00:01.000Z')`,
        [JSON.stringify(oneCall)],
      );
      await old.query(`INSERT INTO ${s}.entries (run_id, idx, body) VALUES ('old', 0, '"a"'), ('old', 1, '"b"')`);

      const store = open(schema);
      expect(await store.migrate()).toBe(SCHEMA_VERSION);
      const { rows } = await old.query(`SELECT version, name FROM ${s}.tollgate_migrations ORDER BY version`);
      expect(rows.map((r) => [r.version, r.name])).toEqual(MIGRATIONS.map((m) => [m.version, m.name]));
      const run = await store.load('old');
      expect(run).toMatchObject({ version: 3, status: 'awaiting_approval', head: '{"h":1}', entries: ['"a"', '"b"'] });
      expect(run?.pendingCalls).toEqual([oneCall]);
      expect(run?.pending).toEqual(oneCall);
      expect((await store.list()).map((r) => [r.runId, r.pendingCalls.length])).toEqual([
        ['old', 1],
        ['done', 0],
      ]);
      // The upgrade computed the old call's expiry: the filter sees it.
      expect((await store.list({ expired: true })).map((r) => r.runId)).toEqual(['old']);
      expect((await store.list({ expired: false })).map((r) => r.runId)).toEqual(['done']);

      // The old run can be claimed and saved with its lease; pending calls are now stored as a list.
      const lease = await store.claim('old', { owner: 'worker', leaseMs: 60_000 });
      expect(lease.token).toBe(1);
      await store.save('old', write(2, { status: 'awaiting_approval', pendingCalls: [oneCall, oneCall] }), 3, lease);
      const { rows: raw } = await old.query(`SELECT pending FROM ${s}.runs WHERE run_id = 'old'`);
      expect(JSON.parse(raw[0].pending)).toEqual([oneCall, oneCall]);
    });

    it('a schema made before leases kept their holder’s process (version 8) upgrades: a lease held then shows no process; new claims keep theirs', async () => {
      const { schema, s, client: old } = await oldSchema(url, 'lease_process', 8, schemas);
      clients.push(old);
      await old.query(
        `INSERT INTO ${s}.leases (run_id, token, owner, expires_at) VALUES ('held', 3, 'old-worker', now() + interval '1 minute')`,
      );
      const store = open(schema);
      expect(await store.migrate()).toBe(SCHEMA_VERSION);
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
      const { rows } = await old.query(`SELECT owner, process FROM ${s}.leases WHERE run_id = 'fresh'`);
      expect(rows).toEqual([{ owner: null, process: null }]); // released: the process is forgotten with the owner
    });

    it('renewMany is one statement for any number of leases; the agents of a process renew theirs in one call per interval', async () => {
      // Every statement the store sends, counted on a pool of our own.
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      pools.push(pool);
      const sent: string[] = [];
      pool.on('connect', (c) => {
        const query = c.query.bind(c) as (...args: unknown[]) => unknown;
        (c as unknown as { query: unknown }).query = (...args: unknown[]) => {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text;
          sent.push(text ?? '');
          return query(...args);
        };
      });
      const schema = freshSchema('renew_many');
      schemas.push(schema);
      const store = new PostgresStore(pool, { schema });
      stores.push(store);
      const leases = [];
      for (let i = 0; i < 50; i++) leases.push(await store.claim(`r${i}`, { owner: 'w', leaseMs: 60_000 }));
      sent.length = 0;
      const renewed = await store.renewMany(leases);
      expect(sent).toHaveLength(1);
      expect(renewed.every((r) => !(r instanceof LeaseLostError))).toBe(true);

      // Thirty holders of 600 ms leases: one renewMany per 200 ms interval, no renew at all.
      const calls = { renew: 0, renewMany: 0 };
      const counting = new Proxy(store, {
        get(target, key) {
          const value: unknown = Reflect.get(target, key);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (key === 'renew' || key === 'renewMany') calls[key]++;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const holders = Array.from(
        { length: 30 },
        (_, i) => new LeaseHolder(counting, `h${i}`, { owner: `o${i}`, leaseMs: 600, waitMs: 0 }, () => {}),
      );
      for (const holder of holders) await holder.current();
      sent.length = 0;
      await new Promise((r) => setTimeout(r, 1_050));
      const renewals = sent.filter((text) => /UPDATE .*leases AS l SET expires_at/s.test(text));
      expect(calls.renew).toBe(0);
      expect(calls.renewMany).toBeGreaterThanOrEqual(4); // every 200 ms
      expect(calls.renewMany).toBeLessThanOrEqual(6);
      expect(renewals).toHaveLength(calls.renewMany); // one statement each, for thirty leases
      for (const holder of holders) expect(holder.lease).not.toBeNull();
      for (const holder of holders) await holder.release();
    });

    it('leases on the database clock: expiresAt is the server’s time, and a waiting claim takes a lapsed lease over', async () => {
      const store = open();
      const c = await client();
      const before = (await c.query('SELECT clock_timestamp() AS t')).rows[0].t as Date;
      const a = await store.claim('r', { owner: 'worker-a', leaseMs: 300 });
      const after = (await c.query('SELECT clock_timestamp() AS t')).rows[0].t as Date;
      const end = Date.parse(a.expiresAt);
      expect(end).toBeGreaterThanOrEqual(before.getTime() + 300 - 1);
      expect(end).toBeLessThanOrEqual(after.getTime() + 300 + 1);
      await store.save('r', write(0), 0, a);
      const b = await store.claim('r', { owner: 'worker-b', leaseMs: 60_000, wait: 10_000 });
      expect(b.token).toBe(2);
      await expect(store.save('r', write(0), 1, a)).rejects.toMatchObject({
        name: 'LeaseLostError',
        token: 1,
        currentToken: 2,
        holder: 'worker-b',
      });
    });

    it('a save waiting on the lease row is checked against the newest lease: a takeover committed meanwhile refuses it, in the same statement', async () => {
      const schema = freshSchema('fence');
      const store = open(schema);
      const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
      await store.save('r', write(0), 0, lease);
      const before = await store.load('r');

      // Another transaction holds the lease row; the save queues behind it.
      const other = await client();
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM "${schema}".leases WHERE run_id = 'r' FOR UPDATE`);
      const saving = store.save('r', write(0, { status: 'done', head: '{"late":true}' }), 1, lease);
      saving.catch(() => {});
      const watcher = await client();
      let queued = false;
      for (let i = 0; i < 500 && !queued; i++) {
        const { rows } = await watcher.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%leases%FOR UPDATE%'`,
        );
        queued = rows[0].n > 0;
        if (!queued) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(queued, 'the save waits for the lease row').toBe(true);
      // What a takeover does, committed while the save waits.
      await other.query(
        `UPDATE "${schema}".leases SET token = token + 1, owner = 'worker-b', expires_at = now() + interval '1 minute' WHERE run_id = 'r'`,
      );
      await other.query('COMMIT');
      const error = await saving.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(error).toMatchObject({ token: 1, currentToken: 2, holder: 'worker-b' });
      expect(await store.load('r')).toEqual(before);
    });
  },
);
