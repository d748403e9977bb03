// Found by the crash test (two live children on one store): resuming a run that another, still
// living, process is executing paid a key twice, each time with its own approval. Leases (issue
// 13) make a run's live owner the only one that may work it; reproduced here in one process, on
// every store: memory, file and SQLite always, Postgres when TOLLGATE_PG_URL is set.
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore, LeaseLostError, RunBusyError, type Tool } from '../../src/index.js';
import { gate, idLike, mortal, sequence } from '../support/helpers.js';
import { storesUnderTest } from '../support/stores.js';

/** A ledger and a non-idempotent `pay` tool whose first call waits for `release` before paying. */
function payWorld() {
  const ledger: { key: string; approvedCallId: string | null }[] = [];
  const held = gate();
  let calls = 0;
  const pay: Tool = {
    name: 'pay',
    sideEffect: true,
    fn: async (_args, key, ctx) => {
      if (++calls === 1) await held.promise; // the first process is slow (network, GC pause)
      ledger.push({ key, approvedCallId: ctx.approvedCallId });
      return 'paid';
    },
  };
  return { ledger, pay, release: () => held.resolve(undefined), calls: () => calls };
}

const policy = () => sequence({ tool: 'pay', args: { cents: 500 } }, { final: 'paid' });

// Postgres only when a server is named: this file runs in the fast suite, which needs none.
const stores = storesUnderTest.filter((entry) => entry.name !== 'postgres' || process.env.TOLLGATE_PG_URL);

/** Waits until `check` holds, by the clock: a durable store's writes take real time (I/O, a server). */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition never held in ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** A fresh store of `entry`'s kind for one test, closed after it. */
async function using<T>(entry: (typeof stores)[number], test: (store: CheckpointStore) => Promise<T>): Promise<T> {
  const store = await entry.context().create();
  try {
    return await test(store);
  } finally {
    await store.close();
  }
}

for (const entry of stores) {
  const reason = (await entry.unavailable?.()) ?? null;
  describe.skipIf(reason !== null)(
    `a run another live process is executing: ${entry.name}${reason ? ` (skipped: ${reason})` : ''}`,
    () => {
      afterAll(() => entry.cleanup());

      it('cannot be loaded by a second worker: RunBusyError names the holder, and the run is left to it', async () => {
        await using(entry, async (store) => {
          const { ledger, pay, release, calls } = payWorld();
          const a = new Agent({ runId: 'inv', store, policy: policy(), tools: [pay], owner: 'worker-a' });
          expect(await a.start('pay')).toBe('awaiting_approval');
          const deciding = a.decide(true, 'ok', { callId: a.state.pending?.id as string });
          deciding.catch(() => {}); // it rejects once the process is cut off: asserted below
          await until(() => calls() === 1); // A has saved "inv:1 in flight" and is paying

          // B, a second worker, tries every 'running' run it finds: this one is A's.
          const busy = await Agent.load(store, 'inv', { policy: policy(), tools: [pay] }).catch((e: unknown) => e);
          expect(busy).toBeInstanceOf(RunBusyError);
          expect(busy).toMatchObject({ holder: 'worker-a', until: expect.any(String) });

          release();
          expect(await deciding).toBe('done');
          expect(ledger).toEqual([{ key: 'inv:1', approvedCallId: idLike('inv:1#1') }]);
          // Settled, A gave the run up: B may load it now, and finds it done.
          const b = await Agent.load(store, 'inv', { policy: policy(), tools: [pay] });
          expect(b.status).toBe('done');
        });
      });

      it('a key is paid at most once when the human approves again only after checking the ledger', async () => {
        await using(entry, async (store) => {
          const { ledger, pay, release, calls } = payWorld();
          const a = new Agent({ runId: 'inv', store, policy: policy(), tools: [pay] });
          await a.start('pay');
          const deciding = a.decide(true, 'ok', { callId: a.state.pending?.id as string });
          await until(() => calls() === 1);
          const b = await Agent.load(store, 'inv', { policy: policy(), tools: [pay] }).catch(() => null);
          if (b && (await b.run()) === 'awaiting_approval' && ledger.length === 0) {
            const c = await Agent.load(store, 'inv', { policy: policy(), tools: [pay] });
            await c.decide(true, 'checked the ledger: not paid', { callId: b.state.pending?.id });
          }
          release();
          await deciding;
          expect(ledger.filter((row) => row.key === 'inv:1')).toHaveLength(1);
        });
      });

      it('once its owner is dead (the lease lapsed), another worker takes over with the crash rules', async () => {
        await using(entry, async (shared) => {
          const dying = mortal(shared);
          const { ledger, pay, calls } = payWorld();
          const a = new Agent({ runId: 'inv', store: dying.store, policy: policy(), tools: [pay], leaseMs: 200 });
          await a.start('pay');
          // Settled into a value at once: it rejects when the lease lapses, which may come before the
          // expectation below is reached (an unhandled rejection meanwhile).
          const deciding = a.decide(true, 'ok', { callId: a.state.pending?.id as string }).then(
            (status) => status,
            (error: unknown) => error,
          );
          await until(() => calls() === 1);
          dying.die(); // killed while paying: it never renews its lease again

          const b = await Agent.load(shared, 'inv', { policy: policy(), tools: [pay], leaseWaitMs: 5_000 });
          // A non-idempotent side effect was in flight: a human is asked again, outcome unknown.
          expect(await b.run()).toBe('awaiting_approval');
          expect(b.state.pending).toMatchObject({ id: idLike('inv:1#2'), outcome: 'unknown' });
          expect(ledger).toEqual([]);
          // The dead owner's own call gave up once its lease could no longer be renewed.
          expect(await deciding).toBeInstanceOf(LeaseLostError);
        });
      });
    },
  );
}
