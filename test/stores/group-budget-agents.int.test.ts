/**
 * Group budgets with real stores: runs of one group working at once, each through its own
 * connection (SQLite: its own `SqliteStore` on one file; Postgres: its own pool), stop with
 * `stoppedBy: 'group'` once the group's budget is reached. Each call holds what it may spend
 * before it is made (reserve, then settle), so what the group spent is exactly what its runs spent
 * and never more than the limit. A run loaded again stays in its group. Postgres is skipped,
 * saying why, without a server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore, type Policy } from '../../src/index.js';
import type { GroupBudgetStore } from '../../src/store/contract.js';
import { PostgresStore, SCHEMA_VERSION } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { dropSchema, freshSchema, oldSchema, postgresTarget } from '../support/postgres.js';

type GroupStore = CheckpointStore & GroupBudgetStore;

const target = await postgresTarget();
const dir = mkdtempSync(join(tmpdir(), 'tollgate-group-agents-'));
const schemas: string[] = [];
const opened: GroupStore[] = [];

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  if (target.url) for (const schema of schemas) await dropSchema(target.url, schema);
  rmSync(dir, { recursive: true, force: true });
});

/** Opens connections on one storage: each call a new store (its own connection or pool). */
const kinds: { name: string; skip: string | null; storage: () => () => GroupStore }[] = [
  {
    name: 'sqlite',
    skip: null,
    storage: () => {
      const path = join(dir, `${Math.random().toString(36).slice(2)}.db`);
      return () => {
        const store = SqliteStore.open(path);
        opened.push(store);
        return store;
      };
    },
  },
  {
    name: 'postgres',
    skip: target.skipReason,
    storage: () => {
      const schema = freshSchema('group_agents');
      schemas.push(schema);
      return () => {
        const store = new PostgresStore(target.url ?? '', { schema, maxConnections: 3 });
        opened.push(store);
        return store;
      };
    },
  },
];

const CALL_USD = 0.01;
const LIMIT_USD = 0.1;
const RUNS = 4;

/**
 * A policy that calls tool `t` forever, answering after a short, varied wait; each call reports
 * 2,000 input and 1,500 output tokens of model `m`: $0.01 at `PRICE`. Priced in advance, a call
 * holds only what it may cost, so the runs' calls overlap.
 */
function spending(seed: number) {
  let n = 0;
  const policy = (async () => {
    n++;
    policy.calls++;
    await new Promise((resolve) => setTimeout(resolve, (seed * 7 + n * 3) % 5));
    return { tool: 't', usage: { inputTokens: 2_000, outputTokens: 1_500, model: 'm' } };
  }) as unknown as Policy & { calls: number };
  policy.calls = 0;
  return policy;
}

const tools = [{ name: 't', fn: async () => 'ok' }];
/** $2 and $4 per million tokens: 2,000 in and 1,500 out cost $0.01. */
const PRICE = { m: { inputUsdPerMTok: 2, outputUsdPerMTok: 4 } };
const micro = (usd: number) => Math.round(usd * 1e6);

