/** Several pending calls per run: kept in call order, the first derived as `pending`, and the expiry filter of `list`. */
import assert from 'node:assert/strict';
import { entries, iso, optionsError, saveAll, stepCall, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

export const pendingCases: ConformanceCase[] = [
  {
    name: 'pendingCalls round trip: several calls in call order, fields a store does not know kept; pending is the first; [] and null when none',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const calls = [stepCall('r', 2, 1), stepCall('r', 2, 2, '2026-01-01T00:00:00.000Z'), stepCall('r', 2, 3)];
        await store.save('r', write({ status: 'awaiting_approval', append: entries(2), pendingCalls: calls }), 0);
        const run = await store.load('r');
        assert.deepEqual(run?.pendingCalls, calls);
        assert.deepEqual(run?.pending, calls[0]);
        const [summary] = await store.list({ status: 'awaiting_approval' });
        assert.deepEqual(summary?.pendingCalls, calls);
        assert.deepEqual(summary?.pending, calls[0]);
        assert.equal((run?.pendingCalls[1] as { index?: number } | undefined)?.index, 2);

        // A later save replaces the list: here the first call was decided, two remain.
        await store.save('r', write({ status: 'awaiting_approval', from: 2, pendingCalls: calls.slice(1) }), 1);
        const after = await store.load('r');
        assert.deepEqual(after?.pendingCalls, calls.slice(1));
        assert.deepEqual(after?.pending, calls[1]);

        await store.save('r', write({ status: 'running', from: 2, pendingCalls: [] }), 2);
        const none = await store.load('r');
        assert.deepEqual([none?.pendingCalls, none?.pending], [[], null]);
        assert.deepEqual(
          (await store.list()).map((r) => [r.pendingCalls, r.pending]),
          [[[], null]],
        );
      }),
  },
  {
    name: 'a write whose pendingCalls is not a list of calls with an ISO-8601 or null expiresAt is refused (OptionsError), nothing stored',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const refused = [
          [{ pendingCalls: null }, /write\.pendingCalls must be an array/],
          [{ pendingCalls: [null] }, /write\.pendingCalls\[0\] must be an object/],
          [{ pendingCalls: [stepCall('r', 1, 1), ['a']] }, /write\.pendingCalls\[1\] must be an object/],
          [
            { pendingCalls: [{ ...stepCall('r', 1, 1), expiresAt: 'tomorrow' }] },
            /pendingCalls\[0\]\.expiresAt must be null or an ISO-8601 time/,
          ],
          [{ pendingCalls: [{ ...stepCall('r', 1, 1), expiresAt: undefined }] }, /pendingCalls\[0\]\.expiresAt/],
        ] as const;
        for (const [over, pattern] of refused) {
          await assert.rejects(store.save('r', write(over as never), 0), optionsError(pattern));
        }
        assert.equal(await store.load('r'), null);
      }),
  },
  {
    name: 'list({ expired }): true lists runs with a pending call whose expiresAt is at or before now; false the others (no calls, no expiry, later expiry); with status and limit, in list order',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const awaiting = (runId: string, ...expiries: (number | null)[]) =>
          saveAll(store, runId, [
            {
              status: 'awaiting_approval',
              pendingCalls: expiries.map((at, i) => stepCall(runId, 1, i + 1, at === null ? null : iso(at))),
            },
          ]);
        await awaiting('a', t + 1_000, t - 1); // one of two expired
        await awaiting('b', t); // expires exactly now: expired
        await awaiting('c', t + 1); // a millisecond to go
        await awaiting('d', null); // never expires
        await awaiting('f', null, t - 5_000);
        await saveAll(store, 'e', [{ status: 'running' }]); // no pending call
        const ids = async (options: Parameters<typeof store.list>[0]) =>
          (await store.list(options)).map((r) => r.runId);

        assert.deepEqual(await ids({ expired: true }), ['a', 'b', 'f']);
        assert.deepEqual(await ids({ expired: false }), ['c', 'd', 'e']);
        assert.deepEqual(await ids({ status: 'awaiting_approval', expired: false }), ['c', 'd']);
        assert.deepEqual(await ids({ status: 'running', expired: true }), []);
        assert.deepEqual(await ids({ expired: true, limit: 2 }), ['a', 'b']);
        const [a] = await store.list({ expired: true, limit: 1 });
        assert.equal(a?.pendingCalls.length, 2, 'the summary holds every pending call, expired or not');

        clock.now += 1; // now c has expired too, by the store's clock
        assert.deepEqual(await ids({ expired: true }), ['a', 'b', 'c', 'f']);
        // A save that leaves no pending call takes the run out of the expired ones.
        await store.save('a', write({ status: 'running', pendingCalls: [] }), 1);
        assert.deepEqual(await ids({ expired: true }), ['b', 'c', 'f']);
        assert.deepEqual(await ids({ expired: false }), ['d', 'e', 'a']);
        await assert.rejects(
          store.list({ expired: 'yes' } as never),
          optionsError(/^list: expired must be true or false/),
        );
      }),
  },
];
