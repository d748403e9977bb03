/** Round trip, versions, conflicts, deletes, close: what one writer sees. */
import assert from 'node:assert/strict';
import { assertRun, conflict, entries, pendingCall, saveAll, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

export const basicCases: ConformanceCase[] = [
  {
    name: 'load of an unknown run is null',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.equal(await store.load('never-saved'), null);
        await store.save('other', write(), 0);
        assert.equal(await store.load('never-saved'), null);
      }),
  },
  {
    name: 'round trip: head, entries, status and pending calls come back exactly',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const first = entries(3);
        assert.equal(await store.save('r', write({ head: '{"n":1}', append: first }), 0), 1);
        assertRun(await store.load('r'), {
          runId: 'r',
          version: 1,
          status: 'running',
          head: '{"n":1}',
          entries: first,
          pendingCalls: [],
          agent: null,
          decision: null,
        });

        const more = entries(2, 3);
        const pending = pendingCall('r', 2);
        await store.save(
          'r',
          write({ status: 'awaiting_approval', head: '{"n":2}', from: 3, append: more, pendingCalls: [pending] }),
          1,
        );
        const loaded = await store.load('r');
        assertRun(loaded, {
          runId: 'r',
          version: 2,
          status: 'awaiting_approval',
          head: '{"n":2}',
          entries: [...first, ...more],
          pendingCalls: [pending],
          agent: null,
          decision: null,
        });

        // What load returns is the caller's copy.
        loaded?.entries.push('{"mutated":true}');
        if (loaded?.pendingCalls[0]) loaded.pendingCalls[0].args.to = 'mutated';
        const again = await store.load('r');
        assert.equal(again?.entries.length, 5);
        assert.equal(again?.pending?.args.to, 'ops');
        assert.deepEqual(pending.args, { to: 'ops' });

        // A head-only save keeps the entries.
        await store.save('r', write({ status: 'done', head: '{"n":3}', from: 5 }), 2);
        assertRun(await store.load('r'), {
          runId: 'r',
          version: 3,
          status: 'done',
          head: '{"n":3}',
          entries: [...first, ...more],
          pendingCalls: [],
          agent: null,
          decision: null,
        });
      }),
  },
  {
    name: 'versions start at 1 and go up by one per save',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const versions: number[] = [];
        let from = 0;
        for (let v = 0; v < 5; v++) {
          versions.push(await store.save('r', write({ from, append: entries(v % 2) }), v));
          from += v % 2;
          assert.equal((await store.load('r'))?.version, v + 1);
        }
        assert.deepEqual(versions, [1, 2, 3, 4, 5]);
        assert.deepEqual(
          (await store.list()).map((r) => r.version),
          [5],
        );
      }),
  },
  {
    name: 'conflicts: a stale or future version, a wrong entry count, a second create: ConflictError, nothing changes',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await saveAll(store, 'r', [{ append: entries(2) }, { append: entries(2, 2), status: 'awaiting_approval' }]);
        const before = await store.load('r');
        const attempt = (expected: number, from: number) =>
          store.save('r', write({ status: 'done', head: '{"lost":true}', from, append: ['{"lost":true}'] }), expected);

        await assert.rejects(attempt(1, 4), conflict('r', 1, 2)); // stale
        await assert.rejects(attempt(3, 4), conflict('r', 3, 2)); // from the future
        await assert.rejects(attempt(0, 0), conflict('r', 0, 2)); // create, but it exists
        await assert.rejects(attempt(2, 3), conflict('r', 2, 2)); // right version, entries overlap
        await assert.rejects(attempt(2, 5), conflict('r', 2, 2)); // right version, entries missing
        await assert.rejects(
          store.save('ghost', write({ from: 0, append: entries(1) }), 1),
          conflict('ghost', 1, null), // updating a run that does not exist
        );
        assert.deepEqual(await store.load('r'), before);
        assert.equal(await store.load('ghost'), null);
        // The right version and count still work.
        assert.equal(await attempt(2, 4), 3);
      }),
  },
  {
    name: 'concurrent saves in one process: exactly one wins each version',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        for (const version of [0, 1, 2]) {
          const tries = Array.from({ length: 8 }, (_, w) =>
            store.save('r', write({ head: `{"w":${w}}`, from: version, append: entries(1, 0, `w${w}`) }), version),
          );
          const settled = await Promise.allSettled(tries);
          const won = settled.flatMap((s, w) => (s.status === 'fulfilled' ? [w] : []));
          assert.equal(won.length, 1, `one writer wins version ${version + 1}`);
          assert.equal((settled[won[0] as number] as PromiseFulfilledResult<number>).value, version + 1);
          for (const s of settled) if (s.status === 'rejected') conflict('r', version, version + 1)(s.reason);
          const run = await store.load('r');
          assert.equal(run?.head, `{"w":${won[0]}}`);
          assert.equal(run?.entries[version], entries(1, 0, `w${won[0]}`)[0]);
          assert.equal(run?.entries.length, version + 1);
        }
      }),
  },
  {
    name: 'deletes: with or without an expected version; a stale one conflicts; a deleted run can be made again',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.equal(await store.delete('nothing'), false);
        assert.equal(await store.delete('nothing', 3), false);
        await saveAll(store, 'a', [{ append: entries(3) }]);
        await saveAll(store, 'b', [{ append: entries(1) }, { append: entries(1, 1) }]);

        assert.equal(await store.delete('a'), true);
        assert.equal(await store.load('a'), null);
        assert.equal(await store.delete('a'), false);

        await assert.rejects(store.delete('b', 1), conflict('b', 1, 2));
        assert.equal((await store.load('b'))?.version, 2);
        assert.equal(await store.delete('b', 2), true);
        assert.deepEqual(await store.list(), []);

        // A new run under the old id starts from nothing: no old entries come back.
        await assert.rejects(store.save('a', write({ from: 3 }), 1), conflict('a', 1, null));
        const fresh = entries(2, 100);
        assert.equal(await store.save('a', write({ append: fresh }), 0), 1);
        assertRun(await store.load('a'), {
          runId: 'a',
          version: 1,
          status: 'running',
          head: write().head,
          entries: fresh,
          pendingCalls: [],
          agent: null,
          decision: null,
        });
      }),
  },
  {
    name: 'close resolves, and closing twice is harmless',
    run: async (ctx) => {
      const store = await ctx.create();
      await store.save('r', write(), 0);
      await store.close();
      await store.close();
    },
  },
  {
    name: 'a reopened store has every run as it was saved, and saving continues from its version',
    requires: ['reopen'],
    run: async (ctx) => {
      const store = await ctx.create();
      const pending = pendingCall('b', 1);
      await saveAll(store, 'a', [{ append: entries(2) }, { append: entries(1, 2), status: 'done' }]);
      await saveAll(store, 'b', [{ append: entries(1), status: 'awaiting_approval', pendingCalls: [pending] }]);
      const before = [await store.load('a'), await store.load('b'), await store.list()];
      await store.close();
      const again = await ctx.reopen!(store);
      try {
        assert.deepEqual([await again.load('a'), await again.load('b'), await again.list()], before);
        assert.equal(await again.save('b', write({ from: 1, append: entries(1, 1), status: 'done' }), 1), 2);
        assert.equal((await again.load('b'))?.entries.length, 2);
      } finally {
        await again.close();
      }
    },
  },
];
