/**
 * `claimNext`'s order: runs with a recorded decision (or an expired approval) first, then runs
 * whose lease lapsed (an owner died mid-run), then new runs, oldest first in each — and, so that
 * new runs are never starved, every `OLDEST_EVERY`-th claim of a store object takes the oldest
 * runnable run whatever its class.
 */
import assert from 'node:assert/strict';
import { OLDEST_EVERY } from '../../store/claim-order.js';
import type { CheckpointStore } from '../../store/contract.js';
import { entries, iso, stepCall, withClock, write } from './fixtures.js';
import { awaiting, decisionOn } from './queue.js';
import type { ConformanceCase } from './types.js';

const take = async (store: CheckpointStore) =>
  (await store.claimNext({ owner: 'worker-w', leaseMs: 60_000, agents: ['refunds'] }))?.run.runId ?? null;

export const claimOrderCases: ConformanceCase[] = [
  {
    name: 'claimNext order: a recorded decision or an expired approval first, then a run whose lease lapsed, then new runs (a run released mid-run among them); oldest first in each',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const t = clock.now;
        const at = (ms: number) => {
          clock.now = t + ms;
        };
        await store.save('new-1', write({ agent: 'refunds' }), 0);
        at(1);
        await store.save('new-2', write({ agent: 'refunds' }), 0);
        at(2);
        const dying = await store.claim('lapsed', { owner: 'worker-x', leaseMs: 100 });
        await store.save('lapsed', write({ agent: 'refunds', append: entries(1) }), 0, dying);
        at(3);
        await store.save('decided', awaiting('decided'), 0);
        at(4);
        await store.queueDecision('decided', decisionOn('decided'), 1);
        at(5);
        const expiring = [stepCall('expired', 1, 1, iso(t + 6))];
        await store.save(
          'expired',
          write({ status: 'awaiting_approval', agent: 'refunds', pendingCalls: expiring }),
          0,
        );
        at(7);
        const quitting = await store.claim('released', { owner: 'worker-y', leaseMs: 60_000 });
        await store.save('released', write({ agent: 'refunds' }), 0, quitting);
        await store.release(quitting); // given up mid-run (a worker stopped without waiting)
        at(200); // lapsed's lease ran out at t + 102; expired's call at t + 6

        const order = [];
        for (let next = await take(store); next !== null; next = await take(store)) order.push(next);
        assert.deepEqual(order, ['decided', 'expired', 'lapsed', 'new-1', 'new-2', 'released']);
      }),
  },
  {
    name: `claimNext never starves new runs: after ${OLDEST_EVERY - 1} claims in a row by class, a store object's next claim takes the oldest runnable run`,
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const fresh = ['new-1', 'new-2', 'new-3'];
        for (const runId of fresh) {
          await store.save(runId, write({ agent: 'refunds' }), 0);
          clock.now += 1;
        }
        const decided = Array.from(
          { length: 3 * (OLDEST_EVERY - 1) },
          (_, i) => `decided-${String(i).padStart(2, '0')}`,
        );
        for (const runId of decided) {
          await store.save(runId, awaiting(runId), 0);
          await store.queueDecision(runId, decisionOn(runId), 1);
          clock.now += 1;
        }
        const taken: string[] = [];
        for (let i = 0; i < fresh.length * OLDEST_EVERY; i++) taken.push((await take(store)) as string);
        // Decisions first, but every OLDEST_EVERY-th claim is the oldest run, a new one here.
        const expected: string[] = [];
        for (let i = 0; i < fresh.length; i++) {
          expected.push(...decided.slice(i * (OLDEST_EVERY - 1), (i + 1) * (OLDEST_EVERY - 1)), fresh[i] as string);
        }
        assert.deepEqual(taken, expected);
        assert.equal(await take(store), null);
      }),
  },
];
