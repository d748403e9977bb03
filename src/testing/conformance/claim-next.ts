/** `claimNext`: a worker takes the oldest runnable run of its agents, one owner per run; `watch` wakes it. */
import assert from 'node:assert/strict';
import type { CheckpointStore, ClaimNextOptions } from '../../store/contract.js';
import { entries, iso, lost, optionsError, stepCall, withClock, withStore, write } from './fixtures.js';
import { awaiting, decisionOn } from './queue.js';
import type { ConformanceCase } from './types.js';

const take = (store: CheckpointStore, owner = 'worker-w', agents: string[] = ['refunds'], leaseMs = 60_000) =>
  store.claimNext({ owner, leaseMs, agents });

/** The run ids `claimNext` gives, one call after another, until it gives null. */
async function drain(store: CheckpointStore, agents: string[] = ['refunds']): Promise<string[]> {
  const taken: string[] = [];
  for (let next = await take(store, 'worker-w', agents); next; next = await take(store, 'worker-w', agents)) {
    taken.push(next.run.runId);
  }
  return taken;
}

/** Resolves once `done()` holds; polls, as a listener's call comes later (after a commit, over the network). */
async function until(done: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > end) throw new Error(`watch: ${what} was not seen within 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export const claimNextCases: ConformanceCase[] = [
  {
    name: 'claimNext takes runnable runs (running, or awaiting with a decision or an expired call; ties by run id in code-point order) with a new lease and its summary; null when none',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const at = (ms: number) => {
          clock.now = t + ms;
        };
        await store.save('done', write({ status: 'done', agent: 'refunds' }), 0);
        await store.save('failed', write({ status: 'failed', agent: 'refunds' }), 0);
        await store.save('waiting', awaiting('waiting'), 0);
        at(1);
        for (const runId of ['b', 'a', 'B']) await store.save(runId, write({ agent: 'refunds' }), 0);
        at(2);
        await store.save('decided', awaiting('decided'), 0);
        at(3);
        await store.save('old', write({ agent: 'refunds', append: entries(1) }), 0);
        at(4);
        assert.equal(await store.queueDecision('decided', decisionOn('decided'), 1), 2); // now updated at t + 4
        at(5);
        const expiring = [stepCall('expiring', 1, 1, iso(t + 100)), stepCall('expiring', 1, 2, iso(t + 50))];
        await store.save(
          'expiring',
          write({ status: 'awaiting_approval', agent: 'refunds', pendingCalls: expiring }),
          0,
        );
        at(10);
        const listed = new Map((await store.list()).map((r) => [r.runId, r]));
        const first = await take(store, 'worker-w', ['refunds'], 1_000);
        // The recorded decision first (claim order), then the others oldest first.
        assert.deepEqual(first, {
          lease: { runId: 'decided', owner: 'worker-w', token: 1, expiresAt: iso(t + 1_010), leaseMs: 1_000 },
          run: listed.get('decided'),
        });
        assert.deepEqual(await drain(store), ['B', 'a', 'b', 'old']);
        const decided = listed.get('decided');
        assert.deepEqual([decided?.status, decided?.decision?.by], ['awaiting_approval', 'alice']);
        assert.equal(await take(store), null, 'a call not expired yet: not runnable');
        at(50); // the earliest call's expiresAt is reached
        assert.equal((await take(store))?.run.runId, 'expiring');
        assert.equal(await take(store), null);
        // Nothing was written by the claims: versions and update times are as they were.
        assert.deepEqual(
          (await store.list()).map((r) => [r.runId, r.version, r.updatedAt]),
          [...listed.values()].map((r) => [r.runId, r.version, r.updatedAt]),
        );
      }),
  },
  {
    name: 'claimNext skips runs under a live lease, takes a lapsed one (token + 1; the old owner is refused) and a released one',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const held = await store.claim('held', { owner: 'worker-x', leaseMs: 1_000 });
        await store.save('held', write({ agent: 'refunds', append: entries(1) }), 0, held);
        clock.now += 1;
        await store.save('free', write({ agent: 'refunds' }), 0);
        const free = await take(store);
        assert.deepEqual([free?.run.runId, free?.lease.token], ['free', 1]);
        assert.equal(await take(store, 'worker-v'), null, 'both are held');
        assert.equal(await take(store), null, 'a live lease of its own is not taken again');
        clock.now += 998;
        assert.equal(await take(store, 'worker-v'), null);
        clock.now += 1; // held's lease has lapsed
        const lapsed = await take(store, 'worker-v');
        assert.deepEqual(lapsed?.lease, {
          runId: 'held',
          owner: 'worker-v',
          token: 2,
          expiresAt: iso(clock.now + 60_000),
          leaseMs: 60_000,
        });
        await assert.rejects(store.save('held', write({ from: 1 }), 1, held), lost('held', 1, 2, 'worker-v'));
        assert.equal(await store.release(free?.lease as NonNullable<typeof free>['lease']), true);
        const again = await take(store, 'worker-u');
        assert.deepEqual([again?.run.runId, again?.lease.owner, again?.lease.token], ['free', 'worker-u', 2]);
        assert.equal(await take(store), null);
      }),
  },
  {
    name: 'claimNext takes only runs of the given agents; a run saved without an agent is never taken',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('nameless', write(), 0);
        await store.save('r', write({ agent: 'refunds' }), 0);
        await store.save('b', write({ agent: 'billing' }), 0);
        await store.save('s', write({ agent: 'support' }), 0);
        assert.deepEqual(await drain(store, ['other']), []);
        assert.deepEqual(await drain(store, ['billing']), ['b']);
        assert.deepEqual((await drain(store, ['support', 'refunds', 'support'])).sort(), ['r', 's']);
        assert.deepEqual(await drain(store, ['refunds', 'billing', 'support']), []);
      }),
  },
  {
    name: 'concurrent claimNext calls in one process never return the same run',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        const runIds = Array.from({ length: 8 }, (_, i) => `run-${i}`);
        for (const runId of runIds) await store.save(runId, write({ agent: 'refunds' }), 0);
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => take(store, `worker-${i}`)));
        const won = results.flatMap((r) => (r ? [r] : []));
        assert.deepEqual(won.map((r) => r.run.runId).sort(), runIds, 'each run was taken exactly once');
        assert.equal(results.length - won.length, 4, 'the other calls found nothing');
        for (const r of won) assert.deepEqual([r.lease.runId, r.lease.token], [r.run.runId, 1]);
        assert.equal(await take(store), null);
      }),
  },
  {
    name: 'claimNext options are strict: owner, leaseMs and a non-empty list of agent names, nothing else (OptionsError)',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', write({ agent: 'refunds' }), 0);
        const good: ClaimNextOptions = { owner: 'w', leaseMs: 1_000, agents: ['refunds'] };
        const bad: [unknown, RegExp][] = [
          [null, /^claimNext: options must be an object/],
          [{ ...good, wait: 5 }, /^claimNext: unknown option "wait"/],
          [{ ...good, owner: '' }, /^claimNext: owner/],
          [{ owner: 'w', agents: ['refunds'] }, /^claimNext: leaseMs is required/],
          [{ ...good, leaseMs: 0 }, /^claimNext: leaseMs must be/],
          [{ ...good, agents: [] }, /^claimNext: agents must be a non-empty array/],
          [{ ...good, agents: 'refunds' }, /^claimNext: agents must be a non-empty array/],
          [{ ...good, agents: ['refunds', ''] }, /^claimNext: the agent name/],
        ];
        for (const [options, pattern] of bad) {
          await assert.rejects(store.claimNext(options as ClaimNextOptions), optionsError(pattern));
        }
        assert.equal((await store.claimNext(good))?.lease.token, 1, 'the refused calls claimed nothing');
      }),
  },
  {
    name: 'watch, when the store has it: called after a save without a lease, a decision, a release; a throwing listener harms no other; stop ends the calls',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        if (!store.watch) return;
        let calls = 0;
        let stoppedCalls = 0;
        const stopThrowing = await store.watch(() => {
          throw new Error('a listener that throws');
        });
        const stop = await store.watch(() => {
          stoppedCalls++;
        });
        const stopCounting = await store.watch(() => {
          calls++;
        });
        await store.save('r', awaiting('r'), 0);
        await until(() => calls >= 1, 'a save without a lease');
        await stop();
        const seen = [calls, stoppedCalls];
        assert.ok(stoppedCalls >= 1);
        await store.queueDecision('r', decisionOn('r'), 1);
        await until(() => calls > seen[0]!, 'queueDecision');
        const lease = await store.claim('r', { owner: 'worker-w', leaseMs: 60_000 });
        const beforeRelease = calls;
        await store.release(lease);
        await until(() => calls > beforeRelease, 'release');
        assert.equal(stoppedCalls, seen[1], 'a stopped listener is not called');
        await stopCounting();
        await stopThrowing();
      }),
  },
];
