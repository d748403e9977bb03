// PostgresStore for workers against the real server at TOLLGATE_PG_URL: the upgrade of a
// database made before them, claimNext raced by many stores (each its own pool) while a writer
// saves the same runs, and watch across stores by LISTEN/NOTIFY. Without a server the whole
// file is skipped, saying why.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, type RunWrite } from '../../src/index.js';
import { statements } from '../../src/stores/postgres/sql.js';
import { PostgresStore, SCHEMA_VERSION } from '../../src/stores/postgres.js';
import { ManualClock } from '../../src/testing/index.js';
import { recordDecision, submitRun, Worker, type WorkerEvent } from '../../src/worker/index.js';
import { dropSchema, freshSchema, oldSchema, postgresTarget } from '../support/postgres.js';

const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const stores: PostgresStore[] = [];

function open(schema: string): PostgresStore {
  if (!schemas.includes(schema)) schemas.push(schema);
  const store = new PostgresStore(url, { schema, maxConnections: 3 });
  stores.push(store);
  return store;
}

const write = (extra: Partial<RunWrite> = {}): RunWrite => ({
  status: 'running',
  head: '{"head":true}',
  from: 0,
  append: [],
  pendingCalls: [],
  ...extra,
});

/** The pending call `decision` decides, on run `runId`. */
const pendingOf = (runId: string) => ({
  id: `${runId}:1#1`,
  key: `${runId}:1`,
  step: 1,
  tool: 'pay',
  args: {},
  attempt: 1,
  requestedAt: '2026-01-01T00:00:00.000Z',
});

const decision = { decisions: { 'r:1#1': { approve: true } }, by: 'alice', at: '2026-01-01T00:01:00.000Z' };

