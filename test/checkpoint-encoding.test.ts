/**
 * The fast paths of the checkpoint codec say exactly what the slow ones would: the encoder that
 * splices cached entry texts, the join of a stored run, and the quick check of history entries.
 */
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepFreeze } from '../machines/index.js';
import {
  canonicalEntry,
  decodeCheckpoint,
  encodeCheckpoint,
  entrySchema,
  joinCheckpoint,
  plainEntry,
} from '../src/checkpoint.js';
import { Agent, CheckpointError } from '../src/index.js';
import { headOf } from '../src/store.js';
import { sequence } from './support/helpers.js';

// Strings that could confuse a splice: the marker's neighbourhood, JSON syntax, NUL, the key.
const tricky = fc.oneof(
  fc.string(),
  fc.constantFrom('"history":[]', 'history', '\u0000', '\u0000tollgate-history-', '],"steps":9,"x":[', '\\u0000'),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(tricky, fc.constant('history')), tie('value'), { maxKeys: 3 }),
  ),
})).value;
const args = fc.dictionary(fc.oneof(tricky, fc.constant('history')), json, { maxKeys: 3 });

const entryArb = fc.oneof(
  fc.record({ role: fc.constant('user'), content: tricky }),
  fc.record({ role: fc.constant('assistant'), tool: tricky, args }),
  fc.record({ role: fc.constant('assistant'), final: json }),
  fc.record({ role: fc.constant('tool'), tool: tricky, result: json }),
  fc.record({ role: fc.constant('tool'), tool: tricky, error: tricky }),
);

/** A run that has `history`, with user data before and after the history key. */
async function runWith(history: object[], answer: unknown) {
  const agent = new Agent({ runId: 'enc', policy: sequence({ final: 'x' }), tools: [] });
  await agent.start('go');
  const run = JSON.parse(agent.checkpoint()).snapshot;
  run.context.history = history;
  run.context.answer = answer;
  return run;
}

describe('encodeCheckpoint', () => {
  it('splices cached entries into exactly what canonicalising the whole run gives', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entryArb, { maxLength: 6 }), json, fc.boolean(), async (entries, answer, freeze) => {
        const history = structuredClone(entries).map((e) => (freeze ? deepFreeze(e) : e));
        const run = await runWith(history, answer);
        const whole = canonicalize({ format: 'tollgate.checkpoint', version: 1, snapshot: run });
        expect(encodeCheckpoint(run)).toBe(whole);
        expect(encodeCheckpoint(run)).toBe(whole); // and again, from the cache
      }),
      { numRuns: 200 },
    );
  });

  it('caches only frozen entries: a mutable entry is encoded as it is now', () => {
    const mutable = { role: 'user', content: 'a' } as { role: 'user'; content: string };
    expect(canonicalEntry(mutable)).toBe('{"content":"a","role":"user"}');
    mutable.content = 'b';
    expect(canonicalEntry(mutable)).toBe('{"content":"b","role":"user"}');
  });
});

describe('joinCheckpoint', () => {
  it('joins a head and entries into the canonical checkpoint', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entryArb, { minLength: 1, maxLength: 6 }), json, async (entries, answer) => {
        const run = await runWith(entries, answer);
        const head = headOf(run);
        const joined = joinCheckpoint(
          head,
          entries.map((e) => canonicalize(e) as string),
        );
        expect(joined).toBe(encodeCheckpoint(run));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a stored entry that is not exactly one JSON object, with a typed error', async () => {
    const run = await runWith([{ role: 'user', content: 'go' }], 'x');
    const head = headOf(run);
    for (const bad of ['{"content":"go","role":"user"}],"steps":99,"x":[{}', '[1]', 'null', '{', '']) {
      const error = (() => {
        try {
          joinCheckpoint(head, [bad]);
        } catch (e) {
          return e;
        }
      })();
      expect(error, bad).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).path).toBe('snapshot.context.history.0');
    }
    expect(() => joinCheckpoint('{"snapshot":', [])).toThrow(CheckpointError);
    expect(() => joinCheckpoint('{"snapshot":{}}', [])).toThrow(/not a checkpoint/);
  });
});

describe('the quick check of history entries', () => {
  // Near-entries: the right and wrong roles, fields of the right and wrong types, extras.
  const field = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }), args);
  const nearEntry = fc.record(
    {
      role: fc.constantFrom('user', 'assistant', 'tool', 'system', 1),
      content: field,
      tool: field,
      args: field,
      final: field,
      result: field,
      error: field,
      outcome: fc.constantFrom('unknown', 'known', 1),
      approval: fc.oneof(
        field,
        fc.constant({ approved: true, by: 'a', note: '', at: '2026-01-01T00:00:00.000Z', callId: 'r:1#1' }),
      ),
      extra: field,
    },
    { requiredKeys: [] },
  );

  it('accepts only entries the schema accepts', () => {
    fc.assert(
      fc.property(nearEntry, (e) => {
        const value = JSON.parse(JSON.stringify(e));
        if (plainEntry(value)) expect(entrySchema.safeParse(value).success).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts the entries a run writes (the fast path is the common path)', () => {
    fc.assert(fc.property(entryArb, (e) => plainEntry(JSON.parse(JSON.stringify(e)))));
  });

  it('leaves the rest to the schema, which words the error', async () => {
    const run = await runWith(
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', tool: 't', args: [1] },
      ],
      'x',
    );
    const blob = canonicalize({ format: 'tollgate.checkpoint', version: 1, snapshot: run }) as string;
    expect(() => decodeCheckpoint(blob)).toThrow(CheckpointError);
    try {
      decodeCheckpoint(blob);
    } catch (e) {
      expect((e as CheckpointError).path).toMatch(/^snapshot\.context\.history\.1/);
    }
  });
});
