/**
 * The compact head a store keeps (docs/architecture.md, "Saves": a head plus an append-only journal):
 * the run's persisted snapshot without what the rest determines, so each save writes less.
 *
 * `{"h":<checkpoint version>,"s":<snapshot>}` where the snapshot leaves out
 * - the format's name (one format: `h` names its version),
 * - `children`: the one invoked actor the state runs, which `expectedChildren` derives from the
 *   state and the context (exactly as every head has always written it),
 * - `history`: always empty in a head (the entries are stored apart),
 * - every field below whose value is its default (`status: 'active'`, no answer, no error…).
 *
 * `expandHead` puts each back, giving the checkpoint the run was saved as, byte for byte once
 * canonicalised; the joined blob is then validated like any checkpoint. A field is left out only
 * when its value equals the default, so a snapshot that lacks one (no version-4 run does) would
 * come back with it: the conformance suite's `joinRun(head) === checkpoint()` pins this.
 */
import { canonicalJson, sortedKeys } from '../../machines/canonical.js';
import { expectedChildren } from './consistency.js';
import { fail } from './decode.js';
import { isObject } from './encode.js';
import type { PersistedRun } from './schema.js';
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './versions.js';

type Defaults = { readonly [key: string]: unknown };

/**
 * Each version's defaults: the snapshot's fields, and the context's (limits nested). Heads are
 * written at `CHECKPOINT_VERSION`, which must have its entry here (a test checks it), and read at
 * any version that has one; the decoder then migrates what it joined, as for any checkpoint.
 */
const V4_DEFAULTS = {
  snapshot: { status: 'active', historyValue: {} },
  context: {
    answer: null,
    approvalTtlMs: null,
    calls: [],
    cancelReason: null,
    compaction: { error: null, failures: 0, retryAt: 0 },
    error: null,
    history: [],
    standing: {},
    stoppedBy: null,
    limits: { maxActiveMs: null, maxCostUsd: null, maxTokens: null },
  },
};
const DEFAULTS: Readonly<Record<number, { snapshot: Defaults; context: Defaults }>> = {
  4: V4_DEFAULTS,
  // Version 5's new fields are absent when they say nothing (no turn after the first, no limit on one).
  5: V4_DEFAULTS,
};

/** The versions a compact head may be written at. */
export const COMPACT_VERSIONS: readonly number[] = Object.keys(DEFAULTS).map(Number);

/** Fields compared field by field (an object whose own fields have defaults), not as a whole. */
const NESTED = new Set(['limits']);

/**
 * Is `value` the JSON value `fallback` (a small default)? As comparing their canonical JSON would
 * say, without encoding either: the walk is as long as the default, however large `value` is.
 */
function isDefault(value: unknown, fallback: unknown): boolean {
  if (fallback === null || typeof fallback !== 'object') return value === fallback;
  if (Array.isArray(fallback)) {
    return Array.isArray(value) && value.length === fallback.length && fallback.every((f, i) => isDefault(value[i], f));
  }
  if (!isObject(value)) return false;
  const keys = Object.keys(value).filter((k) => value[k] !== undefined);
  const wanted = Object.entries(fallback as Record<string, unknown>);
  return keys.length === wanted.length && wanted.every(([k, f]) => k in value && isDefault(value[k], f));
}

/** `value` without the fields equal to their defaults (never mutated: a copy when anything goes). */
function withoutDefaults(value: Record<string, unknown>, defaults: Defaults): Record<string, unknown> {
  const out: Record<string, unknown> = { ...value };
  for (const [key, fallback] of Object.entries(defaults)) {
    if (!(key in out)) continue;
    const field = out[key];
    if (NESTED.has(key) && isObject(field)) out[key] = withoutDefaults(field, fallback as Defaults);
    else if (isDefault(field, fallback)) delete out[key];
  }
  return out;
}

