/** Head bases (`keepsBase`): a store keeps each run's last base beside its head, as atomically. */
import assert from 'node:assert/strict';
import { conflict, entries, withStore, write } from './fixtures.js';
import { awaiting, decisionOn } from './queue.js';
import type { ConformanceCase } from './types.js';

export const baseCases: ConformanceCase[] = [
  {
    name: 'bases: a write’s base is kept until another write gives one; a write without one keeps it; a new run has none',
    requires: ['bases'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        assert.equal(store.keepsBase, true, 'the store says it keeps bases');
        await store.save('plain', write(), 0);
        assert.equal((await store.load('plain'))?.base, null, 'a run saved without a base has none');
        await store.save('r', write({ head: '{"b":1}', base: '{"b":1,"n":1}' }), 0);
        assert.deepEqual(await baseAndHead('r'), ['{"b":1,"n":1}', '{"b":1}']);
        await store.save('r', write({ head: '{"b":1,"n":2}', from: 0, append: entries(2) }), 1);
        assert.deepEqual(await baseAndHead('r'), ['{"b":1,"n":1}', '{"b":1,"n":2}']);
        await store.save('r', write({ head: '{"b":3}', base: '{"b":3,"n":3}', from: 2 }), 2);
        assert.deepEqual(await baseAndHead('r'), ['{"b":3,"n":3}', '{"b":3}']);
        // A refused save changes nothing, its base included.
        await assert.rejects(
          store.save('r', write({ head: '{}', base: '{"stale":true}', from: 2 }), 2),
          conflict('r', 2, 3),
        );
        assert.deepEqual(await baseAndHead('r'), ['{"b":3,"n":3}', '{"b":3}']);
        // A summary has no base.
        const [listed] = (await store.list()).filter((run) => run.runId === 'r');
        assert.equal(listed !== undefined && 'base' in listed, false, 'list gives no base');
        async function baseAndHead(runId: string) {
          const run = await store.load(runId);
          return [run?.base, run?.head];
        }
      }),
  },
  {
    name: 'bases: queueDecision keeps the base; a run deleted and made again starts with none',
    requires: ['bases'],
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', { ...awaiting('r'), base: '{"b":1}' }, 0);
        assert.equal(await store.queueDecision('r', decisionOn('r'), 1), 2);
        assert.equal((await store.load('r'))?.base, '{"b":1}');
        assert.equal(await store.save('r', write({ from: 1 }), 2), 3);
        assert.equal((await store.load('r'))?.base, '{"b":1}', 'the save that applies the decision keeps it too');
        assert.equal(await store.delete('r'), true);
        await store.save('r', write(), 0);
        assert.equal((await store.load('r'))?.base, null);
      }),
  },
];
