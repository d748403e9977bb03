/**
 * The holder's process, kept with its lease: what a claim (or `claimNext`) gives as `process` is
 * shown on the `RunBusyError` of anyone refused while the lease is held, with the holder's token,
 * so that a claimer on the holder's machine can prove it dead and release exactly that lease.
 */
import assert from 'node:assert/strict';
import type { RunBusyError } from '../../errors.js';
import type { ProcessIdentity } from '../../process-identity.js';
import type { CheckpointStore, Lease } from '../../store/contract.js';
import { optionsError, withClock, withStore, write } from './fixtures.js';
import type { ConformanceCase } from './types.js';

/** A process as a claim on a Linux host records it; `pid` tells two apart. */
export const processOn = (pid: number, over: Partial<ProcessIdentity> = {}): ProcessIdentity => ({
  host: 'host-a',
  bootId: '2f6c1c0e-8a4b-4c36-9d1e-5b7f0a3e9c21',
  pidNamespace: '4026531836',
  pid,
  startTime: String(100_000 + pid),
  ...over,
});

/** The `RunBusyError` of a claim of `runId` by `owner`, which must be refused. */
async function refusal(store: CheckpointStore, runId: string, owner = 'worker-z'): Promise<RunBusyError> {
  const error = await store.claim(runId, { owner, leaseMs: 1_000 }).then(
    () => assert.fail(`the claim of ${runId} by ${owner} should be refused`),
    (e: unknown) => e as RunBusyError,
  );
  assert.equal(error?.name, 'RunBusyError', `expected a RunBusyError, got ${String(error)}`);
  return error;
}

/** The lease a `RunBusyError` names, as `release` takes it: only its token decides. */
const heldLease = (runId: string, busy: RunBusyError): Lease => ({
  runId,
  owner: busy.holder,
  token: busy.token as number,
  expiresAt: busy.until,
  leaseMs: 1,
});