/** `value` with every absent default put back (copies of them: nothing shared between runs). */
function withDefaults(value: Record<string, unknown>, defaults: Defaults): Record<string, unknown> {
  const out: Record<string, unknown> = { ...value };
  for (const [key, fallback] of Object.entries(defaults)) {
    const field = out[key];
    if (NESTED.has(key) && isObject(field)) out[key] = withDefaults(field, fallback as Defaults);
    else if (!(key in out)) out[key] = structuredClone(fallback);
  }
  return out;
}

/** The compact snapshot of a run, before it is written (`s` of its compact head). O(1) in the history. */
export function compactSnapshot(run: Omit<PersistedRun, 'children'>): Record<string, unknown> {
  const defaults = DEFAULTS[CHECKPOINT_VERSION] as (typeof DEFAULTS)[number];
  const { children: _derived, ...rest } = run as PersistedRun;
  const snapshot = withoutDefaults(rest, defaults.snapshot);
  snapshot.context = withoutDefaults({ ...run.context, history: [] }, defaults.context);
  return snapshot;
}

/**
 * The compact snapshot's fields as canonical JSON, in key order, without building the compact
 * snapshot: the keys in `skip` left out, each field equal to its default left out, a nested one
 * (`limits`) written without its own defaults; a field canonical JSON leaves out (undefined) is
 * not there. The same texts as `compactSnapshot` then each field encoded
 * (test/checkpoint-head-delta.test.ts). With no defaults: each field of a value as it is.
 */
export function compactFields(
  value: Record<string, unknown>,
  defaults: Defaults,
  skip: ReadonlySet<string>,
): Map<string, string> {
  const fields = new Map<string, string>();
  for (const key of sortedKeys(value)) {
    if (skip.has(key)) continue;
    let field = value[key];
    if (Object.hasOwn(defaults, key)) {
      const fallback = defaults[key];
      if (NESTED.has(key) && isObject(field)) field = withoutDefaults(field, fallback as Defaults);
      else if (isDefault(field, fallback)) continue;
    }
    const text = canonicalJson(field);
    if (text !== undefined) fields.set(key, text);
  }
  return fields;
}

/** The defaults a compact head is written with (at `CHECKPOINT_VERSION`). */
export const WRITTEN_DEFAULTS = DEFAULTS[CHECKPOINT_VERSION] as { snapshot: Defaults; context: Defaults };

/** The compact head of a run (its history is left out whatever it holds). O(1) in the history. */
export function compactHead(run: Omit<PersistedRun, 'children'>): string {
  return canonicalJson({ h: CHECKPOINT_VERSION, s: compactSnapshot(run) }) as string;
}

/** Is `parsed` (a parsed head) a compact head? */
export function isCompactHead(parsed: Record<string, unknown>): boolean {
  return 'h' in parsed && !('format' in parsed);
}

/**
 * The checkpoint envelope (`{ format, version, snapshot }`, history empty) of a compact head.
 * Throws `CheckpointError` for one that is not: the result is validated after the history is joined.
 */
export function expandHead(parsed: Record<string, unknown>): Record<string, unknown> {
  const { h: version, s: compact } = parsed;
  const defaults = typeof version === 'number' ? DEFAULTS[version] : undefined;
  if (!defaults || !isObject(compact) || !isObject(compact.context) || Object.keys(parsed).length !== 2) {
    fail('the stored head is not a checkpoint', 'head');
  }
  const snapshot = withDefaults(compact, defaults.snapshot);
  snapshot.context = withDefaults(compact.context, defaults.context);
  if ('children' in compact) fail('the stored head is not a checkpoint: a compact head holds no children', 'head');
  try {
    snapshot.children = expectedChildren(snapshot as unknown as PersistedRun);
  } catch {
    // A state or context too broken to name its child: validation will say what is wrong.
    snapshot.children = {};
  }
  return { format: CHECKPOINT_FORMAT, version, snapshot };
}
