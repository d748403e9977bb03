/**
 * Group budgets (an optional capability: store/groups.ts): what a group has spent, added
 * atomically under concurrency (in one process and across processes), counted per UTC day on the
 * store's clock, checked against the group's budget; hostile group ids refused; a run's group
 * kept for life.
 */
import assert from 'node:assert/strict';
import { LeaseLostError } from '../../errors.js';
import type { CheckpointStore, GroupBudgetStore } from '../../store/contract.js';
import { optionsError, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase, GroupSpendRaceReport, WriterProcess } from './types.js';

/** The store's group methods; a store under these cases must have all seven. */
function groups(store: CheckpointStore): GroupBudgetStore {
  const methods = ['setGroupBudget', 'groupSpend', 'spendGroup', 'holdGroup', 'settleGroup', 'joinGroup', 'groupOf'];
  for (const m of methods as (keyof GroupBudgetStore)[]) {
    assert.equal(typeof store[m], 'function', `a store with group budgets has ${m}`);
  }
  return store as CheckpointStore & GroupBudgetStore;
}

/** Distinct totals 1…n times `each`: every spend saw the one before it, none was lost or doubled. */
function assertSerial(totals: number[], each: number): void {
  assert.deepEqual(
    [...totals].sort((a, b) => a - b),
    Array.from({ length: totals.length }, (_, i) => (i + 1) * each),
    'each spend returns a total of its own: they were added one after another',
  );
}

const DAY = 86_400_000;

/** A hold request of `tokens` (and `cost` micro-dollars), the least being `min` of each. */
const ask = (runId: string, token: number, tokens: number, cost: number | null = 0, min = 1) => ({
  runId,
  token,
  tokens,
  costMicroUsd: cost,
  minTokens: Math.min(min, tokens),
  minCostMicroUsd: cost === null ? min : Math.min(min, cost),
});

