/**
 * The runtime's side of a lease (src/runtime/lease.ts), on the in-memory store and the real
 * clock: it claims (waiting if asked), renews by a third of the lease while it works, tells its
 * run when the lease is lost, and gives the run up when asked. The stores' own lease rules are in
 * test/stores/conformance.int.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseLostError, RunBusyError, StoreUnavailableError, thisProcess } from '../src/index.js';
import { LeaseHolder, monotonic } from '../src/runtime/lease.js';
import type { CheckpointStore, Lease } from '../src/store/contract.js';
import { MemoryStore } from '../src/stores/memory.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A memory store that counts renewals. */
function counting() {
  const store = new MemoryStore();
  const renew = store.renew.bind(store);
  const seen = { renewals: 0 };
  store.renew = (lease: Lease, ms?: number) => {
    seen.renewals++;
    return renew(lease, ms);
  };
  return { store, seen };
}

describe('LeaseHolder', () => {
  it('claims on first use, then renews every third of the lease, so another owner cannot take the run', async () => {
    const { store, seen } = counting();
    const lost: unknown[] = [];
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 300, waitMs: 0 }, (e) => lost.push(e));
    expect(holder.lease).toBeNull();
    const lease = await holder.current();
    expect(lease).toMatchObject({ runId: 'r', owner: 'a' });
    expect(await holder.current()).toBe(lease); // the same lease while held
    await pause(700);
    await expect(store.claim('r', { owner: 'b', leaseMs: 90 })).rejects.toBeInstanceOf(RunBusyError);
    // About 700 / 100 renewals: a third of the lease each, not a millisecond each, not three leases each.
    expect(seen.renewals).toBeGreaterThanOrEqual(3);
    expect(seen.renewals).toBeLessThan(20);
    expect(lost).toEqual([]);
    await holder.release();
    const after = seen.renewals;
    await pause(100);
    expect(seen.renewals).toBe(after); // released: no more renewals
    expect(holder.lease).toBeNull();
    await store.claim('r', { owner: 'b', leaseMs: 90 }); // free at once
  });

  it('waits for another owner to release when waitMs is given, and fails at once when it is not', async () => {
    const store = new MemoryStore();
    const other = await store.claim('r', { owner: 'other', leaseMs: 60_000 });
    const impatient = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 1_000, waitMs: 0 }, () => {});
    await expect(impatient.current()).rejects.toBeInstanceOf(RunBusyError);
    const patient = new LeaseHolder(store, 'r', { owner: 'b', leaseMs: 1_000, waitMs: 2_000 }, () => {});
    setTimeout(() => void store.release(other), 50);
    expect(await patient.current()).toMatchObject({ owner: 'b' });
    await patient.release();
  });

  it('claims over a holder that is provably dead on this machine at once (releasing exactly its lease), never over a live one', async () => {
    const store = new MemoryStore();
    const me = thisProcess();
    const dead = { ...me, startTime: String(Number(me.startTime) + 1) }; // our pid, now a newer process
    const ghost = await store.claim('r', { owner: 'ghost', leaseMs: 60_000, process: dead });
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, () => {});
    expect(await holder.current()).toMatchObject({ owner: 'a', token: ghost.token + 1 });
    const other = new LeaseHolder(store, 'r', { owner: 'b', leaseMs: 60_000, waitMs: 0 }, () => {});
    await expect(other.current()).rejects.toMatchObject({ name: 'RunBusyError', holder: 'a', holderProcess: me });
    await holder.release();
  });

  it('a lease lost to another owner: the run is told once, the holder holds nothing and stops renewing', async () => {
    const { store, seen } = counting();
    const lost: unknown[] = [];
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60, waitMs: 0 }, (e) => lost.push(e));
    const lease = await holder.current();
    await store.release(lease);
    await store.claim('r', { owner: 'b', leaseMs: 60_000 });
    for (let i = 0; i < 100 && lost.length === 0; i++) await pause(10);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toBeInstanceOf(LeaseLostError);
    expect(holder.lease).toBeNull();
    const after = seen.renewals;
    await pause(100);
    expect(seen.renewals).toBe(after);
    expect(lost).toHaveLength(1);
  });

  it('adopts a lease claimed elsewhere, and remembers a longer one a save gave it, of the same token only', async () => {
    const store = new MemoryStore();
    const claimed = await store.claim('r', { owner: 'a', leaseMs: 60_000 });
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, () => {});
    holder.adopt(claimed);
    expect(holder.lease).toBe(claimed);
    const longer = { ...claimed, expiresAt: '2999-01-01T00:00:00.000Z' };
    holder.extended(longer);
    expect(holder.lease).toBe(longer);
    holder.extended({ ...claimed, token: claimed.token + 1 });
    expect(holder.lease).toBe(longer);
    await holder.release();
    holder.extended(longer); // nothing held: nothing to extend
    expect(holder.lease).toBeNull();
    await holder.release(); // twice is harmless
  });

  it('keeps one renewal in flight at a time, even when the store answers slower than the renewal period', async () => {
    const store = new MemoryStore();
    const renew = store.renew.bind(store);
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    store.renew = async (lease: Lease, ms?: number) => {
      calls++;
      inFlight++;
      most = Math.max(most, inFlight);
      await pause(70); // over a period of a 150 ms lease (50 ms), within the lease
      inFlight--;
      return renew(lease, ms);
    };
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 150, waitMs: 0 }, () => {});
    await holder.current();
    await pause(400);
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(most).toBe(1);
    await holder.release();
  });

  it('a release while a renewal is in flight waits for it, gives the run up, and reports no loss', async () => {
    const store = new MemoryStore();
    const renew = store.renew.bind(store);
    let started: () => void = () => {};
    const renewing = new Promise<void>((resolve) => {
      started = resolve;
    });
    store.renew = async (lease: Lease, ms?: number) => {
      started();
      await pause(80);
      return renew(lease, ms);
    };
    const lost: unknown[] = [];
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60, waitMs: 0 }, (e) => lost.push(e));
    await holder.current();
    await renewing;
    await holder.release();
    // The renewal's answer did not bring the lease back, and the run is free for another owner at once.
    expect(holder.lease).toBeNull();
    await pause(100);
    expect(holder.lease).toBeNull();
    expect(lost).toEqual([]);
    await expect(store.claim('r', { owner: 'b', leaseMs: 60_000 })).resolves.toMatchObject({ owner: 'b' });
  });

  it('its renewal timer does not keep the process alive, and is gone once the run is given up', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const store = new MemoryStore();
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, () => {});
    const before = timers();
    await holder.current();
    expect(timers()).toBe(before); // unref'd
    await holder.release();
    expect(timers()).toBe(before);
  });

  describe('on fake interval timers', () => {
    afterEach(() => {
      vi.useRealTimers();
    });
    const fake = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });

    /** A store over `inner` that counts the calls made to it (not those `inner` makes to itself). */
    function counted(inner: MemoryStore, many = true) {
      const calls = { renew: 0, renewMany: [] as number[] };
      const store: CheckpointStore = {
        load: (runId) => inner.load(runId),
        save: (...args) => inner.save(...args),
        list: (options) => inner.list(options),
        delete: (...args) => inner.delete(...args),
        claim: (...args) => inner.claim(...args),
        renew: (...args) => {
          calls.renew++;
          return inner.renew(...args);
        },
        ...(many
          ? {
              renewMany: (leases: readonly Lease[], ms?: number) => {
                calls.renewMany.push(leases.length);
                return inner.renewMany(leases, ms);
              },
            }
          : {}),
        release: (lease) => inner.release(lease),
        queueDecision: (...args) => inner.queueDecision(...args),
        claimNext: (options) => inner.claimNext(options),
        close: () => inner.close(),
      };
      return { store, calls };
    }

    it('renews every lease this process holds on a store with one length in one call per interval, not one per lease', async () => {
      fake();
      const inner = new MemoryStore();
      const { store, calls } = counted(inner);
      const lost: unknown[] = [];
      const holders = Array.from(
        { length: 20 },
        (_, i) => new LeaseHolder(store, `r${i}`, { owner: 'a', leaseMs: 300, waitMs: 0 }, (e) => lost.push(e)),
      );
      const longer = Array.from(
        { length: 5 },
        (_, i) => new LeaseHolder(store, `s${i}`, { owner: 'a', leaseMs: 600, waitMs: 0 }, () => {}),
      );
      for (const holder of [...holders, ...longer]) await holder.current();
      expect(vi.getTimerCount()).toBe(2); // one per lease length, not one per lease
      await vi.advanceTimersByTimeAsync(1_000);
      // Every 100 ms one call for the twenty 300 ms leases; every 200 ms one for the five 600 ms ones.
      expect(calls.renewMany.filter((n) => n === 20)).toHaveLength(10);
      expect(calls.renewMany.filter((n) => n === 5)).toHaveLength(5);
      expect(calls.renew).toBe(0);

      // One lease taken by another owner: that holder alone is told, the others go on in the next call.
      await inner.release(holders[0]?.lease as Lease);
      await inner.claim('r0', { owner: 'b', leaseMs: 60_000 });
      calls.renewMany.length = 0;
      await vi.advanceTimersByTimeAsync(200);
      expect(lost).toHaveLength(1);
      expect(lost[0]).toBeInstanceOf(LeaseLostError);
      expect(holders[0]?.lease).toBeNull();
      expect(calls.renewMany.filter((n) => n === 20 || n === 19)).toEqual([20, 19]);
      for (const holder of [...holders, ...longer]) await holder.release();
      expect(vi.getTimerCount()).toBe(0);
    });

    it('a renewal the store fails (not a refusal) costs no lease: tried again next interval, given up only once none was accepted within the lease', async () => {
      fake();
      const inner = new MemoryStore();
      const { store, calls } = counted(inner);
      let failing = true;
      store.renewMany = (leases, ms) => {
        calls.renewMany.push(leases.length);
        return failing
          ? Promise.reject(new StoreUnavailableError('the server went away'))
          : inner.renewMany(leases, ms);
      };
      const lost: unknown[] = [];
      const holders = ['a', 'b'].map(
        (id) => new LeaseHolder(store, id, { owner: 'o', leaseMs: 60_000, waitMs: 0 }, (e) => lost.push(e)),
      );
      for (const holder of holders) await holder.current();
      await vi.advanceTimersByTimeAsync(20_000); // one failed call
      expect(calls.renewMany).toEqual([2]);
      expect(lost).toEqual([]);
      expect(holders.map((h) => h.lease?.owner)).toEqual(['o', 'o']);
      failing = false;
      await vi.advanceTimersByTimeAsync(20_000);
      expect(calls.renewMany).toEqual([2, 2]);
      expect(lost).toEqual([]);
      for (const holder of holders) await holder.release();
    });

    it('on a store without renewMany: one renew per lease and interval, still by one timer', async () => {
      fake();
      const { store, calls } = counted(new MemoryStore(), false);
      const holders = ['a', 'b', 'c'].map(
        (id) => new LeaseHolder(store, id, { owner: 'o', leaseMs: 300, waitMs: 0 }, () => {}),
      );
      for (const holder of holders) await holder.current();
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(300);
      expect(calls.renew).toBe(9);
      for (const holder of holders) await holder.release();
      expect(vi.getTimerCount()).toBe(0);
    });

    it('an adopted lease is not renewed until the run is worked; then at once, and by one timer however often', async () => {
      fake();
      const { store, seen } = counting();
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 300, waitMs: 0 }, () => {});
      const lease = await store.claim('r', { owner: 'a', leaseMs: 300 });
      holder.adopt(lease);
      holder.adopt(lease);
      expect(vi.getTimerCount()).toBe(0); // loaded, not worked: left alone it lapses, as a dead owner's would
      await vi.advanceTimersByTimeAsync(200);
      expect(seen.renewals).toBe(0);
      await holder.keep(); // worked: confirmed now
      await holder.keep();
      expect(seen.renewals).toBe(1);
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(seen.renewals).toBe(11); // and every 100 ms, by one timer
      expect(holder.lease).not.toBe(lease);
      expect(holder.lease).toMatchObject({ token: lease.token, owner: 'a' });
      await holder.release();
      expect(vi.getTimerCount()).toBe(0);
    });

    it('given up while keep() confirms the lease: no renewal timer is left behind', async () => {
      fake();
      const { store } = counting();
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 300, waitMs: 0 }, () => {});
      holder.adopt(await store.claim('r', { owner: 'a', leaseMs: 300 }));
      const keeping = holder.keep();
      await holder.release();
      await keeping;
      expect(holder.lease).toBeNull();
      expect(vi.getTimerCount()).toBe(0);
    });

    it('stops its timer when the lease is lost, and keeps one when it claims again', async () => {
      fake();
      const { store, seen } = counting();
      const lost: unknown[] = [];
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 300, waitMs: 0 }, (e) => lost.push(e));
      const first = await holder.current();
      await store.release(first); // taken from under it: the next renewal fails
      await vi.advanceTimersByTimeAsync(100);
      expect(lost).toHaveLength(1);
      expect(vi.getTimerCount()).toBe(0);
      const renewalsAtLoss = seen.renewals;
      await holder.current(); // claims anew
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(300);
      expect(seen.renewals - renewalsAtLoss).toBe(3);
      await holder.release();
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  it('an adopted lease taken meanwhile: keep() throws LeaseLostError, holds nothing and starts no timer', async () => {
    const store = new MemoryStore();
    const lost: unknown[] = [];
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, (e) => lost.push(e));
    const lease = await store.claim('r', { owner: 'a', leaseMs: 60_000 });
    holder.adopt(lease);
    await store.release(lease);
    await store.claim('r', { owner: 'b', leaseMs: 60_000 });
    await expect(holder.keep()).rejects.toBeInstanceOf(LeaseLostError);
    expect(holder.lease).toBeNull();
    expect(lost).toEqual([]); // thrown to the caller, not reported as a loss while working
    await holder.keep(); // nothing held: nothing to do
  });

  it('giving up a run it does not hold asks the store nothing', async () => {
    const store = new MemoryStore();
    let releases = 0;
    const release = store.release.bind(store);
    store.release = (lease: Lease) => {
      releases++;
      return release(lease);
    };
    const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 1_000, waitMs: 0 }, () => {});
    await holder.release();
    expect(releases).toBe(0);
    await holder.current();
    await holder.release();
    expect(releases).toBe(1);
  });

  describe('the lease a side effect starts under', () => {
    /** Blocks this process for `ms` (nothing runs meanwhile), as SIGSTOP or a long GC pause would. */
    const freeze = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

    it('is the one the last save confirmed when that save was sent for the call; else a renewal is made first', async () => {
      const { store, seen } = counting();
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, () => {});
      const since = monotonic();
      const lease = await holder.current(); // claimed after `since`: that confirms it
      expect(await holder.fence(since)).toBe(lease);
      expect(seen.renewals).toBe(0);
      // A call whose write-ahead save was skipped (nothing changed): confirmed by a renewal now.
      const later = monotonic() + 1;
      while (monotonic() < later) await pause(1);
      const renewed = await holder.fence(later);
      expect(seen.renewals).toBe(1);
      expect(renewed.token).toBe(lease.token);
      expect(holder.fenceNow()).toBe(renewed);
      holder.saved(renewed, monotonic()); // a save, sent now, confirms it too
      expect(holder.left).toBeGreaterThan(59_000);
      await holder.release();
    });

    it('paused past its lease after the check: the check right before the call refuses, the run is told once, nothing is held', async () => {
      const store = new MemoryStore();
      const lost: unknown[] = [];
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 150, waitMs: 0 }, (e) => lost.push(e));
      const since = monotonic();
      await holder.current();
      await holder.fence(since);
      freeze(160); // frozen after the write-ahead save was confirmed: the lease may be anyone's now
      expect(() => holder.fenceNow()).toThrow(LeaseLostError);
      expect(() => holder.fenceNow()).toThrow(/a side effect was not started/);
      expect(holder.lease).toBeNull();
      expect(lost).toHaveLength(2); // each refusal tells the run (stopping it twice is harmless)
      expect(lost[0]).toBeInstanceOf(LeaseLostError);
    });

    it('paused for less than two thirds of it: the call may start; past that, the margin refuses it', async () => {
      const store = new MemoryStore();
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 600, waitMs: 0 }, () => {});
      const since = monotonic();
      await holder.current();
      await holder.fence(since);
      freeze(100);
      expect(holder.fenceNow().owner).toBe('a');
      freeze(350); // 450 of 600 ms gone: less than a third left
      expect(() => holder.fenceNow()).toThrow(/only \d+ ms of its 600 ms lease was left/);
    });

    it('a renewal the store never answers: the holder gives the run up once the lease has run out on its clock', async () => {
      const store = new MemoryStore();
      const lost: unknown[] = [];
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 90, waitMs: 0 }, (e) => lost.push(e));
      await holder.current();
      store.renew = () => new Promise<Lease>(() => {}); // the connection hangs
      for (let i = 0; i < 50 && lost.length === 0; i++) await pause(10);
      expect(lost).toHaveLength(1);
      expect(String(lost[0])).toMatch(/was not renewed in time/);
      expect(holder.lease).toBeNull();
      await holder.release();
    });

    it('renewals the store keeps failing: the holder gives the run up once the lease has run out on its clock', async () => {
      const store = new MemoryStore();
      const lost: unknown[] = [];
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 90, waitMs: 0 }, (e) => lost.push(e));
      await holder.current();
      store.renewMany = () => Promise.reject(new StoreUnavailableError('the server went away'));
      for (let i = 0; i < 50 && lost.length === 0; i++) await pause(10);
      expect(lost).toHaveLength(1);
      expect(String(lost[0])).toMatch(/was not renewed in time/);
      expect(holder.lease).toBeNull();
    });

    it('a lease taken by another owner: fence() throws LeaseLostError and the run is told', async () => {
      const store = new MemoryStore();
      const lost: unknown[] = [];
      const holder = new LeaseHolder(store, 'r', { owner: 'a', leaseMs: 60_000, waitMs: 0 }, (e) => lost.push(e));
      const lease = await holder.current();
      await store.release(lease);
      await store.claim('r', { owner: 'b', leaseMs: 60_000 });
      await expect(holder.fence(monotonic() + 1)).rejects.toBeInstanceOf(LeaseLostError);
      expect(lost).toHaveLength(1);
      expect(holder.lease).toBeNull();
    });
  });
});