/** Resolves once `done()` holds (a notification arrives after a commit, over the network). */
async function until(done: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > end) throw new Error(`${what} was not seen within 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
});

describe.skipIf(!target.url)(
  `PostgresStore workers ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`,
  () => {
    it('claimNext by class reads each class through its own index (runs_decided, runs_expiring, leases_held) and keeps FOR UPDATE SKIP LOCKED; a backlog of new runs is not scanned for them', async () => {
      const schema = freshSchema('claim_order');
      const store = open(schema);
      // A backlog of 2,000 new runs, 50,000 ended (their leases released), an inbox of 500 waiting
      // for a human, ten live owners (written as the store writes them); then, through the store,
      // three runs with a recorded decision and two whose owner died.
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await store.migrate();
      const q = `"${schema}"`;
      const rows = (prefix: string, n: number, status: string, expiry: string) =>
        c.query(
          `INSERT INTO ${q}.runs (run_id, version, status, head, entry_count, pending, pending_expires_at, updated_at, agent)
           SELECT '${prefix}-' || lpad(i::text, 5, '0'), 1, '${status}', '{}', 0, NULL, ${expiry},
                  timestamptz '2026-01-01' + i * interval '1 ms', 'refunds'
             FROM generate_series(1, ${n}) AS i`,
        );
      await rows('ended', 50_000, 'done', 'NULL');
      await c.query(
        `INSERT INTO ${q}.leases (run_id, token, owner, expires_at) SELECT run_id, 1, NULL, NULL FROM ${q}.runs`,
      );
      await rows('new', 2_000, 'running', 'NULL');
      await rows('inbox', 500, 'awaiting_approval', "now() + interval '1 hour'");
      for (let i = 0; i < 10; i++) await store.claim(`live-${i}`, { owner: 'w-live', leaseMs: 60_000 });
      for (const runId of ['d-1', 'd-2', 'd-3']) {
        const pendingCalls = [{ ...pendingOf(runId), expiresAt: null }];
        await store.save(runId, write({ status: 'awaiting_approval', agent: 'refunds', pendingCalls }), 0);
        await store.queueDecision(runId, { ...decision, decisions: { [`${runId}:1#1`]: { approve: true } } }, 1);
      }
      for (const runId of ['dead-1', 'dead-2']) {
        const lease = await store.claim(runId, { owner: 'dead', leaseMs: 1 });
        await store.save(runId, write({ agent: 'refunds' }), 0, lease);
      }
      await new Promise((r) => setTimeout(r, 5)); // the dead owners' leases lapse
      try {
        await c.query(`ANALYZE "${schema}".runs; ANALYZE "${schema}".leases`);
        const sql = statements(q, schema);
        const values = ['w', 60_000, ['refunds'], null, [], null];
        const explain = async (text: string) =>
          (await c.query(`EXPLAIN (COSTS OFF) ${text}`, values)).rows.map((r) => r['QUERY PLAN'] as string).join('\n');
        for (const plan of [await explain(sql.claimNextByClass), await explain(sql.claimNext)]) {
          expect(plan).toMatch(/Index Only Scan using runs_decided/);
          expect(plan).toMatch(
            /Index (Only )?Scan using runs_expiring on runs e\s+Index Cond: \(pending_expires_at <=/,
          );
          expect(plan).toMatch(
            /Index Scan using runs_by_status on runs r\S*\s+Index Cond: \(status = 'running'::text\)/,
          );
          expect(plan).toMatch(/LockRows/); // FOR UPDATE … SKIP LOCKED
          expect(plan).not.toMatch(/Seq Scan on runs|Seq Scan on leases/);
        }
        const byClass = await explain(sql.claimNextByClass);
        expect(byClass).toMatch(/Index (Only )?Scan using leases_held/);
        // The classes after the first are gated: each is read only when those before found nothing.
        expect(byClass.match(/One-Time Filter: \(+NOT/g)).toHaveLength(2);
      } finally {
        await c.end();
      }
      // And the order itself, on that backlog: decisions, then the dead owners' runs, then the oldest.
      const taken: string[] = [];
      for (let i = 0; i < 6; i++) {
        taken.push((await store.claimNext({ owner: 'w', leaseMs: 60_000, agents: ['refunds'] }))?.run.runId ?? '');
      }
      expect(taken).toEqual(['d-1', 'd-2', 'd-3', 'new-00001', 'dead-1', 'dead-2']);
    });

    it('a database made before workers (version 4) upgrades: its runs have no agent and no decision; claimNext uses the new index', async () => {
      const { schema, s, client: old } = await oldSchema(url, 'workers_upgrade', 4, schemas);
      try {
        await old.query(
          `INSERT INTO ${s}.runs (run_id, version, status, head, entry_count, pending, updated_at)
           VALUES ('old', 1, 'running', '{}', 0, NULL, '2026-01-01T00:00:00.000Z')`,
        );
        const store = open(schema);
        expect(await store.migrate()).toBe(SCHEMA_VERSION);
        const run = await store.load('old');
        expect([run?.agent, run?.decision]).toEqual([null, null]);
        expect(await store.claimNext({ owner: 'w', leaseMs: 1_000, agents: ['refunds'] })).toBeNull();
        expect(await store.save('old', write({ agent: 'refunds' }), 1)).toBe(2);
        await expect(store.save('old', write({ agent: 'billing' }), 2)).rejects.toMatchObject({
          name: 'OptionsError',
          message: expect.stringMatching(/belongs to agent "refunds"/),
        });
        expect((await store.load('old'))?.version).toBe(2);
        expect((await store.claimNext({ owner: 'w', leaseMs: 1_000, agents: ['refunds'] }))?.run.runId).toBe('old');
        const { rows } = await old.query(
          `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'runs_by_agent'`,
          [schema],
        );
        expect(rows[0]?.indexdef).toMatch(/\(agent, updated_at, run_id COLLATE "C"\)/);
      } finally {
        await old.end();
      }
    });

    it('many stores race claimNext while another saves the same runs without a lease: each run is taken once, no deadlock, no other error', async () => {
      const schema = freshSchema('workers_race');
      const runIds = Array.from({ length: 60 }, (_, i) => `run-${String(i).padStart(2, '0')}`);
      const setup = open(schema);
      for (const runId of runIds) await setup.save(runId, write({ agent: 'refunds' }), 0);
      const claimers = Array.from({ length: 5 }, () => open(schema));
      const writer = open(schema);
      let stop = false;
      const refused: string[] = [];
      // Saves without a lease on the runs, oldest first, as a submitter or an approver might.
      const writing = (async () => {
        for (let round = 0; !stop; round++) {
          const runId = runIds[round % runIds.length] as string;
          const version = (await writer.load(runId))?.version ?? 1;
          try {
            await writer.save(runId, write({ head: `{"round":${round}}` }), version);
          } catch (error) {
            const name = (error as Error).name;
            if (name !== 'RunBusyError' && name !== 'ConflictError') throw error;
            refused.push(name);
          }
        }
      })();
      const taken = await Promise.all(
        claimers.map(async (store, i) => {
          const mine: string[] = [];
          const options = { owner: `worker-${i}`, leaseMs: 60_000, agents: ['refunds'] };
          for (let next = await store.claimNext(options); next; next = await store.claimNext(options)) {
            mine.push(next.run.runId);
          }
          return mine;
        }),
      );
      stop = true;
      await writing;
      expect(taken.flat().sort()).toEqual(runIds);
      // The race was real: more than one worker took runs.
      expect(taken.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
      expect(refused.length).toBeGreaterThan(0);
    }, 60_000);

    it('claimNext does not wait for a lease row another writer has locked (it would deadlock with that writer, which locks the run next): it passes the run by and takes the next', async () => {
      const schema = freshSchema('workers_locked');
      const store = open(schema);
      await store.save('r', write({ agent: 'refunds' }), 0);
      await store.release(await store.claim('r', { owner: 'w', leaseMs: 60_000 })); // a lease row, free
      await store.save('newer', write({ agent: 'refunds' }), 0);
      const writer = new pg.Client({ connectionString: url });
      await writer.connect();
      try {
        // As a save or a decision does: the lease row first, then (later) the run.
        await writer.query('BEGIN');
        await writer.query(`SELECT 1 FROM "${schema}".leases WHERE run_id = 'r' FOR UPDATE`);
        const claiming = store.claimNext({ owner: 'x', leaseMs: 60_000, agents: ['refunds'] });
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise((resolve) => {
          timer = setTimeout(() => resolve('waited'), 5_000);
        });
        const next = (await Promise.race([claiming, waited])) as Awaited<typeof claiming> | 'waited';
        expect(next === 'waited' ? next : next?.run.runId).toBe('newer');
        clearTimeout(timer);
        await writer.query(`UPDATE "${schema}".runs SET updated_at = updated_at WHERE run_id = 'r'`);
        await writer.query('COMMIT');
      } finally {
        await writer.end();
      }
      expect((await store.claimNext({ owner: 'x', leaseMs: 60_000, agents: ['refunds'] }))?.lease.token).toBe(2);
    });

    it('watch hears other stores of the schema (a save without a lease, a decision, a release), not other schemas; stop and close end it', async () => {
      const schema = freshSchema('workers_watch');
      const watcher = open(schema);
      const other = open(schema);
      const elsewhere = open(freshSchema('workers_other'));
      let calls = 0;
      const stop = await watcher.watch(() => {
        calls++;
      });
      await elsewhere.save('x', write({ agent: 'refunds' }), 0);
      await other.save('r', write({ status: 'awaiting_approval', agent: 'refunds' }), 0);
      await until(() => calls >= 1, 'a save from another store');
      // Commits reach the listening connection in order: the other schema's came first and was ignored.
      expect(calls).toBe(1);
      await other.queueDecision('r', decision, 1);
      await until(() => calls >= 2, 'a decision from another store');
      const lease = await other.claim('r', { owner: 'w', leaseMs: 60_000 });
      await other.save('r', write({ from: 0, status: 'running' }), 2, lease); // holds a live lease: no call
      expect(await other.release(lease)).toBe(true);
      await until(() => calls >= 3, 'a release from another store');
      expect(calls).toBe(3);
      await stop();
      await watcher.close();
      await other.save('r', write(), 3);
      // The watcher's connection is gone: closing it did not wait for it, and nothing hangs.
      await expect(watcher.watch(() => {})).rejects.toMatchObject({ name: 'UserError' });
    });

    it('a Worker wakes by NOTIFY when another store submits a run or records a decision: its polls never fire', async () => {
      const schema = freshSchema('workers_wake');
      const workerStore = open(schema);
      const submitter = open(schema); // another pool, as another process would have
      const def = defineAgent({
        name: 'refunds',
        policy: (history) => (history.some((e) => e.role === 'tool') ? { final: 'refunded' } : { tool: 'refund' }),
        tools: [{ name: 'refund', sideEffect: true, fn: () => 'ok' }],
      });
      // The worker's clock never moves: without the notification it would never look again.
      const worker = new Worker({ store: workerStore, agents: [def], clock: new ManualClock(0), pollMs: 60_000 });
      const events: WorkerEvent[] = [];
      worker.observe((e) => events.push(e));
      await worker.start();
      try {
        await until(() => events.some((e) => e.type === 'idle'), 'the worker going idle');
        await submitRun(submitter, { agent: def, goal: 'refund order 7', runId: 'w1' });
        const settled = (status: string) =>
          events.some((e) => e.type === 'settled' && e.runId === 'w1' && e.status === status);
        await until(() => settled('awaiting_approval'), 'the run taken up and paused');
        await recordDecision(submitter, 'w1', true, { by: 'alice' });
        await until(() => settled('done'), 'the decided run finished');
        expect((await submitter.load('w1'))?.status).toBe('done');
      } finally {
        await worker.stop();
      }
    });
  },
);
