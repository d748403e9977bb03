/**
 * Leases: claim, renew, release, lapse and takeover, on a clock the case moves by hand. One live
 * owner per run, and a fencing token that only grows.
 */
import assert from 'node:assert/strict';
import { busy, entries, iso, lost, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

export const leaseCases: ConformanceCase[] = [
  {
    name: 'claim: a run not saved yet can be claimed (token 1, expiresAt = now + leaseMs); load and list do not show it until its first save',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.deepEqual(lease, { runId: 'r', owner: 'worker-a', token: 1, expiresAt: iso(t + 1_000), leaseMs: 1_000 });
        assert.equal(await store.load('r'), null);
        assert.deepEqual(await store.list(), []);
        assert.equal(await store.save('r', write({ append: entries(1) }), 0, lease), 1);
        assert.equal((await store.load('r'))?.version, 1);
        assert.deepEqual(
          (await store.list()).map((r) => r.runId),
          ['r'],
        );
      }),
  },
  {
    name: 'a live lease keeps other owners out: their claim is a RunBusyError naming the holder and when its lease ends',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 5_000 }), busy('r', 'worker-a', t + 1_000));
        clock.now += 999;
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 5_000 }), busy('r', 'worker-a', t + 1_000));
        // The refused claims changed nothing: the holder still writes with its lease.
        assert.equal(await store.save('r', write(), 0, lease), 1);
        // Other runs are not held.
        assert.equal((await store.claim('other', { owner: 'worker-b', leaseMs: 5_000 })).token, 1);
      }),
  },
  {
    name: 'renew keeps the token and moves expiresAt (to now + leaseMs, or a new length); release frees the run at once',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        clock.now += 600;
        const renewed = await store.renew(lease);
        assert.deepEqual(renewed, { ...lease, expiresAt: iso(t + 1_600) });
        const longer = await store.renew(renewed, 60_000);
        assert.deepEqual(longer, { ...lease, expiresAt: iso(t + 60_600), leaseMs: 60_000 });
        clock.now += 30_000; // past the first lease's end, within the renewed one
        await assert.rejects(
          store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }),
          busy('r', 'worker-a', t + 60_600),
        );

        assert.equal(await store.release(longer), true);
        // Released: anyone may claim at once, and a save without a lease is allowed meanwhile.
        assert.equal(await store.save('r', write(), 0), 1);
        const next = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000 });
        assert.equal(next.token, 2);
      }),
  },
  {
    name: 'a released lease can no longer save, delete or renew (LeaseLostError); releasing it again is a no-op (false)',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store) => {
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal(await store.save('r', write({ append: entries(1) }), 0, lease), 1);
        assert.equal(await store.release(lease), true);
        assert.equal(await store.release(lease), false);
        const before = await store.load('r');
        await assert.rejects(store.save('r', write({ from: 1 }), 1, lease), lost('r', 1, 1, null));
        await assert.rejects(store.delete('r', 1, lease), lost('r', 1, 1, null));
        await assert.rejects(store.renew(lease), lost('r', 1, 1, null));
        assert.deepEqual(await store.load('r'), before);
      }),
  },
  {
    name: 'lapse and takeover: once expiresAt is reached anyone may claim, with a larger token; the old owner is refused (LeaseLostError) and nothing changes',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal(await store.save('r', write({ append: entries(2) }), 0, a), 1);
        clock.now += 1_000; // expiresAt is reached: the lease has lapsed
        const b = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000 });
        assert.equal(b.token, 2);
        const before = await store.load('r');
        // A stale token is refused even with the right version and entry count, in the same
        // atomic step: version, head, entries and pending calls stay as they were.
        const stale = write({ status: 'done', head: '{"by":"a"}', from: 2, append: entries(1, 2, 'a') });
        await assert.rejects(store.save('r', stale, 1, a), lost('r', 1, 2, 'worker-b'));
        // The lease is checked before the version: a stale token with a stale version is a lost lease too.
        await assert.rejects(store.save('r', write({ from: 0 }), 0, a), lost('r', 1, 2, 'worker-b'));
        await assert.rejects(store.delete('r', 1, a), lost('r', 1, 2, 'worker-b'));
        await assert.rejects(store.renew(a), lost('r', 1, 2, 'worker-b'));
        assert.equal(await store.release(a), false);
        assert.deepEqual(await store.load('r'), before);
        // The new owner holds the run: it writes, others are kept out.
        assert.equal(await store.save('r', write({ from: 2, append: entries(1, 2, 'b') }), 1, b), 2);
        await assert.rejects(store.claim('r', { owner: 'worker-a', leaseMs: 1_000 }), busy('r', 'worker-b'));
      }),
  },
  {
    name: 'a lapsed lease nobody claimed still fences: it saves and renews; a save extends it to now + leaseMs, never shortening it',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        clock.now += 5_000; // lapsed, but nobody claimed since: the token is still current
        assert.equal(await store.save('r', write(), 0, lease), 1);
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }), busy('r', 'worker-a', t + 6_000));
        clock.now += 2_000;
        const renewed = await store.renew(lease, 10_000);
        assert.equal(renewed.expiresAt, iso(t + 17_000));
        clock.now += 1_000;
        // A save with the shorter lease object does not shorten the renewed lease…
        assert.equal(await store.save('r', write(), 1, lease), 2);
        await assert.rejects(
          store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }),
          busy('r', 'worker-a', t + 17_000),
        );
        // …and one whose now + leaseMs goes further extends it.
        clock.now = t + 16_500;
        assert.equal(await store.save('r', write(), 2, renewed), 3);
        await assert.rejects(
          store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }),
          busy('r', 'worker-a', t + 26_500),
        );
      }),
  },
  {
    name: 'saves and deletes without a lease are refused (RunBusyError) while another owner holds a live lease, allowed before, after a lapse and after a release',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        assert.equal(await store.save('r', write({ append: entries(1) }), 0), 1); // nobody holds it
        const t = clock.now;
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        const before = await store.load('r');
        await assert.rejects(store.save('r', write({ from: 1 }), 1), busy('r', 'worker-a', t + 1_000));
        await assert.rejects(store.delete('r'), busy('r', 'worker-a', t + 1_000));
        await assert.rejects(store.delete('r', 1), busy('r', 'worker-a', t + 1_000));
        assert.deepEqual(await store.load('r'), before);
        clock.now += 1_000; // lapsed: a lease-less writer (an import, an admin) may write again
        assert.equal(await store.save('r', write({ from: 1 }), 1), 2);
        // The lapsed lease was not taken over, so it still writes too (optimistic versions still apply).
        assert.equal(await store.save('r', write({ from: 1 }), 2, lease), 3);
        await assert.rejects(store.save('r', write({ from: 1 }), 3), busy('r', 'worker-a'));
        assert.equal(await store.release(lease), true);
        assert.equal(await store.delete('r', 3), true);
        assert.equal(await store.load('r'), null);
      }),
  },
  {
    name: 'delete with the current lease deletes; the lease record outlives the run, and the next claim of its id gets a larger token',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal(await store.save('r', write({ append: entries(1) }), 0, a), 1);
        clock.now += 500;
        assert.equal(await store.delete('r', 1, a), true); // checks the lease, does not extend it
        assert.equal(await store.load('r'), null);
        assert.deepEqual(await store.list(), []);
        assert.equal(await store.delete('r', undefined, a), false); // nothing left to delete
        // Still held by a until it releases or lapses; then the id starts again at version 0, not token 1.
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }), busy('r', 'worker-a', t + 1_000));
        clock.now += 500;
        const b = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000 });
        assert.equal(b.token, 2);
        assert.equal(await store.save('r', write(), 0, b), 1);
        await assert.rejects(store.save('r', write(), 1, a), lost('r', 1, 2, 'worker-b'));
      }),
  },
  {
    name: 'tokens only grow: every claim makes a larger one — after a lapse, a release, a delete, and an owner re-claiming its own live lease (which fences its earlier lease)',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const tokens: number[] = [];
        const first = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        tokens.push(first.token);
        const again = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 }); // its own, still live
        tokens.push(again.token);
        await assert.rejects(store.save('r', write(), 0, first), lost('r', first.token, again.token, 'worker-a'));
        assert.equal(await store.save('r', write(), 0, again), 1);
        assert.equal(await store.release(again), true);
        const b = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000 });
        tokens.push(b.token);
        clock.now += 1_000;
        const c = await store.claim('r', { owner: 'worker-c', leaseMs: 1_000 });
        tokens.push(c.token);
        assert.equal(await store.delete('r', 1, c), true);
        assert.equal(await store.release(c), true);
        const d = await store.claim('r', { owner: 'worker-d', leaseMs: 1_000 });
        tokens.push(d.token);
        for (let i = 1; i < tokens.length; i++) {
          assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `tokens grow: ${tokens.join(', ')}`);
        }
        assert.deepEqual(tokens, [1, 2, 3, 4, 5]);
      }),
  },
  {
    name: 'the token fences, not the owner: an owner that claims its run again cannot renew, release, save or delete with its earlier lease',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const first = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal(await store.save('r', write(), 0, first), 1);
        // The same owner claims again (a restarted worker with a fixed owner id, a second agent).
        const second = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000 });
        assert.equal(second.token, first.token + 1);
        clock.now += 100;
        await assert.rejects(store.renew(first), lost('r', first.token, second.token, 'worker-a'));
        await assert.rejects(store.renew(first, 60_000), lost('r', first.token, second.token, 'worker-a'));
        await assert.rejects(store.save('r', write(), 1, first), lost('r', first.token, second.token, 'worker-a'));
        await assert.rejects(store.delete('r', 1, first), lost('r', first.token, second.token, 'worker-a'));
        assert.equal(await store.release(first), false);
        // Nothing the earlier lease tried changed the current one: it still ends when it did.
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 1_000 }), busy('r', 'worker-a', t + 1_000));
        assert.deepEqual(await store.renew(second), { ...second, expiresAt: iso(t + 1_100) });
        assert.equal(await store.save('r', write(), 1, second), 2);
      }),
  },
  {
    name: 'concurrent claims in one process: exactly one owner wins, the others are told who',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const owners = Array.from({ length: 8 }, (_, i) => `worker-${i}`);
        const settled = await Promise.allSettled(owners.map((owner) => store.claim('r', { owner, leaseMs: 60_000 })));
        const won = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
        assert.equal(won.length, 1, 'exactly one claim wins');
        const winner = won[0]?.owner as string;
        assert.equal(won[0]?.token, 1);
        for (const s of settled) if (s.status === 'rejected') busy('r', winner)(s.reason);
        assert.equal(await store.save('r', write(), 0, won[0]), 1);
      }),
  },
  {
    name: 'leases are kept like runs: a reopened store still knows the holder, and its tokens go on from where they were',
    requires: ['reopen'],
    run: async (ctx) => {
      const store = await ctx.create();
      const a = await store.claim('saved', { owner: 'worker-a', leaseMs: 600_000 });
      await store.save('saved', write(), 0, a);
      const b = await store.claim('unsaved', { owner: 'worker-b', leaseMs: 600_000 });
      await store.close();
      const again = await ctx.reopen!(store);
      try {
        await assert.rejects(again.claim('saved', { owner: 'worker-c', leaseMs: 1_000 }), busy('saved', 'worker-a'));
        await assert.rejects(
          again.claim('unsaved', { owner: 'worker-c', leaseMs: 1_000 }),
          busy('unsaved', 'worker-b'),
        );
        assert.equal(await again.save('saved', write(), 1, a), 2);
        assert.equal(await again.release(b), true);
        assert.equal((await again.claim('unsaved', { owner: 'worker-c', leaseMs: 1_000 })).token, 2);
        assert.equal((await again.claim('saved', { owner: 'worker-a', leaseMs: 1_000 })).token, 2);
      } finally {
        await again.close();
      }
    },
  },
];
