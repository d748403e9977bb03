/**
 * Head deltas (src/checkpoint/head-delta.ts): a head written in parts is the compact head; a
 * delta joined with its base is exactly the head it was made from, in every state and whatever
 * the fields hold; a delta joined with another base, or none, or a hostile one, is a
 * CheckpointError and never a run that was not saved.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../machines/canonical.js';
import {
  baseText,
  deltaText,
  headParts,
  headText,
  isDelta,
  joinDelta,
  resumedHead,
} from '../src/checkpoint/head-delta.js';
import { CHECKPOINT_VERSION, decodeCheckpoint, decodeStored, headOf, joinRun } from '../src/checkpoint/index.js';
import { CheckpointError } from '../src/index.js';
import { fieldValues, states } from './support/run-states.js';

const runsWith = async () => {
  const runs = await states();
  const run = fc
    .tuple(fc.constantFrom(...Object.keys(runs)), fc.record(fieldValues, { requiredKeys: [] }), fc.nat(1_000))
    .map(([name, fields, steps]) => {
      const { snapshot, entries } = runs[name] as { snapshot: Record<string, any>; entries: string[] };
      return { run: { ...snapshot, context: { ...snapshot.context, ...fields, steps } } as never, entries };
    });
  return { runs, run };
};

/** The compact head a delta and its base make, as text. */
const joined = (base: string, delta: string) => canonicalJson(joinDelta(base, JSON.parse(delta))) as string;

describe('head deltas', () => {
  it('a head written in parts is the compact head, byte for byte, whatever order its keys are in', async () => {
    const { run } = await runsWith();
    // A live run's keys are in the order the machine made them, a loaded one's sorted.
    const reordered = (value: Record<string, unknown>, seed: number) =>
      Object.fromEntries(
        Object.entries(value).sort(([a], [b]) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7)),
      );
    fc.assert(
      fc.property(run, fc.nat(), ({ run }, seed) => {
        expect(headText(headParts(run))).toBe(headOf(run));
        const r = run as Record<string, any>;
        const shuffled = reordered({ ...r, context: reordered(r.context, seed + 1) }, seed) as never;
        expect(headText(headParts(shuffled))).toBe(headOf(run));
      }),
      { numRuns: 300 },
    );
  });

  it('a delta joined with its base is the head it was made from, and loads as that run', async () => {
    const { run } = await runsWith();
    fc.assert(
      fc.property(run, run, fc.integer({ min: 1, max: 1e9 }), (from, to, b) => {
        const base = headParts(from.run);
        const head = headParts(to.run);
        const delta = deltaText({ b, parts: base }, head) as string;
        const baseRecord = baseText(base, b);
        expect(isDelta(JSON.parse(delta))).toBe(true);
        expect(isDelta(JSON.parse(baseRecord))).toBe(false);
        expect(joined(baseRecord, delta)).toBe(headOf(to.run));
        expect(joinRun(delta, to.entries, baseRecord)).toBe(joinRun(headOf(to.run), to.entries));
        expect(resumedHead(delta, baseRecord)).toEqual({ head: headOf(to.run), base: { b, parts: base } });
      }),
      { numRuns: 300 },
    );
  });

  it('a delta holds only what changed: a step’s delta is a fraction of its head', async () => {
    const { runs } = await runsWith();
    const { snapshot } = runs.deciding as { snapshot: Record<string, any> };
    const at = (steps: number, activeMs: number) =>
      headParts({ ...snapshot, context: { ...snapshot.context, steps, activeMs } } as never);
    const delta = deltaText({ b: 7, parts: at(1, 10) }, at(2, 25)) as string;
    expect(delta).toBe('{"b":7,"c":{"activeMs":25,"steps":2}}');
    expect(deltaText({ b: 7, parts: at(1, 10) }, at(1, 10))).toBe('{"b":7}');
    expect(delta.length * 4).toBeLessThan(headText(at(2, 25)).length);
    // Fields back to their defaults are named in `d` (context) and `x` (snapshot).
    const paused = headParts({ ...snapshot, status: 'stopped', context: { ...snapshot.context, error: 'e' } } as never);
    const back = JSON.parse(deltaText({ b: 1, parts: paused }, at(1, 10)) as string);
    expect(back.d).toEqual(['error']);
    expect(back.x).toEqual(['status']);
  });

  it('no delta across checkpoint versions: the writer then writes a new base', async () => {
    const { runs } = await runsWith();
    const parts = headParts(runs.done?.snapshot as never);
    expect(deltaText({ b: 1, parts: { ...parts, version: CHECKPOINT_VERSION - 1 } }, parts)).toBeNull();
  });

  it('hostile: another base, no base, a malformed delta or base — a CheckpointError naming it, never another run', async () => {
    const { runs } = await runsWith();
    const { snapshot, entries } = runs.waiting as { snapshot: Record<string, any>; entries: string[] };
    const parts = headParts(snapshot as never);
    const base = baseText(parts, 3);
    const good = '{"b":3,"c":{"steps":9}}';
    expect(JSON.parse(joinRun(good, entries, base)).snapshot.context.steps).toBe(9);
    const refused = (head: string, stored: string | null | undefined, message: RegExp) => {
      // A load decodes (`decodeStored`); `joinRun` then `decodeCheckpoint` is the same read in two steps.
      for (const read of [
        () => decodeCheckpoint(joinRun(head, entries, stored)),
        () => decodeStored(head, entries, stored),
      ]) {
        let error: unknown;
        try {
          read();
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(CheckpointError);
        expect((error as Error).message).toMatch(message);
      }
    };
    refused(good, baseText(parts, 4), /a delta against base 3, but the stored base is 4/);
    refused(good, null, /a delta against base 3, and the run has no base/);
    refused(good, undefined, /no base/);
    refused(good, headOf(snapshot as never), /not a base head/); // a compact head is not a base
    refused(good, '{"b":3', /not a base head/);
    refused(good, '{"b":3,"h":4,"s":[]}', /not a base head/);
    refused(good, 7 as never, /not a base head/);
    refused('{"b":"3"}', base, /not a head delta/);
    refused('{"b":3,"z":1}', base, /not a head delta/);
    refused('{"b":3,"c":[]}', base, /not a head delta/);
    refused('{"b":3,"d":[1]}', base, /not a head delta/);
    refused('{"b":3,"s":{"context":{}}}', base, /not a head delta/);
    // What a delta sets is checked as any head: a state that does not exist, a wrong type.
    refused('{"b":3,"s":{"value":"nowhere"}}', base, /invalid checkpoint/);
    refused('{"b":3,"c":{"steps":-1}}', base, /invalid checkpoint/);
    // `__proto__` stays a plain key (refused as an unknown field), and no prototype changes.
    refused('{"b":3,"c":{"__proto__":{"steps":1}}}', base, /invalid checkpoint/);
    expect(({} as Record<string, unknown>).steps).toBeUndefined();
  });
});
