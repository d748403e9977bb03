/**
 * Writes in the one-call form of earlier versions (`pending: call | null` instead of
 * `pendingCalls`), as code written against it sends them: every store reads them as a list of one
 * or none (checkWrite does it for all). Giving both forms, or neither, is refused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PendingCall, RunWrite } from '../../src/index.js';
import { storesUnderTest } from '../support/stores.js';

const call: PendingCall = {
  id: 'r:1#1',
  key: 'r:1',
  step: 1,
  tool: 'pay',
  args: { cents: 500 },
  attempt: 1,
  requestedAt: '2026-01-01T00:00:00.000Z',
  expiresAt: null,
};
const base = { status: 'awaiting_approval', head: '{}', from: 0, append: [] } as const;
const oneCall = (pending: PendingCall | null) => ({ ...base, pending }) as unknown as RunWrite;

for (const entry of storesUnderTest) {
  const reason = (await entry.unavailable?.()) ?? null;
  describe.skipIf(reason !== null)(`one-call writes: ${entry.name}${reason ? ` (skipped: ${reason})` : ''}`, () => {
    afterAll(() => entry.cleanup());

    it('a write with pending (one call or null) is read as pendingCalls [call] or []', async () => {
      const store = await entry.context().create();
      try {
        expect(await store.save('r', oneCall(call), 0)).toBe(1);
        const run = await store.load('r');
        expect([run?.pendingCalls, run?.pending]).toEqual([[call], call]);
        expect(await store.save('r', oneCall(null), 1)).toBe(2);
        const none = await store.load('r');
        expect([none?.pendingCalls, none?.pending]).toEqual([[], null]);
      } finally {
        await store.close();
      }
    });

    it('both forms at once, or neither, is an OptionsError and nothing is stored', async () => {
      const store = await entry.context().create();
      try {
        const both = { ...base, pending: call, pendingCalls: [call] } as unknown as RunWrite;
        await expect(store.save('r', both, 0)).rejects.toMatchObject({
          name: 'OptionsError',
          message: expect.stringMatching(/^save: give write\.pendingCalls, not also write\.pending/),
        });
        await expect(store.save('r', base as unknown as RunWrite, 0)).rejects.toMatchObject({
          name: 'OptionsError',
          message: expect.stringMatching(/^save: write\.pendingCalls must be an array/),
        });
        expect(await store.load('r')).toBeNull();
      } finally {
        await store.close();
      }
    });
  });
}
