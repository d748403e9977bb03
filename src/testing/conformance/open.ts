/**
 * `open`, an optional capability: what `Agent.load` needs of a run in one call, with the rules of
 * the calls it replaces — an unknown run not claimed, an ended run read without a claim, any other
 * claimed by `claim`'s rule and read, a run at rest released again (its token grown by one), one
 * found `running` kept claimed — and the run's group.
 */
import assert from 'node:assert/strict';
import type { RunBusyError } from '../../errors.js';
import type { CheckpointStore, ClaimOptions, OpenedRun } from '../../store/contract.js';
import { busy, entries, iso, optionsError, withClock, withStore, write } from './fixtures.js';
import { processOn } from './holders.js';
import type { ConformanceCase } from './types.js';

const openOf = (store: CheckpointStore) =>
  (store.open as NonNullable<CheckpointStore['open']>).bind(store) as (
    runId: string,
    claim: ClaimOptions,
  ) => Promise<OpenedRun | null>;

/** Saves run `runId` in `status` under a fresh claim by `owner`; returns the lease (still held). */
async function made(
  store: CheckpointStore,
  runId: string,
  status: 'running' | 'awaiting_approval' | 'done',
  owner = 'worker-a',
) {
  const lease = await store.claim(runId, { owner, leaseMs: 1_000 });
  await store.save(runId, write({ status, append: entries(2) }), 0, lease);
  return lease;
}

export const openCases: ConformanceCase[] = [
  {
    name: 'open: a run at rest is read as load reads it and left unclaimed (its token grown by one); one found running stays claimed; an unknown run is null, nothing claimed',
    requires: ['clock', 'open'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const open = openOf(store);
        const rest = await made(store, 'rest', 'awaiting_approval');
        await store.release(rest);
        const atRest = await open('rest', { owner: 'worker-b', leaseMs: 60_000 });
        assert.deepEqual(atRest, { run: await store.load('rest'), lease: null, group: null });
        // Not left claimed: anyone claims it at once, with the token after open's claim.
        const c = await store.claim('rest', { owner: 'worker-c', leaseMs: 60_000 });
        assert.equal(c.token, rest.token + 2);

        const running = await made(store, 'running', 'running');
        clock.now += 1_000; // the owner died mid-run: its lease lapsed
        const found = await open('running', { owner: 'worker-b', leaseMs: 60_000 });
        assert.deepEqual(found, {
          run: await store.load('running'),
          lease: {
            runId: 'running',
            owner: 'worker-b',
            token: running.token + 1,
            expiresAt: iso(clock.now + 60_000),
            leaseMs: 60_000,
          },
          group: null,
        });
        await assert.rejects(
          store.claim('running', { owner: 'worker-c', leaseMs: 1_000 }),
          busy('running', 'worker-b'),
        );
        assert.equal(await store.save('running', write({ from: 2 }), 1, found?.lease ?? undefined), 2);

        assert.equal(await open('nope', { owner: 'worker-b', leaseMs: 60_000 }), null);
        assert.equal((await store.claim('nope', { owner: 'worker-c', leaseMs: 1_000 })).token, 1);
      }),
  },
  {
    name: 'open: a run that has ended is read without a claim, even while another owner holds it; its holder keeps its lease',
    requires: ['open'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const holder = await store.claim('ended', { owner: 'worker-a', leaseMs: 60_000 });
        await store.save('ended', write({ status: 'done', append: entries(1) }), 0, holder);
        const found = await openOf(store)('ended', { owner: 'worker-b', leaseMs: 60_000 });
        assert.deepEqual(found, { run: await store.load('ended'), lease: null, group: null });
        assert.equal((await store.renew(holder)).token, holder.token);
      }),
  },
  {
    name: 'open refuses a run another owner holds live, as claim does (RunBusyError: holder, until, token, process), changing nothing; with wait it opens the run once its holder releases it',
    requires: ['clock', 'open'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const open = openOf(store);
        const lease = await store.claim('r', { owner: 'worker-a', leaseMs: 60_000, process: processOn(41) });
        await store.save('r', write({ status: 'awaiting_approval' }), 0, lease);
        const refused = await open('r', { owner: 'worker-b', leaseMs: 1_000 }).then(
          () => assert.fail('open of a run held by another owner should be refused'),
          (e: unknown) => e as RunBusyError,
        );
        busy('r', 'worker-a', clock.now + 60_000)(refused);
        assert.deepEqual([refused.token, refused.holderProcess], [lease.token, processOn(41)]);
        assert.equal((await store.renew(lease)).token, lease.token); // still the holder's

        const waiting = open('r', { owner: 'worker-b', leaseMs: 1_000, wait: 30_000 });
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(await store.release(lease), true);
        const opened = await waiting;
        assert.equal(opened?.run.status, 'awaiting_approval');
        assert.equal(opened?.lease, null);
        assert.equal((await store.claim('r', { owner: 'worker-c', leaseMs: 1_000 })).token, lease.token + 2);
      }),
  },
  {
    name: 'open gives the group of a run that can go on, and null for one that has ended',
    requires: ['open', 'groupBudgets'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const join = (store.joinGroup as NonNullable<CheckpointStore['joinGroup']>).bind(store);
        await store.release(await made(store, 'live', 'awaiting_approval'));
        await store.release(await made(store, 'ended', 'done'));
        await join('live', 'acme');
        await join('ended', 'acme');
        const open = openOf(store);
        assert.equal((await open('live', { owner: 'worker-b', leaseMs: 1_000 }))?.group, 'acme');
        assert.equal((await open('ended', { owner: 'worker-b', leaseMs: 1_000 }))?.group, null);
      }),
  },
  {
    name: 'open checks its run id and options as claim does: OptionsError naming open, nothing claimed',
    requires: ['open'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const open = openOf(store);
        await assert.rejects(open('r', { owner: 'a' } as never), optionsError(/^open: leaseMs is required/));
        await assert.rejects(open('r\u0000', { owner: 'a', leaseMs: 1_000 }), optionsError(/^open: /));
        await assert.rejects(open('r', { owner: '', leaseMs: 1_000 }), optionsError(/^open: owner/));
        await assert.rejects(
          open('r', { owner: 'a', leaseMs: 1_000, waitMs: 5 } as never),
          optionsError(/^open: unknown option/),
        );
        assert.equal((await store.claim('r', { owner: 'worker-c', leaseMs: 1_000 })).token, 1);
      }),
  },
];
