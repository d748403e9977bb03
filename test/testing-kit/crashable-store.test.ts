/**
 * `crashableStore` of tollgate/testing: after `crash()` every call through the store hangs (a dead
 * process reaches nothing), calls made before it settle, `close` still closes, and the original
 * store is untouched: another agent loads the run from it once the dead agent's lease lapses.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { crashableStore, scriptedPolicy } from '../../src/testing/index.js';
import type { Tool } from '../../src/types.js';
import { until } from '../support/helpers.js';

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  return done;
};

describe('crashableStore', () => {
  it('passes calls through until the crash, then hangs every one; the original store answers', async () => {
    const store = new MemoryStore();
    const dying = crashableStore(store);
    expect(await dying.store.list()).toEqual([]);
    const before = dying.store.load('r');
    dying.crash();
    expect(await settled(before)).toBe(true);
    expect(await settled(dying.store.load('r'))).toBe(false);
    expect(await settled(dying.store.list())).toBe(false);
    expect(await settled(dying.store.claim('r', { owner: 'o', leaseMs: 1_000 }))).toBe(false);
    expect(await store.load('r')).toBeNull();
    await dying.store.close();
  });

  it('a run whose process died mid-call is loaded from the original store once the lease lapses', async () => {
    const store = new MemoryStore();
    const dying = crashableStore(store);
    const calls: string[] = [];
    const pay: Tool = {
      name: 'pay',
      idempotent: true,
      fn: (_args, key) => {
        calls.push(key);
        if (calls.length > 1) return 'paid';
        dying.crash();
        return new Promise(() => {});
      },
    };
    const options = { tools: [pay], policy: scriptedPolicy([{ tool: 'pay' }, { final: 'paid' }]) };
    const first = new Agent({ ...options, runId: 'r', store: dying.store, leaseMs: 60 });
    const started = first.start('pay');
    started.catch(() => {});
    await until(() => calls.length === 1);
    expect((await store.load('r'))?.status).toBe('running'); // the write-ahead record, before the call
    const next = await Agent.load(store, 'r', { ...options, leaseWaitMs: 2_000 });
    expect(await next.run()).toBe('done');
    expect(calls).toEqual(['r:1', 'r:1']);
    // The dead agent gives the run up: its lease was not renewed in time.
    await expect(started).rejects.toThrow(/was not renewed in time/);
  });
});
