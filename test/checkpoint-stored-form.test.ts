/**
 * The form a store keeps a run in. The compact head (src/checkpoint/compact-head.ts): written
 * without what the rest determines, joined back into exactly the checkpoint the run was saved as,
 * whatever state it is in and whatever its defaultable fields hold; a hostile head is a
 * CheckpointError and nothing else; heads written before (whole checkpoints) still join. And
 * `decodeStored`, the load path: exactly `decodeCheckpoint(joinRun(head, entries))`, good input or bad.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../machines/canonical.js';
import { COMPACT_VERSIONS } from '../src/checkpoint/compact-head.js';
import { deeperThan } from '../src/checkpoint/decode.js';
import {
  CHECKPOINT_FORMAT,
  CHECKPOINT_VERSION,
  decodeCheckpoint,
  decodeStored,
  encodeCheckpoint,
  entryOf,
  headOf,
  joinRun,
  nestingDepth,
} from '../src/checkpoint/index.js';
import { Agent, CheckpointError } from '../src/index.js';
import { sequence } from './support/helpers.js';
import { fieldValues, states } from './support/run-states.js';

const whole = (snapshot: object, entries: readonly string[]) =>
  encodeCheckpoint({
    ...snapshot,
    context: { ...(snapshot as any).context, history: entries.map((e) => JSON.parse(e)) },
  });

describe('compact heads', () => {
  it('join back into exactly the checkpoint, in every state, whatever the defaultable fields hold', async () => {
    const runs = await states();
    await fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(runs)),
        fc.record(fieldValues, { requiredKeys: [] }),
        (name, fields) => {
          const { snapshot, entries } = runs[name] as { snapshot: Record<string, any>; entries: string[] };
          const run = { ...snapshot, context: { ...snapshot.context, ...fields } };
          const head = headOf(run as never);
          expect(JSON.parse(head)).toMatchObject({ h: CHECKPOINT_VERSION });
          expect(joinRun(head, entries)).toBe(whole(run, entries));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('are a fraction of the whole head: the format once, no children, no defaults', async () => {
    const { deciding } = await states();
    const run = deciding!.snapshot;
    const full = canonicalJson({
      format: CHECKPOINT_FORMAT,
      version: CHECKPOINT_VERSION,
      snapshot: { ...run, context: { ...run.context, history: [] } },
    }) as string;
    const head = headOf(run as never);
    expect(head.length).toBeLessThan(full.length * 0.4);
    expect(head).not.toContain('children');
    expect(head).not.toContain(CHECKPOINT_FORMAT);
  });

  it('written before (a whole checkpoint with an empty history) still join as they did', async () => {
    const { waiting } = await states();
    const { snapshot, entries } = waiting!;
    const old = canonicalJson({
      format: CHECKPOINT_FORMAT,
      version: CHECKPOINT_VERSION,
      snapshot: { ...snapshot, context: { ...snapshot.context, history: [] } },
    }) as string;
    expect(joinRun(old, entries)).toBe(whole(snapshot, entries));
    expect(joinRun(old, entries)).toBe(joinRun(headOf(snapshot as never), entries));
  });

  it('hostile: a CheckpointError from joining or decoding, nothing else, and never a run that was not saved', async () => {
    const { executing } = await states();
    const real = JSON.parse(headOf(executing!.snapshot as never));
    const mutated = fc.oneof(
      fc.anything(),
      fc.record({ h: fc.oneof(fc.constantFrom(4, 3, 5, '4', null, 0), fc.anything()), s: fc.anything() }),
      fc.record({
        h: fc.constant(4),
        s: fc.record({ context: fc.oneof(fc.anything(), fc.constant(real.s.context)), value: fc.anything() }),
      }),
      fc
        .record({ key: fc.constantFrom('children', 'format', 'x'), value: fc.anything() })
        .map(({ key, value }) => ({ ...real, s: { ...real.s, [key]: value } })),
      fc
        .record({ key: fc.constantFrom('calls', 'steps', 'runId', 'limits', 'history'), value: fc.anything() })
        .map(({ key, value }) => ({ ...real, s: { ...real.s, context: { ...real.s.context, [key]: value } } })),
    );
    fc.assert(
      fc.property(mutated, (value) => {
        const text = JSON.stringify(value) ?? 'null';
        try {
          decodeCheckpoint(joinRun(text, executing!.entries));
        } catch (error) {
          expect(error).toBeInstanceOf(CheckpointError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses children in a compact head (they are derived, never taken from the store)', async () => {
    const { deciding } = await states();
    const head = JSON.parse(headOf(deciding!.snapshot as never));
    head.s.children = deciding!.snapshot.children;
    expect(() => joinRun(JSON.stringify(head), deciding!.entries)).toThrow(CheckpointError);
    expect(() => joinRun(JSON.stringify({ ...head, extra: 1 }), [])).toThrow(/not a checkpoint/);
  });

  it('are written at the version this build writes, which has its defaults', () => {
    expect(COMPACT_VERSIONS).toContain(CHECKPOINT_VERSION);
  });
});

describe('decodeStored', () => {
  /** What the two paths give: the run, or the error's class (messages may differ). */
  const outcome = (decode: () => unknown) => {
    try {
      return { run: decode() };
    } catch (error) {
      return { error: (error as Error).constructor.name };
    }
  };
  const both = (head: string, entries: string[]) => {
    const stored = outcome(() => decodeStored(head, entries));
    const joined = outcome(() => decodeCheckpoint(joinRun(head, entries)));
    expect(stored).toEqual(joined);
    if ('error' in stored) expect(stored.error).toBe('CheckpointError');
    return stored;
  };

  it('gives exactly what decoding the joined checkpoint gives, for every state and both head forms', async () => {
    const runs = await states();
    for (const { snapshot, entries } of Object.values(runs)) {
      const whole = canonicalJson({
        format: CHECKPOINT_FORMAT,
        version: CHECKPOINT_VERSION,
        snapshot: { ...snapshot, context: { ...snapshot.context, history: [] } },
      }) as string;
      for (const head of [headOf(snapshot as never), whole]) {
        const { run } = both(head, entries) as { run: { context: { history: unknown[] } } };
        expect(run.context.history).toHaveLength(entries.length);
        expect(Object.isFrozen(run.context.history[0])).toBe(true);
      }
    }
  });

  it('hostile entries and heads: the same run or a CheckpointError, as the joined path gives', async () => {
    const { waiting } = await states();
    const { snapshot, entries } = waiting!;
    const head = headOf(snapshot as never);
    const deep = (n: number) => `{"role":"user","content":${'['.repeat(n)}1${']'.repeat(n)}}`;
    const entry = fc.oneof(
      fc.constantFrom(...entries),
      fc.string(),
      fc.constantFrom(
        '{"content":"go","role":"user"}],"steps":99,"x":[{}',
        '{"content":"\\ud800","role":"user"}',
        '{"content":"\ud800","role":"user"}',
        '{"content":"a","role":"user","__proto__":{"x":1}}',
        '{"content":"a","role":"user","content":"b"}',
        '{"content":1e400,"role":"user"}',
        deep(60),
        deep(70),
        deep(5_000),
        '[]',
        'null',
      ),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    const heads = fc.oneof(
      fc.constant(head),
      fc.string(),
      fc.constantFrom(
        '{"h":4,"s":{"context":{}}}',
        head.replace('"h":4', '"h":3'),
        head.replace('}}', ',"x":"\ud800"}}'),
      ),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    fc.assert(
      fc.property(heads, fc.array(entry, { maxLength: 5 }), (h, es) => {
        both(h, es);
      }),
      { numRuns: 400 },
    );
  });

  it('refuses what only the whole text shows — too deep, a lone surrogate — as the joined path does', async () => {
    const agent = new Agent({
      runId: 'n',
      policy: sequence({ tool: 'look', args: { q: 1 } }, { final: 'ok' }),
      tools: [{ name: 'look', fn: () => 'seen' }],
    });
    await agent.start('go');
    const { snapshot } = JSON.parse(agent.checkpoint());
    const entries: string[] = snapshot.context.history.map(entryOf);
    const at = entries.findIndex((e) => e.includes('"role":"tool"'));
    const head = headOf(snapshot);
    const withResult = (result: string) =>
      entries.map((e, i) => (i === at ? `{"result":${result},"role":"tool","tool":"look"}` : e));
    const nested = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
    expect(both(head, withResult('"fine"'))).toHaveProperty('run'); // the entry is valid where it stands
    expect(both(head, withResult(nested(400)))).toHaveProperty('run');
    expect(both(head, withResult(nested(600)))).toEqual({ error: 'CheckpointError' });
    expect(both(head, withResult(nested(10_000)))).toEqual({ error: 'CheckpointError' });
    // Too deep: the same message either way (the depth of the whole text).
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    for (const n of [515, 516, 600]) {
      const deep = withResult(nested(n));
      expect(message(() => decodeStored(head, deep))).toBe(message(() => decodeCheckpoint(joinRun(head, deep))));
    }
    expect(message(() => decodeStored(head, withResult(nested(600))))).toMatch(/nests 605 levels deep/);
    expect(both(head, withResult('"\\\\ud800 escaped"'))).toHaveProperty('run'); // a backslash, then text
    expect(both(head, withResult('"\\ud800"'))).toEqual({ error: 'CheckpointError' }); // escaped
    expect(both(head, withResult('"\ud800"'))).toEqual({ error: 'CheckpointError' }); // raw
  });
});

