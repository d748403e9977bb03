/**
 * What `Agent.load` of a run at rest costs the store: one `open` on a store that has it (one
 * synchronous step on memory and SQLite, one round trip on Postgres), against the five calls it
 * is made of — summary, claim, load, groupOf, release — on a store without it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { PostgresStore } from '../src/stores/postgres.js';
import { SqliteStore } from '../src/stores/sqlite.js';
import { scriptedPolicy } from '../src/testing/index.js';
import { recorder } from './support/helpers.js';
import { dropSchema, freshSchema, postgresTarget } from './support/postgres.js';

const mail = recorder('mail', { sideEffect: true });
const policy = () => scriptedPolicy([{ tool: 'mail', args: { to: 'ops' } }, { final: 'sent' }]);

/** The store as `Agent.load` sees it, each method call named in `calls`; `open` hidden when `withOpen` is false. */
function counting(store: CheckpointStore, withOpen: boolean): { store: CheckpointStore; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, name) {
      if (name === 'open' && !withOpen) return undefined;
      const value = Reflect.get(target, name, target);
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return (...args: unknown[]) => {
        calls.push(name);
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

/** A run at rest (awaiting approval) in a budget group, then the calls of one `Agent.load` of it, with and without `open`. */
async function callsOfLoad(store: CheckpointStore, roundTrips: () => number = () => 0) {
  const agent = new Agent({ runId: 'rest', store, policy: policy(), tools: [mail.tool], budgetGroup: 'acme' });
  expect(await agent.start('go')).toBe('awaiting_approval');
  const result: Record<'with' | 'without', { calls: string[]; roundTrips: number }> = {} as never;
  for (const withOpen of [false, true]) {
    const seen = counting(store, withOpen);
    const before = roundTrips();
    const loaded = await Agent.load(seen.store, 'rest', { policy: policy(), tools: [mail.tool] });
    expect(loaded.status).toBe('awaiting_approval');
    result[withOpen ? 'with' : 'without'] = { calls: seen.calls, roundTrips: roundTrips() - before };
    // Not left claimed: another owner claims it at once.
    await store.release(await store.claim('rest', { owner: 'someone-else', leaseMs: 1_000 }));
  }
  // The group is kept: the loaded run spends in it.
  const loaded = await Agent.load(store, 'rest', { policy: policy(), tools: [mail.tool] });
  expect(await loaded.decide(true)).toBe('done');
  return result;
}

const PARTS = ['summary', 'claim', 'load', 'groupOf', 'release'];

describe('Agent.load of a run at rest', () => {
  it('memory: one open, against five calls without it', async () => {
    const counted = await callsOfLoad(new MemoryStore());
    expect(counted.without.calls).toEqual(PARTS);
    expect(counted.with.calls).toEqual(['open']);
  });

  const dir = mkdtempSync(join(tmpdir(), 'tollgate-load-calls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('SQLite: one open (one transaction), against five calls without it', async () => {
    const store = SqliteStore.open(join(dir, 'runs.db'));
    try {
      const counted = await callsOfLoad(store);
      expect(counted.without.calls).toEqual(PARTS);
      expect(counted.with.calls).toEqual(['open']);
    } finally {
      await store.close();
    }
  });

  it('Postgres: one open in one round trip, against five calls in five round trips without it', async (ctx) => {
    const { url, skipReason } = await postgresTarget();
    if (!url) return ctx.skip(skipReason ?? 'no server');
    const schema = freshSchema('load_calls');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    let queries = 0;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: typeof query }).query = (...args) => {
        queries++;
        return query(...args);
      };
    });
    const store = new PostgresStore(pool, { schema });
    try {
      await store.migrate();
      const counted = await callsOfLoad(store, () => queries);
      expect(counted.without).toEqual({ calls: PARTS, roundTrips: 5 });
      expect(counted.with).toEqual({ calls: ['open'], roundTrips: 1 });
    } finally {
      await store.close();
      await pool.end();
      await dropSchema(url, schema);
    }
  });
});
