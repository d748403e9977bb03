/**
 * The conformance suite that `tollgate/testing` ships catches the store bugs that would break the
 * promise: here, a renewal that checks the lease's owner but not its fencing token (an owner that
 * claimed its run again could keep a stale lease alive). A correct store passes the same case.
 */
import { describe, expect, it } from 'vitest';
import { type Lease, LeaseLostError } from '../../src/index.js';
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

const context = (make: (now: () => number) => MemoryStore): ConformanceContext => ({
  create: async () => make(Date.now),
  createWithClock: async (now) => make(now),
  skip: { crossProcess: 'in memory', reopen: 'in memory' },
});

const tokenCase = conformanceCases.find((c) => c.name.startsWith('the token fences, not the owner'));

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
});
