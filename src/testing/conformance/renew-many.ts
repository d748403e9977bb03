/**
 * `renewMany`, an optional capability: many leases renewed in one call, each exactly as `renew`
 * would renew it or refuse it, alone.
 */
import assert from 'node:assert/strict';
import type { Lease } from '../../store/contract.js';
import { iso, lost, optionsError, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

export const renewManyCases: ConformanceCase[] = [
  {
    name: 'renewMany renews each lease as renew would (token kept, expiresAt = now + its length or the one given) and refuses each lost one alone, with the LeaseLostError renew would throw',
    requires: ['clock', 'renewMany'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const renewMany = (store.renewMany as NonNullable<typeof store.renewMany>).bind(store);
        const t = clock.now;
        const a = await store.claim('a', { owner: 'worker-a', leaseMs: 1_000 });
        const b = await store.claim('b', { owner: 'worker-a', leaseMs: 2_000 });
        const released = await store.claim('c', { owner: 'worker-a', leaseMs: 1_000 });
        await store.release(released);
        const taken = await store.claim('d', { owner: 'worker-a', leaseMs: 1_000 });
        clock.now += 1_000; // d's lease lapses and another owner takes it; a's lapsed, nobody claimed it
        const other = await store.claim('d', { owner: 'worker-b', leaseMs: 60_000 });
        const stranger: Lease = { ...a, runId: 'never-claimed' };

        const results = await renewMany([a, released, b, taken, stranger]);
        assert.deepEqual(results[0], { ...a, expiresAt: iso(t + 2_000) }); // lapsed, not taken: renewed
        assert.deepEqual(results[2], { ...b, expiresAt: iso(t + 3_000) });
        lost('c', released.token, released.token, null)(results[1]);
        lost('d', taken.token, other.token, 'worker-b')(results[3]);
        lost('never-claimed', a.token, null, null)(results[4]);
        // The refusals changed nothing: d is the other owner's, and it saves with its lease.
        assert.equal(await store.save('d', write(), 0, other), 1);
        await assert.rejects(store.renew(released), { name: 'LeaseLostError' });

        // A length given replaces each lease's own.
        clock.now += 500;
        const longer = await renewMany([a, b], 60_000);
        assert.deepEqual(longer, [
          { ...a, expiresAt: iso(clock.now + 60_000), leaseMs: 60_000 },
          { ...b, expiresAt: iso(clock.now + 60_000), leaseMs: 60_000 },
        ]);
        clock.now += 30_000; // past both leases' own lengths, within the renewed one
        await assert.rejects(store.claim('a', { owner: 'worker-b', leaseMs: 1_000 }), { name: 'RunBusyError' });
      }),
  },
  {
    name: 'renewMany of no leases is []; a malformed lease or length refuses the whole call (OptionsError) and renews none',
    requires: ['renewMany'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const renewMany = (store.renewMany as NonNullable<typeof store.renewMany>).bind(store);
        assert.deepEqual(await renewMany([]), []);
        const a = await store.claim('a', { owner: 'worker-a', leaseMs: 60_000 });
        const before = await store.renew(a);
        await assert.rejects(renewMany([a, { ...a, token: 0 }]), optionsError(/^renewMany: lease\.token must be/));
        await assert.rejects(renewMany([a], 0), optionsError(/^renewMany: leaseMs must be/));
        await assert.rejects(renewMany('a' as never), optionsError(/^renewMany: leases must be an array/));
        // Nothing was renewed by the refused calls: the lease still ends where the last renew put it.
        await assert.rejects(store.claim('a', { owner: 'worker-b', leaseMs: 1 }), (e: { until?: string }) => {
          assert.equal(e.until, before.expiresAt);
          return true;
        });
      }),
  },
];
