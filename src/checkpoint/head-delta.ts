/**
 * Head deltas (docs/architecture.md, "Saves"). A store that keeps
 * bases (`CheckpointStore.keepsBase`) is given a run's whole compact head now and then as its
 * *base*, and on the saves between a small *delta* against that base as the head: most of a
 * head (the limits, the run id, the usage, the state) is the same from one save to the next.
 *
 * - Base: `{"b":<n>,"h":<version>,"s":<compact snapshot>}`, a compact head (compact-head.ts)
 *   stamped with `n`, the version of the save that wrote it.
 * - Delta: `{"b":<n>,"c":{…},"d":[…],"s":{…},"x":[…]}`: the base it applies to, the context's
 *   fields set (`c`, each value whole) and left out (`d`: back to their defaults), the
 *   snapshot's other fields set (`s`) and left out (`x`); empty parts are not written. The
 *   head the delta stands for is the base with these fields replaced, written canonically.
 *
 * A delta names its base, so one joined with another base (a store that lost a write) is a
 * `CheckpointError`, never a wrong run; what a join gives is then validated like any head.
 */
import { canonicalJson } from '../../machines/canonical.js';
import { compactFields, WRITTEN_DEFAULTS } from './compact-head.js';
import { fail } from './decode.js';
import { isObject } from './encode.js';
import type { PersistedRun } from './schema.js';
import { CHECKPOINT_VERSION } from './versions.js';

/** A compact head as the canonical JSON of each of its fields: what a delta compares. */
export interface HeadParts {
  /** The checkpoint version it is written at (`h`). */
  readonly version: number;
  /** Each field of the compact snapshot but `context`, in key order. */
  readonly snapshot: ReadonlyMap<string, string>;
  /** Each field of the compact context, in key order. */
  readonly context: ReadonlyMap<string, string>;
}

/** A base as the writer keeps it: its parts and the version of the save that wrote it. */
export interface Base {
  readonly b: number;
  readonly parts: HeadParts;
}

/**
 * The compact head of `run` in parts, read off the run without building its compact snapshot
 * (a save's head is made with half the work). O(1) in the history, as `compactHead`.
 */
export function headParts(run: Omit<PersistedRun, 'children'>): HeadParts {
  const snapshot = run as unknown as Record<string, unknown>;
  const context = isObject(snapshot.context) ? snapshot.context : {};
  return {
    version: CHECKPOINT_VERSION,
    snapshot: compactFields(snapshot, WRITTEN_DEFAULTS.snapshot, SNAPSHOT_APART),
    context: compactFields(context, WRITTEN_DEFAULTS.context, CONTEXT_APART),
  };
}

/** What a head's parts leave out: the context (its own part), the children (derived), the history (stored apart). */
const SNAPSHOT_APART: ReadonlySet<string> = new Set(['context', 'children']);
const CONTEXT_APART: ReadonlySet<string> = new Set(['history']);

/** The parts of a compact snapshot as a base holds it (its defaults already left out). */
function partsOf(version: number, snapshot: Record<string, unknown>): HeadParts {
  const context = isObject(snapshot.context) ? snapshot.context : {};
  return {
    version,
    snapshot: compactFields(snapshot, NO_DEFAULTS, CONTEXT_ONLY),
    context: compactFields(context, NO_DEFAULTS, NOTHING),
  };
}

const NO_DEFAULTS = {};
const CONTEXT_ONLY: ReadonlySet<string> = new Set(['context']);
const NOTHING: ReadonlySet<string> = new Set();

/**
 * `{…}` of fields given as canonical texts (in key order, as `compactFields` makes them), with `extra`
 * put in its place: canonical JSON, without sorting again.
 */
function objectText(fields: ReadonlyMap<string, string>, extra?: [string, string]): string {
  let text = '{';
  let next = extra;
  for (const [key, value] of fields) {
    if (next && next[0] < key) {
      text += `${text.length > 1 ? ',' : ''}${canonicalJson(next[0])}:${next[1]}`;
      next = undefined;
    }
    text += `${text.length > 1 ? ',' : ''}${canonicalJson(key)}:${value}`;
  }
  if (next) text += `${text.length > 1 ? ',' : ''}${canonicalJson(next[0])}:${next[1]}`;
  return `${text}}`;
}

function snapshotText(parts: HeadParts): string {
  return objectText(parts.snapshot, ['context', objectText(parts.context)]);
}

/** The compact head the parts make: exactly `compactHead(run)`. */
export function headText(parts: HeadParts): string {
  return `{"h":${parts.version},"s":${snapshotText(parts)}}`;
}

/** The base text of `parts`, written by the save that makes version `b`. */
export function baseText(parts: HeadParts, b: number): string {
  return `{"b":${b},"h":${parts.version},"s":${snapshotText(parts)}}`;
}

