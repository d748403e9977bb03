/**
 * The fast paths of the checkpoint codec say exactly what the slow ones would: the encoder that
 * splices cached entry texts, the join of a stored run, and the quick check of history entries.
 */
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepFreeze } from '../machines/index.js';
import {
  CHECKPOINT_FORMAT,
  CHECKPOINT_VERSION,
  canonicalEntry,
  decodeCheckpoint,
  encodeCheckpoint,
  entrySchema,
  headOf,
  joinRun,
  plainEntry,
} from '../src/checkpoint/index.js';
import { Agent, CheckpointError } from '../src/index.js';
import { sequence } from './support/helpers.js';

// Strings that could confuse a splice: the marker's neighbourhood, JSON syntax, NUL, the key.
const tricky = fc.oneof(
  fc.string(),
  fc.constantFrom('"history":[]', 'history', '\u0000', '\u0000tollgate-history-', '],"steps":9,"x":[', '\\u0000'),
);
const key = fc.oneof(tricky, fc.constant('history'));
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 3 }),
  ),
})).value;
const args = fc.dictionary(key, json, { maxKeys: 3 });
const iso = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** An approval record as a run writes it: plain, edited, standing (always), under a standing grant. */
const approvalArb = fc.record(
  {
    approved: fc.boolean(),
    by: tricky,
    note: tricky,
    at: iso,
    callId: tricky,
    args,
    always: fc.constant(true as const),
    standing: tricky,
  },
  { requiredKeys: ['approved', 'by', 'note', 'at', 'callId'] },
);

/** Entries without approvals or several calls: what the quick check takes. */
const plainEntryArb = fc.oneof(
  fc.record({ role: fc.constant('user'), content: tricky }),
  fc.record(
    { role: fc.constant('assistant'), tool: tricky, args, id: tricky, text: tricky },
    { requiredKeys: ['role', 'tool', 'args'] },
  ),
  fc.record({ role: fc.constant('assistant'), final: json }),
  fc.record(
    { role: fc.constant('tool'), tool: tricky, result: json, id: tricky },
    { requiredKeys: ['role', 'tool', 'result'] },
  ),
  fc.record(
    { role: fc.constant('tool'), tool: tricky, error: tricky, id: tricky, outcome: fc.constant('unknown' as const) },
    { requiredKeys: ['role', 'tool', 'error'] },
  ),
);

/** A summary entry alone (a run's history puts it where the rules allow: see the compaction tests). */
const summaryArb = fc.record({
  role: fc.constant('summary'),
  text: fc.string({ minLength: 1 }),
  covers: fc.record({ from: fc.constant(1), to: fc.integer({ min: 1, max: 2 ** 31 }) }),
});

/** Every entry shape a version-2 run writes. */
const entryArb = fc.oneof(
  plainEntryArb,
  fc.record(
    {
      role: fc.constant('assistant'),
      calls: fc.array(fc.record({ id: tricky, tool: tricky, args }), { minLength: 2, maxLength: 3 }),
      text: tricky,
    },
    { requiredKeys: ['role', 'calls'] },
  ),
  fc.record(
    { role: fc.constant('tool'), tool: tricky, result: json, id: tricky, approval: approvalArb },
    { requiredKeys: ['role', 'tool', 'result', 'approval'] },
  ),
  fc.record(
    {
      role: fc.constant('tool'),
      tool: tricky,
      error: tricky,
      id: tricky,
      approval: approvalArb,
      outcome: fc.constant('unknown' as const),
    },
    { requiredKeys: ['role', 'tool', 'error', 'approval'] },
  ),
);

/**
 * A step call with user data in it: its context key `calls` sorts before `history`, and
 * `standing` after it, so user data lands on both sides of the spliced history.
 */
