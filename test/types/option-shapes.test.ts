/**
 * One definition per options object: a schema written `satisfies OptionShape<Options>` must have
 * a schema for every key of the interface and no other key, or it does not compile. `tsc` checks
 * this file: each `@ts-expect-error` fails the type check if the line it guards ever compiles.
 * The run-time half — the known keys are the schema's, a value is checked by it — runs below.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OptionsError } from '../../src/errors.js';
import { checkOptions, keysOf, type OptionShape } from '../../src/option-schema.js';

interface Options {
  /** A required option. */
  name: string;
  /** An optional one. */
  limit?: number;
}

describe('OptionShape', () => {
  it('holds a schema to its interface, both ways, at compile time', () => {
    const exact = { name: z.string(), limit: z.number().optional() } satisfies OptionShape<Options>;
    // @ts-expect-error a key of the interface has no schema
    const missing = { name: z.string() } satisfies OptionShape<Options>;
    // @ts-expect-error a schema for a key the interface does not have
    const extra = { name: z.string(), limit: z.number().optional(), limt: z.number() } satisfies OptionShape<Options>;
    expect(keysOf(exact)).toEqual(['name', 'limit']);
    expect(keysOf(missing)).toEqual(['name']);
    expect(keysOf(extra)).toHaveLength(3);
  });

  it('checks unknown keys from the schema, then values, in one style', () => {
    const shape = {
      name: z.string({ error: 'a string' }),
      limit: z.number({ error: 'a number' }).optional(),
    } satisfies OptionShape<Options>;
    const value = { name: 'a' };
    expect(checkOptions('make', value, shape)).toBe(value);
    expect(() => checkOptions('make', { name: 'a', limt: 2 }, shape)).toThrow(
      new OptionsError('make: unknown option "limt" (did you mean "limit"?)'),
    );
    expect(() => checkOptions('make', { name: 'a', limit: '2' }, shape)).toThrow(
      new OptionsError('make: limit must be a number, got "2"'),
    );
    expect(() => checkOptions('make', 7, shape)).toThrow(new OptionsError('make: options must be an object, got 7'));
  });
});
