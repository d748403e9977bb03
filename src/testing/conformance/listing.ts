/** Listing: all runs, by status (the approval inbox), in update order, with a limit. */
import assert from 'node:assert/strict';
import type { RunSummary } from '../../store/contract.js';
import { compareRuns } from '../../store/order.js';
import {
  assertIsoTime,
  entries,
  nextMillisecond,
  optionsError,
  pendingCall,
  saveAll,
  withStore,
  write,
} from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** Oldest update first; runs updated in the same millisecond by run id, in code-point order. */
function assertOrdered(runs: readonly RunSummary[]): void {
  for (let i = 1; i < runs.length; i++) {
    const [a, b] = [runs[i - 1] as RunSummary, runs[i] as RunSummary];
    assert.ok(
      compareRuns(a, b) < 0,
      `list order: ${a.runId}@${a.updatedAt} must come before ${b.runId}@${b.updatedAt}`,
    );
  }
}

/**
 * Run ids whose code-point order (the stores' order: SQLite BINARY, Postgres COLLATE "C") is
 * neither `localeCompare`'s ('a' before 'B', 'é' before 'z') nor JavaScript `<`'s (which puts
 * the astral '😀', U+1F600, before 'ｚ', U+FF5A). Listed here in the order `list` must give.
 */
const TIE_ORDER = ['B', 'Z', 'a', 'b', 'z', 'é', 'ｚ', '😀'];