const callArb = fc.record({
  id: tricky,
  key: tricky,
  step: fc.nat(),
  index: fc.nat(),
  toolCallId: tricky,
  modelId: fc.boolean(),
  tool: tricky,
  args,
  attempt: fc.nat(),
  state: fc.constantFrom('queued', 'pending', 'running', 'done'),
  requestedAt: fc.option(iso),
  expiresAt: fc.option(iso),
  outcome: fc.constantFrom(null, 'unknown'),
  approval: fc.option(approvalArb),
  done: fc.option(fc.oneof(fc.record({ result: json }), fc.record({ error: tricky }))),
});
const standingArb = fc.dictionary(key, approvalArb, { maxKeys: 2 });

/** A run that has `history`, with user data before and after the history key. */
async function runWith(history: object[], answer: unknown, calls: object[] = [], standing: object = {}) {
  const agent = new Agent({ runId: 'enc', policy: sequence({ final: 'x' }), tools: [] });
  await agent.start('go');
  const run = JSON.parse(agent.checkpoint()).snapshot;
  run.context.history = history;
  run.context.answer = answer;
  run.context.calls = calls;
  run.context.standing = standing;
  return run;
}

const whole = (run: unknown) => canonicalize({ format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, snapshot: run });

describe('encodeCheckpoint', () => {
  it('splices cached entries into exactly what canonicalising the whole run gives', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entryArb, { maxLength: 6 }),
        json,
        fc.array(callArb, { maxLength: 3 }),
        standingArb,
        fc.boolean(),
        async (entries, answer, calls, standing, freeze) => {
          const history = structuredClone(entries).map((e) => (freeze ? deepFreeze(e) : e));
          const run = await runWith(history, answer, calls, standing);
          expect(encodeCheckpoint(run)).toBe(whole(run));
          expect(encodeCheckpoint(run)).toBe(whole(run)); // and again, from the cache
        },
      ),
      { numRuns: 200 },
    );
  });

  it('writes version 5', async () => {
    const run = await runWith([{ role: 'user', content: 'go' }], 'x');
    expect(JSON.parse(encodeCheckpoint(run)).version).toBe(5);
    expect(JSON.parse(headOf(run)).h).toBe(5); // a store's head: compact, with its version
    expect(JSON.parse(joinRun(headOf(run), [])).version).toBe(5);
  });

  it('caches only frozen entries: a mutable entry is encoded as it is now', () => {
    const mutable = { role: 'user', content: 'a' } as { role: 'user'; content: string };
    expect(canonicalEntry(mutable)).toBe('{"content":"a","role":"user"}');
    mutable.content = 'b';
    expect(canonicalEntry(mutable)).toBe('{"content":"b","role":"user"}');
  });
});

describe('joinRun', () => {
  it('joins a head and entries into the canonical checkpoint', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entryArb, { minLength: 1, maxLength: 6 }),
        json,
        fc.array(callArb, { maxLength: 3 }),
        standingArb,
        async (entries, answer, calls, standing) => {
          const run = await runWith(entries, answer, calls, standing);
          const head = headOf(run);
          const joined = joinRun(
            head,
            entries.map((e) => canonicalize(e) as string),
          );
          expect(joined).toBe(encodeCheckpoint(run));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('refuses a stored entry that is not exactly one JSON object, with a typed error', async () => {
    const run = await runWith([{ role: 'user', content: 'go' }], 'x');
    const head = headOf(run);
    for (const bad of ['{"content":"go","role":"user"}],"steps":99,"x":[{}', '[1]', 'null', '{', '']) {
      const error = (() => {
        try {
          joinRun(head, [bad]);
        } catch (e) {
          return e;
        }
      })();
      expect(error, bad).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).path).toBe('snapshot.context.history.0');
    }
    expect(() => joinRun('{"snapshot":', [])).toThrow(CheckpointError);
    expect(() => joinRun('{"snapshot":{}}', [])).toThrow(/not a checkpoint/);
  });
});

