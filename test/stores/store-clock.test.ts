/**
 * The stores' clock rules (src/store/clock.ts): a time a store reads from its clock is one a
 * `Date` can hold, or an `OptionsError` naming the call; `updatedAt` is that time in ISO 8601.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OptionsError } from '../../src/index.js';
import { nowOf, timestampOf } from '../../src/store/clock.js';

const edges = [0, -0, 1.5, -1.5, 8.64e15, -8.64e15, 8.64e15 + 1, -8.64e15 - 1, 1e300, Number.MAX_VALUE];
const bad = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '5', null, undefined, 5n, {}];

describe("a store's clock", () => {
  it('takes exactly the numbers a Date can hold, and writes them as toISOString does', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer(), fc.constantFrom(...edges)), (ms) => {
        const valid = !Number.isNaN(new Date(ms).getTime());
        if (valid) {
          expect(nowOf(() => ms, 'save')).toBe(ms);
          expect(timestampOf(() => ms)).toBe(new Date(ms).toISOString());
        } else {
          expect(() => nowOf(() => ms, 'save')).toThrow(OptionsError);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses what is not a time with an OptionsError naming the call and the value', () => {
    for (const value of [...bad, 8.64e15 + 1]) {
      expect(() => nowOf(() => value as never, 'claim')).toThrow(OptionsError);
      expect(() => nowOf(() => value as never, 'claim')).toThrow(/^claim: the store's now\(\) returned /);
    }
  });
});
