/** The clock's helpers (src/clock.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime } from '../src/clock.js';

describe('isoTime', () => {
  it('writes each millisecond as Date does, however often one repeats and in any order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 30 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        (offsets, base) => {
          for (const offset of offsets) expect(isoTime(base + offset)).toBe(new Date(base + offset).toISOString());
        },
      ),
      { seed: 20261204, numRuns: 200 },
    );
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});