for (const kind of kinds) {
  describe.skipIf(kind.skip !== null)(
    `group budgets under concurrent runs: ${kind.name}${kind.skip ? ` [skipped — ${kind.skip}]` : ''}`,
    () => {
      it(`${RUNS} runs of one group, each on its own connection, stop for the group and never overshoot it`, async () => {
        const connect = kind.storage();
        const admin = connect();
        await admin.setGroupBudget('team-1', { maxCostUsd: LIMIT_USD });
        const agents = Array.from(
          { length: RUNS },
          (_, i) =>
            new Agent({
              store: connect(),
              budgetGroup: 'team-1',
              runId: `run-${i}`,
              policy: spending(i),
              tools,
              price: PRICE,
              maxSteps: 1000,
            }),
        );
        const statuses = await Promise.all(agents.map((a) => a.start('spend')));
        expect(statuses).toEqual(Array(RUNS).fill('budget_exhausted'));
        for (const a of agents) expect(a.state.stoppedBy).toBe('group');
        const spend = await admin.groupSpend('team-1');
        const byRuns = agents.reduce((sum, a) => sum + micro(a.state.usage.costUsd), 0);
        // Every call the runs made was charged to the group once, exactly.
        expect(micro(spend.costUsd)).toBe(byRuns);
        expect(spend.tokens).toBe(
          agents.reduce((sum, a) => sum + a.state.usage.inputTokens + a.state.usage.outputTokens, 0),
        );
        // Each call held what it may cost before it was made, and was charged at most that: never
        // over the limit; and the runs stopped only when the next call could not fit what was left.
        expect(micro(spend.costUsd)).toBeLessThanOrEqual(micro(LIMIT_USD));
        expect(micro(spend.costUsd)).toBeGreaterThan(micro(LIMIT_USD - CALL_USD));
        for (const a of agents) expect(a.state.error).toMatch(/^the group "team-1" has spent /);
        // They did work at once: more than one run made calls.
        expect(agents.filter((a) => a.state.steps > 0).length).toBeGreaterThan(1);
        for (let i = 0; i < RUNS; i++) expect(await admin.groupOf(`run-${i}`)).toBe('team-1');

        // Loaded again through another connection, a run stays in its group: raising the group's
        // budget lets it go on, up to the new limit, and no further.
        await admin.setGroupBudget('team-1', { maxCostUsd: 0.2 });
        const policy = spending(9);
        const loaded = await Agent.load(connect(), 'run-0', { policy, tools, price: PRICE });
        expect(await loaded.run()).toBe('budget_exhausted');
        expect(loaded.state.stoppedBy).toBe('group');
        const after = micro((await admin.groupSpend('team-1')).costUsd);
        expect(after).toBeLessThanOrEqual(micro(0.2));
        expect(after).toBeGreaterThan(micro(0.2 - CALL_USD));
        expect(policy.calls).toBe(Math.ceil((after - micro(spend.costUsd)) / micro(CALL_USD)));
      }, 60_000);
    },
  );
}

describe('group budgets on a database made before them', () => {
  it('sqlite: a version 5 database upgrades (migration 6); its runs are in no group and can join one', async () => {
    const { default: Database } = await import('better-sqlite3');
    const sqlite = await import('../../src/stores/sqlite/migrations.js');
    const path = join(dir, 'old.db');
    const old = new Database(path);
    expect(sqlite.migrate(old, sqlite.MIGRATIONS.slice(0, 5))).toBe(5);
    old.close();
    const store = SqliteStore.open(path);
    opened.push(store);
    expect(store.settings.schemaVersion).toBe(sqlite.SCHEMA_VERSION);
    expect(sqlite.MIGRATIONS[5]).toMatchObject({ version: 6, name: 'group budgets' });
    expect(await store.groupOf('old')).toBeNull();
    await store.joinGroup('old', 'acme');
    expect((await store.spendGroup('acme', { tokens: 1, costMicroUsd: 2 })).costUsd).toBe(0.000002);
  });

  it.skipIf(target.url === null)('postgres: a version 5 schema upgrades (migration 6) and keeps its runs', async () => {
    const { schema, client: old } = await oldSchema(target.url ?? '', 'group_upgrade', 5, schemas);
    try {
      await old.query(
        `INSERT INTO "${schema}".runs (run_id, version, status, head, entry_count, pending, updated_at)
         VALUES ('old', 1, 'done', '{}', 0, NULL, '2026-01-01T00:00:00.000Z')`,
      );
    } finally {
      await old.end();
    }
    const store = new PostgresStore(target.url ?? '', { schema, maxConnections: 2 });
    opened.push(store);
    expect(await store.migrate()).toBe(SCHEMA_VERSION);
    expect((await store.load('old'))?.status).toBe('done');
    expect(await store.groupOf('old')).toBeNull();
    await store.joinGroup('old', 'acme');
    expect(await store.groupOf('old')).toBe('acme');
  });
});
