/** Claiming with `wait`, and the options every store checks alike for claims and leases. */
import assert from 'node:assert/strict';
import type { Lease } from '../../store/contract.js';
import { busy, optionsError, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** A short real pause, so that a waiting claim has tried at least once. Not a deadline. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

export const claimCases: ConformanceCase[] = [
  {
    name: 'claim with wait: gets the run as soon as its holder releases it, or its lease lapses on the store’s clock',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
        const waiting = store.claim('r', { owner: 'worker-b', leaseMs: 60_000, wait: 30_000 });
        await tick();
        assert.equal(await store.release(a), true);
        const b = await waiting;
        assert.deepEqual([b.owner, b.token], ['worker-b', 2]);

        const lapse = store.claim('r', { owner: 'worker-c', leaseMs: 1_000, wait: 120_000 });
        await tick();
        clock.now += 60_000; // b's lease lapses on the store's clock; no real time need pass
        const c = await lapse;
        assert.deepEqual([c.owner, c.token], ['worker-c', 3]);
      }),
  },
  {
    name: 'claim with wait gives up with RunBusyError once the wait has passed (here on the store’s clock), saying so; nothing changes',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
        const giving = store.claim('r', { owner: 'worker-b', leaseMs: 1_000, wait: 5_000 });
        await tick();
        clock.now += 5_000; // the wait has passed; the lease has not
        await assert.rejects(giving, (error: Error) => {
          busy('r', 'worker-a', t + 60_000)(error);
          assert.match(error.message, /waited 5000 ms/);
          return true;
        });
        assert.equal(await store.save('r', write(), 0, a), 1);
        // wait: 0 (the default) fails at once.
        await assert.rejects(store.claim('r', { owner: 'worker-b', leaseMs: 1_000, wait: 0 }), busy('r', 'worker-a'));
      }),
  },
  {
    name: 'claim and open with a signal: a waiting claim stops when it aborts (rejecting with its reason, holding nothing); an aborted signal claims nothing',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', write(), 0);
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000 });
        const controller = new AbortController();
        const waiting = store.claim('r', {
          owner: 'worker-b',
          leaseMs: 60_000,
          wait: 60_000,
          signal: controller.signal,
        });
        await tick();
        const reason = new Error('the caller went away');
        controller.abort(reason);
        await assert.rejects(waiting, (error) => error === reason);
        if (store.open) {
          const opening = store.open('r', {
            owner: 'worker-b',
            leaseMs: 60_000,
            wait: 60_000,
            signal: AbortSignal.abort(reason),
          });
          await assert.rejects(opening, (error) => error === reason);
        }
        assert.equal(await store.release(a), true);
        // Neither stopped claim holds the run: the next claim takes it at once, waiting for nobody.
        // (A stopped claim whose try was already under way may still land, after the release: the
        // store gives that lease up again at once, so the token may count it.)
        await assert.rejects(
          store.claim('r', { owner: 'worker-c', leaseMs: 1_000, signal: AbortSignal.abort(reason) }),
          (error) => error === reason,
        );
        const c = await store.claim('r', { owner: 'worker-c', leaseMs: 1_000 });
        assert.equal(c.owner, 'worker-c');
        assert.ok(
          c.token === 2 || c.token === 3,
          `token ${c.token}: one claim before it, and at most one stopped late`,
        );
        await assert.rejects(
          store.claim('r', { owner: 'worker-d', leaseMs: 1_000, signal: 'soon' } as never),
          optionsError(/^claim: signal must be an AbortSignal, got "soon"$/),
        );
      }),
  },
  {
    name: 'claim and lease options are strict: a missing or unknown option, a duration out of range, a bad owner, a lease of another run: OptionsError',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await assert.rejects(store.claim('r', { owner: 'a' } as never), optionsError(/^claim: leaseMs is required/));
        await assert.rejects(
          store.claim('r', { owner: 'a', leaseMs: 1_000, waitMs: 5 } as never),
          optionsError(/^claim: unknown option "waitMs" \(did you mean "wait"\?\)$/),
        );
        for (const leaseMs of [0, -1, 1.5, 2 ** 31, Number.NaN, '1000']) {
          await assert.rejects(
            store.claim('r', { owner: 'a', leaseMs } as never),
            optionsError(/^claim: leaseMs must be a whole number of milliseconds from 1 to 2147483647/),
          );
        }
        await assert.rejects(
          store.claim('r', { owner: 'a', leaseMs: 1_000, wait: 2 ** 31 }),
          optionsError(/^claim: wait must be a whole number of milliseconds from 0 to 2147483647/),
        );
        for (const owner of ['', 'x'.repeat(257), 7, 'lone \ud800']) {
          await assert.rejects(store.claim('r', { owner, leaseMs: 1_000 } as never), optionsError(/^claim: owner/));
        }
        await assert.rejects(store.claim('a\u0000', { owner: 'a', leaseMs: 1_000 }), optionsError(/^claim: run id/));

        const lease = await store.claim('r', { owner: 'a', leaseMs: 60_000 });
        await assert.rejects(
          store.save('other', write(), 0, lease),
          optionsError(/^save: the lease is for run "r", not "other"/),
        );
        await assert.rejects(
          store.delete('other', undefined, lease),
          optionsError(/^delete: the lease is for run "r"/),
        );
        const forged = (over: object) => ({ ...lease, ...over }) as Lease;
        await assert.rejects(store.renew(forged({ token: 0 })), optionsError(/^renew: lease\.token must be/));
        await assert.rejects(store.renew(forged({ extra: 1 })), optionsError(/^renew: unknown lease field "extra"/));
        await assert.rejects(store.renew(lease, 0), optionsError(/^renew: leaseMs must be/));
        await assert.rejects(store.release(null as never), optionsError(/^release: the lease must be a Lease/));
        assert.equal(await store.save('r', write(), 0, lease), 1, 'nothing was changed by the refused calls');
      }),
  },
];
