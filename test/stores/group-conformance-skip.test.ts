/** The conformance suite's group cases: run for a context that declares group budgets, else skipped saying why. */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/stores/memory.js';
import { conformanceCases, skipReason } from '../../src/testing/index.js';

const groupCases = conformanceCases.filter((c) => c.name.startsWith('group budgets:'));
const base = {
  create: async () => new MemoryStore(),
  createWithClock: async (now: () => number) => new MemoryStore({ now }),
};
const skip = { crossProcess: 'one process', reopen: 'nothing kept' };

describe('group budget cases in the conformance suite', () => {
  it('are skipped, with a reason, for a context that does not declare them: a custom store without them still passes', () => {
    expect(groupCases.length).toBeGreaterThanOrEqual(8);
    for (const c of groupCases) {
      expect(skipReason(c, { ...base, skip })).toMatch(
        /^groupBudgets: an optional capability this store does not declare/,
      );
      expect(skipReason(c, { ...base, skip: { ...skip, groupBudgets: 'none here' } })).toMatch(
        /^groupBudgets: none here|^crossProcess/,
      );
    }
  });

  it('run for a context that declares them (but for the capabilities it lacks)', () => {
    const reasons = groupCases.map((c) => skipReason(c, { ...base, skip, groupBudgets: true }));
    expect(reasons.filter((r) => r === null).length).toBe(groupCases.length - 1);
    expect(reasons.filter((r) => r !== null)).toEqual(['crossProcess: one process']);
  });
});