export const groupCases: ConformanceCase[] = [
  {
    name: 'group holds: a hold takes room from the others until it is settled; the spending alone decides whether the group is spent',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxTokens: 1_000, maxCostUsd: 1 });
        const a = await store.claim('a', { owner: 'worker-a', leaseMs: 60_000 });
        const b = await store.claim('b', { owner: 'worker-b', leaseMs: 60_000 });
        const first = await g.holdGroup('acme', ask('a', a.token, 600, 600_000));
        assert.deepEqual(first.held, { tokens: 600, costMicroUsd: 600_000 });
        assert.equal(first.exhausted, null);
        assert.deepEqual([first.spend.tokens, first.spend.costUsd], [0, 0]); // a hold is not spending
        // b gets what is left beside a's hold, up to what it asks…
        const second = await g.holdGroup('acme', ask('b', b.token, 600, 300_000));
        assert.deepEqual(second.held, { tokens: 400, costMicroUsd: 300_000 });
        // …and nothing while the holds fill the room, though the group is not spent.
        const full = await g.holdGroup('acme', ask('b', b.token, 600, 300_000, 500));
        assert.deepEqual([full.held, full.exhausted], [null, null]);
        // a settles lower than it held: the room comes back, less what a spent.
        const settled = await g.settleGroup('acme', {
          runId: 'a',
          token: a.token,
          charge: { tokens: 250, costMicroUsd: 250_000 },
        });
        assert.deepEqual([settled.tokens, settled.costUsd], [250, 0.25]);
        const after = await g.holdGroup('acme', ask('b', b.token, 800, 800_000, 500));
        assert.deepEqual(after.held, { tokens: 750, costMicroUsd: 750_000 });
        // A minimum the spending alone cannot give: the group is spent under that limit (cost first).
        const spent = await g.holdGroup('acme', ask('a', a.token, 800, 800_000, 760_000));
        assert.deepEqual([spent.held, spent.exhausted], [null, 'cost']);
        const tokens = await g.holdGroup('acme', ask('a', a.token, 800, 1, 751));
        assert.deepEqual([tokens.held, tokens.exhausted], [null, 'tokens']);
      }),
  },
  {
    name: 'group holds: a hold whose lease is no longer live — lapsed, released or claimed by another — is charged as spent at the next hold, and its late settlement adds nothing; a settlement under the live lease adds what was spent',
    requires: ['groupBudgets', 'clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxTokens: 1_000 });
        const hold = async (runId: string, token: number, tokens: number, min = 1) =>
          (await g.holdGroup('acme', ask(runId, token, tokens, 0, min))).held?.tokens ?? null;
        const spent = async () => (await g.groupSpend('acme')).tokens;
        const a = await store.claim('a', { owner: 'worker-a', leaseMs: 1_000 });
        const b = await store.claim('b', { owner: 'worker-b', leaseMs: 60_000 });
        assert.equal(await hold('a', a.token, 300), 300);
        assert.equal(await hold('b', b.token, 800, 701), null); // 700 left beside a's hold
        // A hold replaces the run's own earlier one (same lease): not counted against itself, not charged.
        assert.equal(await hold('a', a.token, 400), 400);
        clock.now += 1_000; // a's lease lapsed with its call in flight: the call may have been billed
        assert.equal(await spent(), 0);
        assert.equal(await hold('b', b.token, 100), 100);
        assert.equal(await spent(), 400, 'the lapsed hold is charged as spent by the next hold');
        const a2 = await store.claim('a', { owner: 'worker-c', leaseMs: 60_000 });
        assert.equal(await hold('a', a2.token, 600, 501), null); // 1000 - 400 spent - 100 held by b
        assert.equal(await hold('a', a2.token, 500), 500);
        // b settles with a token that is not its lease's: b's hold stays, and nothing is added.
        await g.settleGroup('acme', { runId: 'b', token: b.token + 7, charge: { tokens: 5, costMicroUsd: 0 } });
        assert.equal(await spent(), 400);
        assert.equal(await hold('a', a2.token, 600, 501), null); // 1000 - 400 - 100 = 500
        assert.equal(await store.release(b), true); // released with b's hold unsettled: charged too
        assert.equal(await hold('a', a2.token, 600), 500);
        assert.equal(await spent(), 500);
        // a's first owner wakes and settles its call: its hold was charged (at least what it may be charged).
        await g.settleGroup('acme', { runId: 'a', token: a.token, charge: { tokens: 50, costMicroUsd: 0 } });
        assert.equal(await spent(), 500);
        // Settled under the live lease: the hold is dropped and what the call spent is added; without a
        // hold (none was asked), the charge is added all the same.
        await g.settleGroup('acme', { runId: 'a', token: a2.token, charge: { tokens: 120, costMicroUsd: 0 } });
        assert.equal(await spent(), 620);
        await g.settleGroup('acme', { runId: 'a', token: a2.token, charge: { tokens: 7, costMicroUsd: 0 } });
        assert.equal(await spent(), 627);
        assert.equal(await hold('a', a2.token, 400), 373);
        // A group without limits holds what is asked (and a null cost is no cost).
        const free = await g.holdGroup('other', ask('a', a2.token, 1_000_000, null));
        assert.deepEqual(free.held, { tokens: 1_000_000, costMicroUsd: 0 });
      }),
  },
  {
    name: 'group holds: a hold is asked under the run’s live lease — an owner that lost its run is refused (LeaseLostError), and the new owner’s hold still counts',
    requires: ['groupBudgets', 'clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxTokens: 100 });
        const refused = async (request: ReturnType<typeof ask>, current: number | null) => {
          await assert.rejects(g.holdGroup('acme', request), (error: unknown) => {
            assert.ok(error instanceof LeaseLostError, `a LeaseLostError, got ${String(error)}`);
            assert.equal(error.token, request.token);
            assert.equal(error.currentToken, current);
            return true;
          });
        };
        // Worker A holds for run r1, then is paused past its lease; B takes r1 over and holds.
        const a = await store.claim('r1', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal((await g.holdGroup('acme', ask('r1', a.token, 60))).held?.tokens, 60);
        clock.now += 1_000;
        await refused(ask('r1', a.token, 60), a.token); // lapsed, not yet taken over
        const b = await store.claim('r1', { owner: 'worker-b', leaseMs: 60_000 });
        // A's hold, whose lease is lost, is charged as spent (60): B holds what is left.
        assert.equal((await g.holdGroup('acme', ask('r1', b.token, 60))).held?.tokens, 40);
        const c = await store.claim('r2', { owner: 'worker-c', leaseMs: 60_000 });
        assert.equal((await g.holdGroup('acme', ask('r2', c.token, 60, 0, 41))).held, null);
        // A wakes and asks with its old token: refused, and B's hold still keeps C out.
        await refused(ask('r1', a.token, 60), b.token);
        assert.equal((await g.holdGroup('acme', ask('r2', c.token, 60, 0, 41))).held, null);
        // A run without a lease record, and a released one, hold nothing either.
        await refused(ask('r3', 1, 10), null);
        assert.equal(await store.release(c), true);
        await refused(ask('r2', c.token, 10), c.token);
        assert.equal((await g.holdGroup('acme', ask('r1', b.token, 40))).held?.tokens, 40);
      }),
  },
  {
    name: 'group holds: a null cost asks for all the room under the cost limit; concurrent holds never hold more than the limit',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxCostUsd: 0.01, maxTokens: 1_000 });
        await g.spendGroup('acme', { tokens: 0, costMicroUsd: 4_000 });
        const a = await store.claim('a', { owner: 'worker-a', leaseMs: 60_000 });
        const all = await g.holdGroup('acme', ask('a', a.token, 10, null));
        assert.deepEqual(all.held, { tokens: 10, costMicroUsd: 6_000 });
        await g.settleGroup('acme', { runId: 'a', token: a.token, charge: { tokens: 10, costMicroUsd: 1_000 } });
        // Twenty runs ask for 100 tokens each, at once: what is held never passes the 990 left.
        const leases = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.claim(`r${i}`, { owner: `w${i}`, leaseMs: 60_000 })),
        );
        const results = await Promise.all(leases.map((l) => g.holdGroup('acme', ask(l.runId, l.token, 100, 100, 100))));
        const held = results.reduce((sum, r) => sum + (r.held?.tokens ?? 0), 0);
        assert.equal(held, 900);
        assert.equal(results.filter((r) => r.held !== null).length, 9);
        assert.ok(results.every((r) => r.held !== null || r.exhausted === null));
      }),
  },
  {
    name: 'group holds: a malformed request or settlement is an OptionsError naming what is wrong',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        const bad: [unknown, RegExp][] = [
          [null, /the request must be an object/],
          [{ ...ask('a', 1, 10), tokens: -1 }, /tokens must be a whole number/],
          [{ ...ask('a', 1, 10), minTokens: 11 }, /minTokens must be a whole number from 0 to 10/],
          [{ ...ask('a', 1, 10), costMicroUsd: 0.5 }, /costMicroUsd must be a whole number/],
          [{ ...ask('a', 1, 10), extra: 1 }, /extra/],
        ];
        for (const [request, pattern] of bad) {
          await assert.rejects(g.holdGroup('acme', request as never), optionsError(pattern));
        }
        await assert.rejects(
          g.settleGroup('acme', { runId: 'a', token: 1, charge: { tokens: -5, costMicroUsd: 0 } }),
          optionsError(/tokens/),
        );
        await assert.rejects(g.holdGroup('bad group!', ask('a', 1, 10)), optionsError(/group id/));
      }),
  },
  {
    name: 'group budgets: a group never charged has spent 0 under the default budget; set, replace and remove a budget',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        const none = await g.groupSpend('acme');
        assert.equal(none.group, 'acme');
        assert.match(none.window, /^\d{4}-\d{2}-\d{2}$/);
        assert.deepEqual(
          { tokens: none.tokens, costUsd: none.costUsd, exhausted: none.exhausted },
          { tokens: 0, costUsd: 0, exhausted: null },
        );
        assert.deepEqual(none.budget, { maxCostUsd: null, maxTokens: null, period: 'day' });
        await g.setGroupBudget('acme', { maxCostUsd: 2.5 });
        assert.deepEqual((await g.groupSpend('acme')).budget, { maxCostUsd: 2.5, maxTokens: null, period: 'day' });
        await g.setGroupBudget('acme', { maxTokens: 10, period: 'total' });
        const total = await g.groupSpend('acme');
        assert.deepEqual(total.budget, { maxCostUsd: null, maxTokens: 10, period: 'total' });
        assert.equal(total.window, 'total');
        await g.setGroupBudget('acme', null);
        assert.deepEqual((await g.groupSpend('acme')).budget, { maxCostUsd: null, maxTokens: null, period: 'day' });
        // Another group is untouched.
        assert.deepEqual((await g.groupSpend('other')).budget, { maxCostUsd: null, maxTokens: null, period: 'day' });
      }),
  },
  {
    name: 'group budgets: spendGroup adds whole micro-dollars and tokens, exhausted at or over a limit, cost first',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxCostUsd: 0.3, maxTokens: 1000 });
        // 0.1 + 0.2 is exactly 0.3 here: micro-dollars are added as integers.
        const a = await g.spendGroup('acme', { tokens: 100, costMicroUsd: 100_000 });
        assert.deepEqual([a.tokens, a.costUsd, a.exhausted], [100, 0.1, null]);
        const b = await g.spendGroup('acme', { tokens: 100, costMicroUsd: 199_999 });
        assert.deepEqual([b.tokens, b.costUsd, b.exhausted], [200, 0.299999, null]);
        const c = await g.spendGroup('acme', { tokens: 900, costMicroUsd: 1 });
        assert.deepEqual([c.tokens, c.costUsd, c.exhausted], [1100, 0.3, 'cost']);
        assert.deepEqual(await g.groupSpend('acme'), c);
        // Raising the cost limit shows the tokens limit.
        await g.setGroupBudget('acme', { maxCostUsd: 1, maxTokens: 1000 });
        assert.equal((await g.groupSpend('acme')).exhausted, 'tokens');
        await g.setGroupBudget('acme', { maxCostUsd: 1, maxTokens: null });
        assert.equal((await g.groupSpend('acme')).exhausted, null);
        // A zero charge changes nothing; a charge of a group without a budget is still counted.
        assert.equal((await g.spendGroup('acme', { tokens: 0, costMicroUsd: 0 })).costUsd, 0.3);
        assert.equal((await g.spendGroup('free', { tokens: 5, costMicroUsd: 7 })).costUsd, 0.000007);
      }),
  },
  {
    name: 'group budgets: a cost that could not be known fills the cost limit (fail closed); without one it adds nothing',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxCostUsd: 5 });
        await g.spendGroup('acme', { tokens: 1, costMicroUsd: 1_000_000 });
        const unknown = await g.spendGroup('acme', { tokens: 2, costMicroUsd: 0, costUnknown: true });
        assert.deepEqual([unknown.tokens, unknown.costUsd, unknown.exhausted], [3, 5, 'cost']);
        // First of the day too (no row yet), and never lowering what is spent.
        await g.setGroupBudget('fresh', { maxCostUsd: 0.5 });
        assert.equal((await g.spendGroup('fresh', { tokens: 0, costMicroUsd: 0, costUnknown: true })).costUsd, 0.5);
        assert.equal(
          (await g.spendGroup('fresh', { tokens: 0, costMicroUsd: 700_000, costUnknown: true })).costUsd,
          1.2,
        );
        const open = await g.spendGroup('open', { tokens: 4, costMicroUsd: 0, costUnknown: true });
        assert.deepEqual([open.tokens, open.costUsd, open.exhausted], [4, 0, null]);
      }),
  },
  {
    name: 'group budgets: a daily budget starts again at 00:00 UTC on the store’s clock; a total one never does',
    requires: ['groupBudgets', 'clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const g = groups(store);
        clock.now = Date.parse('2026-05-06T23:59:59.999Z');
        await g.setGroupBudget('daily', { maxCostUsd: 1 });
        await g.setGroupBudget('ever', { maxCostUsd: 1, period: 'total' });
        for (const group of ['daily', 'ever']) await g.spendGroup(group, { tokens: 10, costMicroUsd: 1_000_000 });
        assert.equal((await g.groupSpend('daily')).exhausted, 'cost');
        assert.equal((await g.groupSpend('daily')).window, '2026-05-06');
        clock.now += 1; // midnight UTC
        const next = await g.groupSpend('daily');
        assert.deepEqual([next.window, next.tokens, next.costUsd, next.exhausted], ['2026-05-07', 0, 0, null]);
        assert.equal((await g.spendGroup('daily', { tokens: 1, costMicroUsd: 1 })).costUsd, 0.000001);
        const ever = await g.groupSpend('ever');
        assert.deepEqual([ever.window, ever.costUsd, ever.exhausted], ['total', 1, 'cost']);
        clock.now += 30 * DAY;
        assert.equal((await g.groupSpend('ever')).exhausted, 'cost');
        // Switching a group to daily counts today's window (yesterday's spending stays in its own).
        await g.setGroupBudget('ever', { maxCostUsd: 1 });
        assert.deepEqual([(await g.groupSpend('ever')).costUsd, (await g.groupSpend('ever')).exhausted], [0, null]);
      }),
  },
  {
    name: 'group budgets: 50 concurrent spends of one group add up exactly, each seeing the one before',
    requires: ['groupBudgets'],
    timeoutMs: 30_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.setGroupBudget('acme', { maxCostUsd: 0.00005 });
        const spent = await Promise.all(
          Array.from({ length: 50 }, () => g.spendGroup('acme', { tokens: 3, costMicroUsd: 1 })),
        );
        assertSerial(
          spent.map((s) => s.tokens),
          3,
        );
        const end = await g.groupSpend('acme');
        assert.deepEqual([end.tokens, end.costUsd, end.exhausted], [150, 0.00005, 'cost']);
        // Exactly the spend that reached the limit, and those after it, saw the group exhausted.
        assert.equal(spent.filter((s) => s.exhausted === 'cost').length, 1);
      }),
  },
  {
    name: 'group budgets: spends from two other processes and this one, at once, add up exactly',
    requires: ['groupBudgets', 'crossProcess'],
    timeoutMs: 60_000,
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        await g.groupSpend('acme'); // the schema exists before the children open it
        const writers: WriterProcess[] = ['A', 'B'].map((writer) =>
          ctx.spawnWriter!(store, { kind: 'groupSpends', writer, group: 'acme', spends: 25, costMicroUsd: 7 }),
        );
        let reports: GroupSpendRaceReport[];
        try {
          await Promise.all(writers.map((w) => w.ready));
          for (const w of writers) w.go();
          const mine = Promise.all(
            Array.from({ length: 25 }, () => g.spendGroup('acme', { tokens: 1, costMicroUsd: 7 })),
          );
          const [theirs, own] = await Promise.all([Promise.all(writers.map((w) => w.result)), mine]);
          reports = [
            ...(theirs as GroupSpendRaceReport[]),
            { writer: 'parent', totals: own.map((s) => s.costUsd * 1e6) },
          ];
        } finally {
          for (const w of writers) w.kill();
        }
        assertSerial(
          reports.flatMap((r) => r.totals.map((t) => Math.round(t))),
          7,
        );
        const end = await g.groupSpend('acme');
        assert.deepEqual([end.tokens, end.costUsd], [75, 0.000525]);
      }),
  },
  {
    name: 'group budgets: hostile group ids, budgets and charges are OptionsErrors, and nothing is stored',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        const badIds: unknown[] = [
          '',
          ' acme',
          '-acme',
          'a/b',
          'a b',
          'é',
          'a\u0000',
          'x'.repeat(129),
          42,
          null,
          '../etc',
        ];
        for (const id of badIds) {
          await assert.rejects(g.groupSpend(id as string), optionsError(/groupSpend: a group id must be/));
          await assert.rejects(g.spendGroup(id as string, { tokens: 1, costMicroUsd: 1 }), optionsError(/group id/));
          await assert.rejects(g.setGroupBudget(id as string, { maxCostUsd: 1 }), optionsError(/group id/));
          await assert.rejects(g.joinGroup('run', id as string), optionsError(/group id/));
        }
        assert.equal((await g.groupSpend('x'.repeat(128))).tokens, 0);
        assert.equal((await g.groupSpend('Acme.EU_1:user@example.com-2')).tokens, 0);
        const badBudgets: unknown[] = [
          { maxCostUsd: 0 },
          { maxCostUsd: -1 },
          { maxCostUsd: Number.NaN },
          { maxCostUsd: 2e9 },
          { maxTokens: 1.5 },
          { maxTokens: -1 },
          { period: 'week' },
          { maxCost: 1 },
          'a lot',
          [],
        ];
        for (const budget of badBudgets) {
          await assert.rejects(g.setGroupBudget('acme', budget as never), optionsError(/setGroupBudget: /));
        }
        const badCharges: unknown[] = [
          { tokens: -1, costMicroUsd: 0 },
          { tokens: 1, costMicroUsd: 0.5 },
          { tokens: 1, costMicroUsd: Number.POSITIVE_INFINITY },
          { tokens: 1 },
          { tokens: 1, costMicroUsd: 1, costUnknown: 'yes' },
          { tokens: 1, costMicroUsd: 1, extra: 1 },
          null,
        ];
        for (const charge of badCharges) {
          await assert.rejects(g.spendGroup('acme', charge as never), optionsError(/spendGroup: /));
        }
        const after = await g.groupSpend('acme');
        assert.deepEqual([after.tokens, after.costUsd, after.budget.maxCostUsd], [0, 0, null]);
      }),
  },
  {
    name: 'group budgets: a run joins one group for life, before it exists and past its delete',
    requires: ['groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const g = groups(store);
        assert.equal(await g.groupOf('run-1'), null);
        await g.joinGroup('run-1', 'acme');
        await g.joinGroup('run-1', 'acme'); // again: nothing changes
        assert.equal(await g.groupOf('run-1'), 'acme');
        await assert.rejects(g.joinGroup('run-1', 'other'), optionsError(/run "run-1" is in group "acme"/));
        assert.equal(await g.groupOf('run-1'), 'acme');
        await store.save('run-1', write(), 0);
        assert.equal(await store.delete('run-1'), true);
        assert.equal(await g.groupOf('run-1'), 'acme', 'a deleted run id keeps its group');
        assert.equal(await g.groupOf('run-2'), null);
        await assert.rejects(g.groupOf('a\u0000'), optionsError(/groupOf: run id/));
      }),
  },
];
