/**
 * The checkpoint's own canonical JSON encoder (src/checkpoint/canonical.ts) against the
 * `canonicalize` package it replaced: the same text for every JSON value, and the same refusal
 * (lone surrogates, NaN, infinities), so blobs written before and after are byte-identical.
 */
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../machines/canonical.js';
import { encodeCheckpoint } from '../src/checkpoint/index.js';
import { Agent } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

/** Any UTF-16 text, lone surrogates included. */
const anyText = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 12 })
  .map((units) => String.fromCharCode(...units));
const anyNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    anyText,
    anyNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(anyText, tie('value'), { maxKeys: 6 }),
  ),
}));

/** The text, or the error's message. */
function outcome(encode: (v: unknown) => string | undefined, v: unknown): { text?: string; error?: string } {
  try {
    return { text: encode(v) as string };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('canonicalJson', () => {
  it('writes what canonicalize writes, and refuses what it refuses (seeded)', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(outcome(canonicalJson, v)).toEqual(outcome(canonicalize, v));
      }),
      { seed: 20261203, numRuns: 2_000 },
    );
  });

  it('sorts keys by UTF-16 code units, not by code points or locale', () => {
    const keys = { '\u{1F600}': 1, '\uFF61': 2, a: 3, B: 4, é: 5, '': 6 };
    expect(canonicalJson(keys)).toBe(canonicalize(keys));
    expect(canonicalJson(keys)).toBe('{"":6,"B":4,"a":3,"é":5,"😀":1,"｡":2}');
    // Integer-like keys, which JavaScript enumerates first and in numeric order, sorted as text.
    const numeric = { b: 1, 10: 2, 9: 3, a: 4, 1: 5 };
    expect(Object.keys(numeric)).toEqual(['1', '9', '10', 'b', 'a']);
    expect(canonicalJson(numeric)).toBe('{"1":5,"10":2,"9":3,"a":4,"b":1}');
    // Keys already in order (a parsed checkpoint's) and keys seen before give the same text.
    expect(canonicalJson({ a: 1, b: { a: 2, b: 3 } })).toBe('{"a":1,"b":{"a":2,"b":3}}');
    const long = 'k'.repeat(100);
    expect(canonicalJson({ [long]: 1, a: 2 })).toBe(`{"a":2,"${long}":1}`);
    expect(canonicalJson({ [long]: 1, a: 2 })).toBe(`{"a":2,"${long}":1}`);
  });

  it('writes numbers as ECMAScript does, and refuses NaN, infinities and lone surrogates', () => {
    expect(canonicalJson([1e21, 1e-7, -0, 0.1 + 0.2, 2 ** 53])).toBe(
      '[1e+21,1e-7,0,0.30000000000000004,9007199254740992]',
    );
    expect(() => canonicalJson({ a: Number.NaN })).toThrow('NaN is not allowed');
    expect(() => canonicalJson([Number.POSITIVE_INFINITY])).toThrow('Infinity is not allowed');
    expect(() => canonicalJson({ a: '\uD800' })).toThrow('Lone surrogate is not allowed');
    expect(() => canonicalJson({ '\uDC00': 1 })).toThrow('Lone surrogate is not allowed');
    expect(canonicalJson('\uD83D\uDE00')).toBe('"😀"');
  });

  it('leaves out what JSON has no value for, as JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: Symbol('s'), d: 1 })).toBe('{"d":1}');
    expect(canonicalJson([undefined, () => 1, Symbol('s')])).toBe('[null,null,null]');
    expect(canonicalJson({ toJSON: () => ({ z: 1, a: 2 }) })).toBe('{"a":2,"z":1}');
    expect(canonicalJson(undefined)).toBeUndefined();
  });

  it('encodes a whole run’s checkpoint to the same bytes as canonicalize', async () => {
    const agent = new Agent({
      runId: 'r',
      policy: sequence(
        { tool: 'look', args: { q: 'ß\u{1F600}' } },
        { calls: [{ tool: 'look', args: { n: -0.5 } }] },
        { final: 'ok' },
      ),
      tools: [recorder('look', {}, (args) => ({ echo: args, big: 1e300 })).tool],
    });
    expect(await agent.start('go')).toBe('done');
    const snapshot = JSON.parse(agent.checkpoint()).snapshot;
    expect(encodeCheckpoint(snapshot)).toBe(canonicalize({ format: 'tollgate.checkpoint', version: 5, snapshot }));
  });
});