describe('the quick check of history entries', () => {
  // Near-entries: the right and wrong roles, fields of the right and wrong types, extras.
  const field = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }), args);
  const approval = { approved: true, by: 'a', note: '', at: '2026-01-01T00:00:00.000Z', callId: 'r:1#1' };
  const nearCall = fc.record({ id: field, tool: field, args: field, extra: field }, { requiredKeys: [] });
  const nearEntry = fc.record(
    {
      role: fc.constantFrom('user', 'assistant', 'tool', 'summary', 'system', 1),
      content: field,
      covers: fc.oneof(
        field,
        fc.record(
          { from: fc.constantFrom(1, 0, 2, '1', 1.5), to: fc.constantFrom(1, 5, 0, -1, 2.5, '3', null), extra: field },
          { requiredKeys: [] },
        ),
      ),
      tool: field,
      args: field,
      id: field,
      text: field,
      calls: fc.oneof(field, fc.array(nearCall, { maxLength: 3 })),
      final: field,
      result: field,
      error: field,
      outcome: fc.constantFrom('unknown', 'known', 1),
      approval: fc.oneof(
        field,
        fc.constant(approval),
        fc.constant({ ...approval, args: { to: 'z' } }),
        fc.constant({ ...approval, args: [1] }),
        fc.constant({ ...approval, always: true }),
        fc.constant({ ...approval, always: false }),
        fc.constant({ ...approval, standing: 'r:1#1' }),
        fc.constant({ ...approval, standing: 1 }),
        fc.constant({ ...approval, at: 'noon' }),
        approvalArb,
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

  it('takes a summary only as the schema’s strict shape has it (every combination of near values)', () => {
    const texts = ['', 'a', 'x'.repeat(20_100), 'x'.repeat(20_101), 1];
    const covers = [
      null,
      { from: 1, to: 5 },
      { from: 1, to: 1 },
      { from: 0, to: 5 },
      { from: 2, to: 5 },
      { from: '1', to: 5 },
      { from: 1, to: 0 },
      { from: 1, to: -1 },
      { from: 1, to: 2.5 },
      { from: 1, to: '3' },
      { from: 1 },
      { from: 1, to: 5, extra: 1 },
    ];
    let fast = 0;
    for (const text of texts) {
      for (const cover of covers) {
        for (const extra of [{}, { note: 'x' }, { covers: undefined }]) {
          const value = JSON.parse(JSON.stringify({ role: 'summary', text, covers: cover, ...extra }));
          expect(plainEntry(value)).toBe(entrySchema.safeParse(value).success);
          if (plainEntry(value)) fast++;
        }
      }
    }
    expect(fast).toBe(2 * 3); // the 2 good texts × the 3 good covers, with no other field
  });

  it('accepts the plain entries a run writes (the fast path is the common path)', () => {
    fc.assert(fc.property(fc.oneof(plainEntryArb, summaryArb), (e) => plainEntry(JSON.parse(JSON.stringify(e)))));
  });

  it('leaves approvals and several calls to the schema, which accepts every entry a run writes', () => {
    fc.assert(
      fc.property(entryArb, (e) => {
        const value = JSON.parse(JSON.stringify(e));
        if ('approval' in value || 'calls' in value) expect(plainEntry(value)).toBe(false);
        expect(plainEntry(value) || entrySchema.safeParse(value).success).toBe(true);
      }),
    );
  });

  it('a decoded run holds exactly the entries it was given', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entryArb, { minLength: 1, maxLength: 6 }), async (entries) => {
        const run = await runWith(entries, 'x');
        const blob = encodeCheckpoint(run);
        expect(decodeCheckpoint(blob).context.history).toEqual(JSON.parse(blob).snapshot.context.history);
        expect(encodeCheckpoint(decodeCheckpoint(blob))).toBe(blob);
      }),
      { numRuns: 100 },
    );
  });

  it('leaves the rest to the schema, which words the error', async () => {
    const run = await runWith(
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', tool: 't', args: [1] },
      ],
      'x',
    );
    const blob = whole(run) as string;
    expect(() => decodeCheckpoint(blob)).toThrow(CheckpointError);
    try {
      decodeCheckpoint(blob);
    } catch (e) {
      expect((e as CheckpointError).path).toMatch(/^snapshot\.context\.history\.1/);
    }
  });
});