export const holderCases: ConformanceCase[] = [
  {
    name: 'the holder’s process: a claim keeps it with the lease; a refused claim, save or delete shows it (holderProcess) with the holder’s token; renew and save keep it; a claim without one shows null',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000, process: processOn(41) });
        const seen = await refusal(store, 'r');
        assert.deepEqual([seen.holder, seen.token, seen.holderProcess], ['worker-a', a.token, processOn(41)]);
        assert.equal(await store.save('r', write(), 0, a), 1);
        clock.now += 500;
        await store.renew(a);
        const busySave = await store.save('r', write(), 1).then(
          () => assert.fail('a save without a lease under a live one'),
          (e: RunBusyError) => e,
        );
        assert.deepEqual(
          [busySave.name, busySave.token, busySave.holderProcess],
          ['RunBusyError', a.token, processOn(41)],
        );
        const busyDelete = await store.delete('r').catch((e: RunBusyError) => e);
        assert.deepEqual((busyDelete as RunBusyError).holderProcess, processOn(41));
        assert.deepEqual((await refusal(store, 'r')).holderProcess, processOn(41));

        // Lapsed and claimed by another owner that gives no process: the old one is forgotten.
        clock.now += 1_000;
        const b = await store.claim('r', { owner: 'worker-b', leaseMs: 1_000 });
        const now = await refusal(store, 'r');
        assert.deepEqual([now.holder, now.token, now.holderProcess], ['worker-b', b.token, null]);
        // Released, then claimed anew with another process: that one is shown.
        assert.equal(await store.release(b), true);
        const c = await store.claim('r', { owner: 'worker-c', leaseMs: 1_000, process: processOn(43) });
        assert.deepEqual((await refusal(store, 'r')).holderProcess, processOn(43));
        assert.equal(c.token, 3);
      }),
  },
  {
    name: 'claimNext keeps the claiming process with the lease too',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', write({ agent: 'refunds' }), 0);
        const next = await store.claimNext({
          owner: 'worker-w',
          leaseMs: 60_000,
          agents: ['refunds'],
          process: processOn(7),
        });
        assert.equal(next?.run.runId, 'r');
        const seen = await refusal(store, 'r');
        assert.deepEqual([seen.holder, seen.token, seen.holderProcess], ['worker-w', next?.lease.token, processOn(7)]);
      }),
  },
  {
    name: 'a holder’s lease is released by the token its RunBusyError names — and only while it is current: after another owner’s claim that release changes nothing',
    requires: ['clock'],
    run: (ctx) =>
      withClock(ctx, async (store, clock) => {
        const a = await store.claim('r', { owner: 'worker-a', leaseMs: 1_000, process: processOn(41) });
        await store.save('r', write(), 0, a);
        const seen = await refusal(store, 'r');
        // worker-z finds the holder dead and releases exactly its lease: then it claims at once.
        assert.equal(await store.release(heldLease('r', seen)), true);
        const z = await store.claim('r', { owner: 'worker-z', leaseMs: 1_000, process: processOn(42) });
        assert.equal(z.token, a.token + 1);
        // Another claimer that saw the same holder, late: its release finds another token and changes nothing.
        assert.equal(await store.release(heldLease('r', seen)), false);
        assert.deepEqual((await refusal(store, 'r', 'worker-y')).holderProcess, processOn(42));
        assert.equal(await store.save('r', write(), 1, z), 2);
        clock.now += 1_000; // z's lease lapsed, nobody claimed: a release by its token still frees it
        assert.equal(await store.release(heldLease('r', { ...seen, token: z.token } as RunBusyError)), true);
        await assert.rejects(store.save('r', write(), 2, z), { name: 'LeaseLostError' });
      }),
  },
  {
    name: 'the holder’s process survives a reopen of the store',
    requires: ['reopen'],
    run: async (ctx) => {
      const first = await ctx.create();
      await first.claim('r', { owner: 'worker-a', leaseMs: 60_000, process: processOn(41) });
      await first.close();
      const again = await (ctx.reopen as NonNullable<typeof ctx.reopen>)(first);
      try {
        assert.deepEqual((await refusal(again, 'r')).holderProcess, processOn(41));
      } finally {
        await again.close();
      }
    },
  },
  {
    name: 'a process that is not one is refused (OptionsError) by claim and claimNext, and nothing is claimed',
    run: (ctx) =>
      withStore(ctx, async (store) => {
        await store.save('r', write({ agent: 'refunds' }), 0);
        const bad: [unknown, RegExp][] = [
          ['me', /process must be \{ host, bootId, pidNamespace, pid, startTime \} or null/],
          [{ ...processOn(1), cwd: '/' }, /unknown process field "cwd"/],
          [{ ...processOn(1), host: '' }, /process\.host must be a non-empty string/],
          [{ ...processOn(1), bootId: 7 }, /process\.bootId must be/],
          [{ ...processOn(1), pid: 0 }, /process\.pid must be a whole number ≥ 1/],
          [{ ...processOn(1), startTime: '12s' }, /process\.startTime must be decimal digits/],
          [{ ...processOn(1), pidNamespace: 'ns\u0000' }, /process\.pidNamespace must be/],
        ];
        for (const [process, pattern] of bad) {
          await assert.rejects(
            store.claim('r', { owner: 'a', leaseMs: 1_000, process } as never),
            optionsError(pattern),
          );
          await assert.rejects(
            store.claimNext({ owner: 'a', leaseMs: 1_000, agents: ['refunds'], process } as never),
            optionsError(pattern),
          );
        }
        // Fields a platform cannot read are null, and kept as such.
        const unknown = processOn(9, { bootId: null, pidNamespace: null, startTime: null });
        await store.claim('r', { owner: 'a', leaseMs: 60_000, process: unknown });
        assert.deepEqual((await refusal(store, 'r')).holderProcess, unknown);
      }),
  },
];