export const listingCases: ConformanceCase[] = [
  {
    name: 'summary: one run as list gives it (no head, no entries), null for none; a bad run id is an OptionsError',
    requires: ['summary'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.equal(typeof store.summary, 'function', 'the context says the store has summary(runId)');
        const summary = (runId: string) => (store.summary as NonNullable<typeof store.summary>).call(store, runId);
        assert.equal(await summary('a'), null);
        await saveAll(store, 'a', [
          { append: entries(2) },
          { status: 'awaiting_approval', append: entries(1, 2), pendingCalls: [pendingCall('a', 2)] },
        ]);
        await saveAll(store, 'b', [{ status: 'done', append: entries(1) }]);
        await saveAll(store, 'c', [{ status: 'cancelled' }]);
        const listed = await store.list();
        assert.equal(listed.length, 3);
        for (const run of listed) assert.deepEqual(await summary(run.runId), run, `summary of ${run.runId}`);
        const a = await summary('a');
        assert.ok(a && !('head' in a) && !('entries' in a), 'a summary holds no head and no entries');
        assert.equal(a.status, 'awaiting_approval');
        assert.equal(a.version, 2);
        // Its own copy: changing it changes nothing stored.
        a.pendingCalls.length = 0;
        assert.equal((await summary('a'))?.pendingCalls.length, 1);
        assert.equal(await summary('A'), null);
        assert.ok(await store.delete('b'));
        assert.equal(await summary('b'), null);
        for (const bad of [7, 'a\u0000', '\ud800']) {
          await assert.rejects(summary(bad as string), optionsError(/^summary: run id/));
        }
      }),
  },
  {
    name: 'list: every run as a summary (no head, no entries), oldest update first',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.deepEqual(await store.list(), []);
        await saveAll(store, 'b', [{ append: entries(2) }]);
        await saveAll(store, 'a', [{ append: entries(1) }, { status: 'done', append: entries(1, 1) }]);
        await saveAll(store, 'c', [{ status: 'failed' }]);
        const runs = await store.list();
        assert.deepEqual(runs.map((r) => r.runId).sort(), ['a', 'b', 'c']);
        for (const run of runs) {
          for (const key of ['pending', 'pendingCalls', 'runId', 'status', 'updatedAt', 'version']) {
            assert.ok(key in run, `has ${key}`);
          }
          assert.ok(!('head' in run) && !('entries' in run), 'a summary holds no head and no entries');
          assertIsoTime(run.updatedAt);
        }
        assert.deepEqual(
          runs
            .map(({ runId, version, status }) => ({ runId, version, status }))
            .sort((x, y) => (x.runId < y.runId ? -1 : 1)),
          [
            { runId: 'a', version: 2, status: 'done' },
            { runId: 'b', version: 1, status: 'running' },
            { runId: 'c', version: 1, status: 'failed' },
          ],
        );
        assertOrdered(runs);

        // Saving a run again moves it to the end.
        await nextMillisecond(Date.parse(runs.at(-1)?.updatedAt ?? ''));
        await store.save('b', write({ from: 2, status: 'done' }), 1);
        const after = await store.list();
        assertOrdered(after);
        assert.equal(after.at(-1)?.runId, 'b');
      }),
  },
  {
    name: 'list by status: the approval inbox holds exactly the runs awaiting approval, with their pending calls',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const p1 = pendingCall('r1', 1);
        const p2 = pendingCall('r2', 4, { to: 'finance', amount: 120.5, cc: ['a', 'b'], urgent: true, note: null });
        const p3 = pendingCall('r3', 2);
        await saveAll(store, 'r1', [{ status: 'awaiting_approval', pendingCalls: [p1], append: entries(2) }]);
        await saveAll(store, 'r2', [{ status: 'running', append: entries(1) }]);
        await saveAll(store, 'r3', [{ status: 'awaiting_approval', pendingCalls: [p3] }]);
        await saveAll(store, 'r4', [{ status: 'done' }]);
        await store.save(
          'r2',
          write({ status: 'awaiting_approval', pendingCalls: [p2], from: 1, append: entries(1, 1) }),
          1,
        );
        await store.save('r1', write({ status: 'running', from: 2, append: entries(1, 2) }), 1);

        const inbox = await store.list({ status: 'awaiting_approval' });
        assertOrdered(inbox);
        assert.deepEqual(
          inbox
            .map(({ runId, version, status, pending, pendingCalls }) => ({
              runId,
              version,
              status,
              pending,
              pendingCalls,
            }))
            .sort((x, y) => (x.runId < y.runId ? -1 : 1)),
          [
            { runId: 'r2', version: 2, status: 'awaiting_approval', pending: p2, pendingCalls: [p2] },
            { runId: 'r3', version: 1, status: 'awaiting_approval', pending: p3, pendingCalls: [p3] },
          ],
        );
        assert.deepEqual(
          (await store.list({ status: 'running' })).map((r) => [r.runId, r.pending, r.pendingCalls]),
          [['r1', null, []]],
        );
        assert.deepEqual(
          (await store.list({ status: 'done' })).map((r) => r.runId),
          ['r4'],
        );
        assert.deepEqual(await store.list({ status: 'failed' }), []);
      }),
  },
  {
    name: 'list with a limit returns the first runs of the same order',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        for (const id of ['e', 'c', 'a', 'd', 'b']) {
          await saveAll(store, id, [{ status: id < 'c' ? 'done' : 'awaiting_approval' }]);
        }
        const all = await store.list();
        assert.equal(all.length, 5);
        assert.deepEqual(await store.list({ limit: 2 }), all.slice(0, 2));
        assert.deepEqual(await store.list({ limit: 5 }), all);
        assert.deepEqual(await store.list({ limit: 50 }), all);
        assert.deepEqual(await store.list({ limit: 0 }), []);
        const inbox = await store.list({ status: 'awaiting_approval' });
        assert.equal(inbox.length, 3);
        assert.deepEqual(await store.list({ status: 'awaiting_approval', limit: 1 }), inbox.slice(0, 1));
      }),
  },
  {
    name: 'list: runs saved in the same millisecond come in code-point order of run id, in every listing',
    requires: ['clock'],
    run: async (ctx) => {
      let now = Date.parse('2026-03-04T05:06:07.008Z');
      const store = await ctx.createWithClock!(() => now);
      try {
        // Saved in an order that is none of the orders being told apart.
        for (const id of ['ｚ', 'b', '😀', 'Z', 'é', 'a', 'z', 'B']) {
          const awaiting = TIE_ORDER.indexOf(id) % 2 === 0;
          await saveAll(store, id, [{ status: awaiting ? 'awaiting_approval' : 'done' }]);
        }
        now += 1;
        await saveAll(store, '0-later', [{ status: 'awaiting_approval' }]);
        const all = await store.list();
        assert.equal(all[0]?.updatedAt, '2026-03-04T05:06:07.008Z', 'updatedAt comes from the injected clock');
        assert.deepEqual(
          all.map((r) => r.runId),
          [...TIE_ORDER, '0-later'],
        );
        assert.deepEqual(
          (await store.list({ status: 'awaiting_approval' })).map((r) => r.runId),
          [...TIE_ORDER.filter((_, i) => i % 2 === 0), '0-later'],
        );
        assert.deepEqual(
          (await store.list({ limit: 3 })).map((r) => r.runId),
          TIE_ORDER.slice(0, 3),
        );
      } finally {
        await store.close();
      }
    },
  },
  {
    name: 'list rejects a limit that is not a whole number ≥ 0 (OptionsError)',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'a', [{ status: 'done' }]);
        for (const limit of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          await assert.rejects(store.list({ limit }), (e: Error) => e.name === 'OptionsError', `limit ${limit}`);
        }
      }),
  },
  {
    name: 'list with a signal: an aborted one rejects with its reason; one that is not a signal is an OptionsError; a live one changes nothing',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'a', [{ status: 'done' }]);
        const reason = new Error('the page was closed');
        await assert.rejects(store.list({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
        await assert.rejects(store.list({ signal: 'soon' } as never), (e: Error) => e.name === 'OptionsError');
        const live = new AbortController();
        assert.deepEqual(
          (await store.list({ status: 'done', signal: live.signal })).map((r) => r.runId),
          (await store.list({ status: 'done' })).map((r) => r.runId),
        );
      }),
  },
];