/** What changed from `base` to `head` at one level: the fields set, and those left out. */
function changes(base: ReadonlyMap<string, string>, head: ReadonlyMap<string, string>): [string[], string[]] {
  const set: string[] = [];
  for (const [key, text] of head) {
    if (base.get(key) !== text) set.push(`${canonicalJson(key)}:${text}`);
  }
  const unset: string[] = [];
  for (const key of base.keys()) if (!head.has(key)) unset.push(canonicalJson(key) as string);
  return [set, unset];
}

/**
 * The delta that turns `base` into `head`, or null when none can (the head is written at
 * another checkpoint version). Keys in both maps are sorted, so each part comes out sorted.
 */
export function deltaText(base: Base, head: HeadParts): string | null {
  if (base.parts.version !== head.version) return null;
  const [c, d] = changes(base.parts.context, head.context);
  const [s, x] = changes(base.parts.snapshot, head.snapshot);
  let text = `{"b":${base.b}`;
  if (c.length > 0) text += `,"c":{${c.join(',')}}`;
  if (d.length > 0) text += `,"d":[${d.join(',')}]`;
  if (s.length > 0) text += `,"s":{${s.join(',')}}`;
  if (x.length > 0) text += `,"x":[${x.join(',')}]`;
  return `${text}}`;
}

/** Is `parsed` (a parsed head) a delta? A base or a compact head has `h`; a delta never does. */
export function isDelta(parsed: Record<string, unknown>): boolean {
  return 'b' in parsed && !('h' in parsed);
}

const DELTA_KEYS = new Set(['b', 'c', 'd', 's', 'x']);

const isNames = (v: unknown): v is string[] => Array.isArray(v) && v.every((k) => typeof k === 'string');

/** A parsed base: its stamp, version and compact snapshot; a `CheckpointError` for anything else. */
function parseBase(base: unknown): { b: number; h: unknown; s: Record<string, unknown> } {
  let parsed: unknown;
  try {
    parsed = typeof base === 'string' ? JSON.parse(base) : undefined;
  } catch {
    parsed = undefined;
  }
  if (
    !isObject(parsed) ||
    Object.keys(parsed).length !== 3 ||
    !Number.isSafeInteger(parsed.b) ||
    !('h' in parsed) ||
    !isObject(parsed.s) ||
    !isObject(parsed.s.context)
  ) {
    fail('the stored base is not a base head', 'base');
  }
  return parsed as { b: number; h: unknown; s: Record<string, unknown> };
}

/**
 * The compact head (`{ h, s }`, parsed) that the delta `parsed` makes of `base` (a stored base's
 * text, or null when the run has none). Throws `CheckpointError` when either is malformed or
 * the delta names another base; the result is checked as any compact head is.
 */
export function joinDelta(base: unknown, parsed: Record<string, unknown>): Record<string, unknown> {
  const { b, c = {}, d = [], s = {}, x = [] } = parsed;
  if (
    !Object.keys(parsed).every((k) => DELTA_KEYS.has(k)) ||
    !Number.isSafeInteger(b) ||
    !isObject(c) ||
    !isObject(s) ||
    'context' in s ||
    !isNames(d) ||
    !isNames(x)
  ) {
    fail('the stored head is not a head delta', 'head');
  }
  if (base === null || base === undefined)
    fail(`the stored head is a delta against base ${b}, and the run has no base`, 'base');
  const found = parseBase(base);
  if (found.b !== b) fail(`the stored head is a delta against base ${b}, but the stored base is ${found.b}`, 'base');
  // Built from entries (own data properties: a key such as `__proto__` stays a plain key).
  const replaced = (from: Record<string, unknown>, unset: string[], set: Record<string, unknown>) =>
    Object.fromEntries([...Object.entries(from).filter(([key]) => !unset.includes(key)), ...Object.entries(set)]);
  const context = replaced(found.s.context as Record<string, unknown>, d, c);
  return { h: found.h, s: { ...replaced(found.s, [...x, 'context'], s), context } };
}

/**
 * What a writer resuming a stored run starts from: the compact head the run holds (its head
 * joined with its base when it is a delta) and the base to write further deltas against (null:
 * the next save writes a new one). Throws `CheckpointError` as `joinDelta` does.
 */
export function resumedHead(head: string, base: string | null | undefined): { head: string; base: Base | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(head);
  } catch {
    return { head, base: null };
  }
  if (!isObject(parsed) || !isDelta(parsed)) return { head, base: null };
  const joined = joinDelta(base, parsed);
  const { b, h, s } = parseBase(base);
  const parts = typeof h === 'number' ? partsOf(h, s) : null;
  return { head: canonicalJson(joined) as string, base: parts ? { b, parts } : null };
}
