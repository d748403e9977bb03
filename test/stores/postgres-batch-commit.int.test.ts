// PostgresStore's batch commit: the saves of different runs made in one event-loop turn go to
// the server as one statement, and each is still made or refused alone. Against the real server
// at TOLLGATE_PG_URL, in schemas of this file's own (dropped afterwards).
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  type Lease,
  LeaseLostError,
  OptionsError,
  RunBusyError,
  type RunWrite,
} from '../../src/index.js';
import { MAX_BATCH } from '../../src/stores/postgres/batch-commit.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';

const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const pools: pg.Pool[] = [];
/** Every statement the stores sent, as node-postgres was given it. */
const sent: { text?: string; values?: unknown[] }[] = [];

/** A store on a pool of its own that counts the statements it sends (warm: migrated, connected). */
async function open(): Promise<{ store: PostgresStore; statements: () => number; schema: string; pool: pg.Pool }> {
  const schema = freshSchema('batch');
  schemas.push(schema);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pools.push(pool);
  let count = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      count++;
      sent.push(args[0] as { text?: string; values?: unknown[] });
      return query(...args);
    };
  });
  const store = new PostgresStore(pool, { schema });
  await store.migrate();
  return { store, statements: () => count, schema, pool };
}

const write = (from: number, append: string[], extra: Partial<RunWrite> = {}): RunWrite => ({
  status: 'running',
  head: `{"at":${from}}`,
  from,
  append,
  pendingCalls: [],
  ...extra,
});

const runIds = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
});

