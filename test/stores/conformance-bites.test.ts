/**
 * The conformance suite that `tollgate/testing` ships catches the store bugs that would break the
 * promise: here, a renewal that checks the lease's owner but not its fencing token (an owner that
 * claimed its run again could keep a stale lease alive), and an `open` that leaves a run at rest
 * claimed (a load would hold the run from everyone else until its lease lapsed). A correct store
 * passes the same cases.
 */
import { describe, expect, it } from 'vitest';
import { type Lease, LeaseLostError } from '../../src/index.js';
import type { CheckedClaim } from '../../src/store/checked.js';
import type { OpenedRun } from '../../src/store/contract.js';
import { MemoryStore } from '../../src/stores/memory.js';
import type { ConformanceContext } from '../../src/testing/conformance/types.js';
import { conformanceCases } from '../../src/testing/index.js';

/** A memory store whose renew and release accept any lease of the run's current owner. */
class OwnerOnlyStore extends MemoryStore {
  override async renew(lease: Lease, leaseMs?: number): Promise<Lease> {
    try {
      return await super.renew(lease, leaseMs);
    } catch (error) {
      if (!(error instanceof LeaseLostError) || error.holder !== lease.owner || error.currentToken === null)
        throw error;
      const renewed = await super.renew({ ...lease, token: error.currentToken }, leaseMs);
      return { ...renewed, token: lease.token };
    }
  }
}

/** A memory store whose `open` claims and reads every run, and gives a run at rest up to no one. */
class ClaimingOpenStore extends MemoryStore {
  protected override async openChecked(runId: string, claim: CheckedClaim): Promise<OpenedRun | null> {
    const lease = await this.claim(runId, { owner: claim.owner, leaseMs: claim.leaseMs });
    const run = await this.load(runId);
    return run && { run, lease: run.status === 'running' ? lease : null, group: null };
  }
}

const context = (make: (now: () => number) => MemoryStore): ConformanceContext => ({
  create: async () => make(Date.now),
  createWithClock: async (now) => make(now),
  open: true,
  skip: { crossProcess: 'in memory', reopen: 'in memory' },
});

const tokenCase = conformanceCases.find((c) => c.name.startsWith('the token fences, not the owner'));
const openCase = conformanceCases.find((c) => c.name.startsWith('open: a run at rest is read as load reads it'));

describe('the conformance suite bites', () => {
  it('a renewal that checks the owner but not the token fails it', async () => {
    expect(tokenCase).toBeDefined();
    await expect(tokenCase?.run(context((now) => new OwnerOnlyStore({ now })))).rejects.toThrow(
      /Missing expected rejection/,
    );
  });

  it('the memory store passes the same case', async () => {
    await tokenCase?.run(context((now) => new MemoryStore({ now })));
  });

  it('an open that leaves a run at rest claimed fails it: the next claim is refused', async () => {
    expect(openCase).toBeDefined();
    await expect(openCase?.run(context((now) => new ClaimingOpenStore({ now })))).rejects.toThrow(
      /^claim: run "rest" is held by "worker-b"/,
    );
  });

  it('the memory store passes the open case', async () => {
    await openCase?.run(context((now) => new MemoryStore({ now })));
  });
});