describe('the depth of a parsed value', () => {
  it('is what the text says: deeperThan(value, k) exactly when nestingDepth(text) > k', () => {
    const nestings = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.jsonValue({ maxDepth: 3 }),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(fc.string(), tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(
      fc.property(nestings, fc.nat({ max: 12 }), (value, k) => {
        const text = JSON.stringify(value);
        expect(deeperThan(JSON.parse(text), k)).toBe(nestingDepth(text) > k);
      }),
    );
    for (const n of [0, 1, 519, 520, 521]) {
      const text = `${'['.repeat(n)}1${']'.repeat(n)}`;
      expect([deeperThan(JSON.parse(text), 519), deeperThan(JSON.parse(text), 520)]).toEqual([n > 519, n > 520]);
    }
    // Strings that look like nesting nest nothing; a `__proto__` key is walked like any other.
    expect(deeperThan(JSON.parse('{"a":"[[[[{{{{"}'), 1)).toBe(false);
    expect(deeperThan(JSON.parse('{"__proto__":[[1]]}'), 2)).toBe(true);
  });

  it('nestingDepth skips strings by their closing quote as a character-by-character scan would, on any text', () => {
    /** The plain scan: inside a string, a backslash escapes the next character. */
    const scan = (text: string) => {
      let depth = 0;
      let deepest = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === '"') {
          for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
        } else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
        else if (c === ']' || c === '}') depth--;
      }
      return deepest;
    };
    const texts = fc
      .array(fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', ','), { maxLength: 40 })
      .map((cs) => cs.join(''));
    fc.assert(
      fc.property(texts, (text) => nestingDepth(text) === scan(text)),
      { numRuns: 5_000 },
    );
    for (const text of ['"\\\\"[', '"\\"[', '"\\\\\\"["]', '["a\\\\"]', '"[', '\\"[']) {
      expect(nestingDepth(text)).toBe(scan(text));
    }
    expect(nestingDepth('["\\"["]')).toBe(1); // the escaped quote does not close the string
  });
});