describe.skipIf(!target.url)(
  `PostgresStore batch commit ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`,
  () => {
    it('the saves of 20 runs made in one turn are one statement, creations too; each run gets its own version, head and entries', async () => {
      const { store, statements } = await open();
      const ids = runIds(20);
      const created = statements();
      expect(await Promise.all(ids.map((id) => store.save(id, write(0, [`"${id}:0"`]), 0)))).toEqual(ids.map(() => 1));
      expect(statements() - created).toBe(1);
      for (let version = 1; version <= 3; version++) {
        const before = statements();
        const versions = await Promise.all(
          ids.map((id) => store.save(id, write(version, [`"${id}:${version}"`]), version)),
        );
        expect(statements() - before).toBe(1);
        expect(versions).toEqual(ids.map(() => version + 1));
      }
      for (const id of ids) {
        expect(await store.load(id)).toMatchObject({
          version: 4,
          head: '{"at":3}',
          entries: [0, 1, 2, 3].map((k) => `"${id}:${k}"`),
        });
      }
    });

    it(`a larger batch than MAX_BATCH (${MAX_BATCH}) is sent as several statements, each save made once`, async () => {
      const { store, statements } = await open();
      const ids = runIds(MAX_BATCH + 44);
      const before = statements();
      expect(await Promise.all(ids.map((id) => store.save(id, write(0, [`"${id}"`]), 0)))).toEqual(ids.map(() => 1));
      expect(statements() - before).toBe(2);
      const runs = await store.list({ limit: 1_000 });
      expect(runs).toHaveLength(ids.length);
      for (const id of [ids[0], ids[MAX_BATCH - 1], ids[MAX_BATCH], ids.at(-1)] as string[]) {
        expect((await store.load(id))?.entries).toEqual([`"${id}"`]);
      }
    });

    it('a batch of saves is made whole: versions, heads, entries in order, status, pending and the agent', async () => {
      const { store, statements } = await open();
      const ids = runIds(12);
      await Promise.all(ids.map((id) => store.save(id, write(0, [`"${id}:0"`], { agent: 'a' }), 0)));
      const before = statements();
      const expiry = '2031-05-06T07:08:09.000Z';
      const versions = await Promise.all(
        ids.map((id, i) =>
          store.save(
            id,
            write(
              1,
              Array.from({ length: i % 4 }, (_, k) => `"${id}:${k + 1}"`),
              {
                head: `{"run":"${id}"}`,
                status: i === 3 ? 'awaiting_approval' : 'running',
                pendingCalls: i === 3 ? [{ callId: 'c', expiresAt: expiry } as never] : [],
              },
            ),
            1,
          ),
        ),
      );
      expect(statements() - before).toBe(1);
      expect(versions).toEqual(ids.map(() => 2));
      for (const [i, id] of ids.entries()) {
        const run = await store.load(id);
        expect(run).toMatchObject({
          version: 2,
          head: `{"run":"${id}"}`,
          status: i === 3 ? 'awaiting_approval' : 'running',
          agent: 'a',
        });
        expect(run?.entries).toEqual([`"${id}:0"`, ...Array.from({ length: i % 4 }, (_, k) => `"${id}:${k + 1}"`)]);
        expect(run?.pendingCalls).toEqual(i === 3 ? [{ callId: 'c', expiresAt: expiry }] : []);
      }
      expect((await store.list({ expired: false, status: 'awaiting_approval' })).map((r) => r.runId)).toEqual(['r3']);
    });

    it('in one batch, a stale version, a lost lease, a busy run, another agent’s name and a run created twice are each refused alone with their own error; the rest are made', async () => {
      const { store } = await open();
      const ids = runIds(8);
      await Promise.all(ids.map((id) => store.save(id, write(0, ['"0"'], { agent: 'a' }), 0)));
      const held = await store.claim('r1', { owner: 'me', leaseMs: 60_000 });
      const lost = await store.claim('r2', { owner: 'me', leaseMs: 60_000 });
      await store.release(lost);
      await store.claim('r2', { owner: 'other', leaseMs: 60_000 });
      await store.claim('r3', { owner: 'other', leaseMs: 60_000 });
      const outcomes = await Promise.allSettled([
        store.save('r0', write(1, ['"1"']), 7), // stale version
        store.save('r1', write(1, ['"1"']), 1, held), // made, under its lease
        store.save('r2', write(1, ['"1"']), 1, lost), // the lease was taken again since
        store.save('r3', write(1, ['"1"']), 1), // no lease, and another owner holds a live one
        store.save('r4', write(1, ['"1"'], { agent: 'b' }), 1), // another agent's name
        store.save('r5', write(1, ['"1"']), 1),
        store.save('r6', write(3, ['"1"']), 1), // wrong entry count
        store.save('r7', write(1, ['"1"']), 1),
        store.save('r7x', write(0, ['"0"']), 0), // a creation, made
        store.save('r6', write(0, ['"again"']), 0), // the creation of a run that exists
      ]);
      const reasons = outcomes.map((o) => (o.status === 'rejected' ? o.reason : o.value));
      expect(reasons[0]).toBeInstanceOf(ConflictError);
      expect(reasons[1]).toBe(2);
      expect(reasons[2]).toBeInstanceOf(LeaseLostError);
      expect(reasons[3]).toBeInstanceOf(RunBusyError);
      expect(reasons[4]).toBeInstanceOf(OptionsError);
      expect(reasons[5]).toBe(2);
      expect(reasons[6]).toBeInstanceOf(ConflictError);
      expect(reasons[7]).toBe(2);
      expect(reasons[8]).toBe(1);
      expect(reasons[9]).toBeInstanceOf(ConflictError);
      expect((await store.load('r7x'))?.entries).toEqual(['"0"']);
      for (const [i, id] of ids.entries()) {
        const made = i === 1 || i === 5 || i === 7;
        const run = await store.load(id);
        expect(run?.version).toBe(made ? 2 : 1);
        expect(run?.entries).toEqual(made ? ['"0"', '"1"'] : ['"0"']);
      }
    });

    it('two saves of one run in the same turn: exactly one is made, the other is a ConflictError', async () => {
      const { store } = await open();
      await Promise.all(['a', 'b', 'c'].map((id) => store.save(id, write(0, []), 0)));
      for (const append of [['"1"'], []]) {
        const version = append.length === 0 ? 2 : 1;
        const from = version - 1;
        const outcomes = await Promise.allSettled([
          store.save('a', write(from, append, { head: '{"first":true}' }), version),
          store.save('b', write(from, append), version),
          store.save('a', write(from, append, { head: '{"second":true}' }), version),
          store.save('c', write(from, append), version),
        ]);
        const pair = [outcomes[0], outcomes[2]];
        expect(pair.filter((o) => o?.status === 'fulfilled')).toEqual([{ status: 'fulfilled', value: version + 1 }]);
        expect((pair.find((o) => o?.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(
          ConflictError,
        );
        expect(outcomes[1]).toEqual({ status: 'fulfilled', value: version + 1 });
        expect(outcomes[3]).toEqual({ status: 'fulfilled', value: version + 1 });
        const run = await store.load('a');
        expect(run?.head).toBe(outcomes[0]?.status === 'fulfilled' ? '{"first":true}' : '{"second":true}');
        expect(run?.entries).toEqual(['"1"']);
      }
    });

    it('a batch the server refuses whole (an entry row already there) writes nothing; each save is then tried alone', async () => {
      const { store, schema } = await open();
      const ids = runIds(5);
      await Promise.all(ids.map((id) => store.save(id, write(0, []), 0)));
      // A stray entry where r2's next one goes: the batch's INSERT breaks the primary key.
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`INSERT INTO "${schema}".entries (run_id, idx, body) VALUES ('r2', 0, '"stray"')`);
      } finally {
        await admin.end();
      }
      const outcomes = await Promise.allSettled(ids.map((id) => store.save(id, write(0, [`"${id}"`]), 1)));
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      for (const id of ids) {
        const run = await store.load(id).catch((e: unknown) => e);
        if (id === 'r2')
          expect(run).toMatchObject({ name: 'CheckpointError' }); // 0 entries counted, 1 row: damaged
        else expect(run).toMatchObject({ version: 2, entries: [`"${id}"`] });
      }
    });

    it('saves under leases in a batch extend each lease; one without a lease wakes the watchers', async () => {
      const { store, schema, pool } = await open();
      const ids = runIds(3);
      await Promise.all(ids.map((id) => store.save(id, write(0, []), 0)));
      const leases = await Promise.all(ids.slice(0, 2).map((id) => store.claim(id, { owner: 'w', leaseMs: 1_000 })));
      let woken = 0;
      const stop = await store.watch(() => {
        woken++;
      });
      try {
        const versions = await Promise.all([
          store.save('r0', write(0, ['"x"']), 1, { ...(leases[0] as Lease), leaseMs: 120_000 }),
          store.save('r1', write(0, ['"x"']), 1, leases[1]),
        ]);
        expect(versions).toEqual([2, 2]);
        // The batch extended r0's lease to about two minutes from now, r1's by its own second.
        const { rows } = await pool.query(
          `SELECT run_id, extract(epoch FROM expires_at - now()) AS left FROM "${schema}".leases ORDER BY run_id`,
        );
        expect(Number(rows[0].left)).toBeGreaterThan(100);
        expect(Number(rows[1].left)).toBeLessThan(5);
        const holder = await store.claim('r0', { owner: 'thief', leaseMs: 1_000 }).catch((e: unknown) => e);
        expect(holder).toBeInstanceOf(RunBusyError);
        await Promise.all([store.save('r1', write(1, ['"y"']), 2, leases[1]), store.save('r2', write(0, ['"y"']), 1)]);
        await expect.poll(() => woken, { timeout: 5_000 }).toBeGreaterThan(0);
      } finally {
        await stop();
      }
    });

    it('a batch commits relaxed (synchronous_commit off for its transaction) only when every save in it is relaxed', async () => {
      const { store, pool } = await open();
      const ids = runIds(3);
      await Promise.all(ids.map((id) => store.save(id, write(0, []), 0)));
      const relaxedOf = async (relaxed: boolean[], version: number) => {
        const from = sent.length;
        await Promise.all(ids.map((id, i) => store.save(id, write(0, [], { relaxed: relaxed[i] }), version)));
        const batch = sent.slice(from).filter((q) => Array.isArray(q.values?.[0]));
        expect(batch).toHaveLength(1);
        return batch[0]?.values?.[11];
      };
      expect(await relaxedOf([true, true, true], 1)).toBe(true);
      expect(await relaxedOf([true, false, true], 2)).toBe(false);
      expect(await relaxedOf([false, false, false], 3)).toBe(false);
      // set_config(…, true): the session's own setting is left as it was.
      const sessions = await Promise.all([0, 1, 2, 3].map(() => pool.connect()));
      try {
        for (const c of sessions)
          expect((await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
      } finally {
        for (const c of sessions) c.release();
      }
    });
    it('the claims of 20 runs made in one turn are one statement, their releases another; each gets its own lease', async () => {
      const { store, statements } = await open();
      const ids = runIds(20, 'c');
      let before = statements();
      const leases = await Promise.all(ids.map((id) => store.claim(id, { owner: 'w', leaseMs: 60_000 })));
      expect(statements() - before).toBe(1);
      expect(leases.map((l) => [l.runId, l.owner, l.token])).toEqual(ids.map((id) => [id, 'w', 1]));
      // Each lease fences its own run: a save under it is made.
      await Promise.all(ids.map((id, i) => store.save(id, write(0, []), 0, leases[i])));
      before = statements();
      expect(await Promise.all(leases.map((l) => store.release(l)))).toEqual(ids.map(() => true));
      expect(statements() - before).toBe(1);
      // Released: another owner takes each at once, with the next token.
      const next = await Promise.all(ids.map((id) => store.claim(id, { owner: 'v', leaseMs: 1_000 })));
      expect(next.map((l) => l.token)).toEqual(ids.map(() => 2));
    });

    it('in one batch, a run another owner holds is refused alone (RunBusyError naming the holder) and the rest are claimed', async () => {
      const { store } = await open();
      const held = await Promise.all(['h0', 'h1'].map((id) => store.claim(id, { owner: 'other', leaseMs: 60_000 })));
      const results = await Promise.allSettled(
        ['f0', 'h0', 'f1', 'h1', 'f2'].map((id) => store.claim(id, { owner: 'me', leaseMs: 60_000 })),
      );
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ name: 'RunBusyError', holder: 'other' });
        else expect(r.value).toMatchObject({ owner: 'me', token: 1 });
      }
      // The held runs kept their owner's lease: it still releases.
      expect(await Promise.all(held.map((l) => store.release(l)))).toEqual([true, true]);
    });

    it('two claims of one run in a turn: the second goes alone (same owner: a new token; another owner: busy)', async () => {
      const { store } = await open();
      const [a, b, c] = await Promise.all([
        store.claim('d', { owner: 'me', leaseMs: 60_000 }),
        store.claim('d', { owner: 'me', leaseMs: 60_000 }),
        store.claim('e', { owner: 'me', leaseMs: 60_000 }),
      ]);
      // Both made, one after the other (whichever reached the server first has token 1).
      expect([a.token, b.token].sort()).toEqual([1, 2]);
      expect(c.token).toBe(1);
      const raced = await Promise.allSettled([
        store.claim('f', { owner: 'x', leaseMs: 60_000 }),
        store.claim('f', { owner: 'y', leaseMs: 60_000 }),
        store.claim('g', { owner: 'x', leaseMs: 60_000 }),
      ]);
      // One of the two owners has the run, the other is refused; g is claimed either way.
      expect(raced.map((r) => r.status).sort()).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect(raced[2]?.status).toBe('fulfilled');
      const refused = raced.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(refused?.reason).toBeInstanceOf(RunBusyError);
    });

    it('in one batch of releases, a lease no longer current releases nothing (false) and the rest are released; watchers wake', async () => {
      const { store, statements } = await open();
      const leases = await Promise.all(runIds(4, 'z').map((id) => store.claim(id, { owner: 'w', leaseMs: 60_000 })));
      // z3's lease is fenced by a later claim of its own owner; z2's was released already.
      const later = await store.claim('z3', { owner: 'w', leaseMs: 60_000 });
      expect(await store.release(leases[2] as Lease)).toBe(true);
      let woken = 0;
      const stop = await store.watch(() => {
        woken++;
      });
      try {
        const before = statements();
        expect(await Promise.all(leases.map((l) => store.release(l)))).toEqual([true, true, false, false]);
        expect(statements() - before).toBe(1);
        await expect.poll(() => woken, { timeout: 5_000 }).toBeGreaterThan(0);
        expect(await store.release(later)).toBe(true);
      } finally {
        await stop();
      }
    });
  },
);
