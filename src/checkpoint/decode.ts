/**
 * Decoding: parse, migrate and validate a checkpoint blob before XState sees it. Restoring a
 * snapshot whose state does not exist does not throw but kills the process later, and a missing
 * or renamed invoke hangs the run (docs/architecture.md, "XState pitfalls"): a blob that passes
 * `decodeCheckpoint` restores to a run that can only do what its state allows.
 */
import type { z } from 'zod';
import { deepFreeze } from '../../machines/history.js';
import type { HistoryEntry } from '../../machines/types.js';
import { CheckpointError } from '../errors.js';
import { MAX_JSON_DEPTH } from '../json.js';
import { consistencyProblem } from './consistency.js';
import { encodeCheckpoint, isObject } from './encode.js';
import { entrySchema, envelopeSchema, MAX_STORED_SUMMARY, type PersistedRun, snapshotSchema } from './schema.js';
import { CHECKPOINT_FORMAT, migrate } from './versions.js';

export function fail(message: string, path?: string): never {
  throw new CheckpointError(`invalid checkpoint: ${message}`, path);
}

function pathOf(issue: z.core.$ZodIssue, prefix: string): string {
  return [prefix, ...issue.path.map(String)].join('.');
}

const optionalText = (v: unknown) => v === undefined || typeof v === 'string';

/**
 * The history entries that the quick check accepts are accepted by the `entry` schema too; any
 * other entry is left to the schema, which decides and words the error. (Values came from
 * JSON.parse, so they are JSON.)
 */
export function plainEntry(e: unknown): boolean {
  if (!isObject(e)) return false;
  switch (e.role) {
    case 'user':
      return typeof e.content === 'string';
    case 'system':
      return typeof e.content === 'string' && Object.keys(e).length === 2;
    case 'assistant':
      if (e.calls !== undefined || e.content !== undefined) return false; // the schema checks them
      return typeof e.tool === 'string'
        ? isObject(e.args) && optionalText(e.id) && optionalText(e.text)
        : e.tool === undefined && 'final' in e;
    case 'tool':
      return (
        typeof e.tool === 'string' &&
        e.approval === undefined &&
        optionalText(e.id) &&
        ('result' in e || (typeof e.error === 'string' && (e.outcome === undefined || e.outcome === 'unknown')))
      );
    case 'summary':
      return plainSummary(e);
    default:
      return false;
  }
}

/** A summary exactly as the schema's strict shape has it (a long run has one every few steps). */
function plainSummary(e: Record<string, unknown>): boolean {
  const { text, covers } = e;
  if (Object.keys(e).length !== 3 || typeof text !== 'string' || !isObject(covers)) return false;
  if (text.length === 0 || text.length > MAX_STORED_SUMMARY || Object.keys(covers).length !== 2) return false;
  const positive = (n: unknown) => Number.isInteger(n) && (n as number) > 0;
  return positive(covers.from) && positive(covers.to);
}

function checkHistory(history: unknown): void {
  if (!Array.isArray(history)) return; // the schema reports it
  for (const [i, e] of history.entries()) {
    if (plainEntry(e)) continue;
    const result = entrySchema.safeParse(e);
    if (!result.success) {
      const issue = result.error.issues[0] as z.core.$ZodIssue;
      const path = pathOf(issue, `snapshot.context.history.${i}`);
      fail(`${path}: ${issue.message}`, path);
    }
  }
}

/**
 * The deepest a checkpoint may nest: a run's values (`MAX_JSON_DEPTH`) under the envelope's own
 * levels (`snapshot.context.calls[i].done.approval.args`). Checked on the text, before
 * `JSON.parse` and zod, which recurse and would overflow the stack on a blob nested a few
 * thousand levels deep.
 */
const MAX_CHECKPOINT_DEPTH = MAX_JSON_DEPTH + 8;

/**
 * The deepest nesting of `[` and `{` in a JSON text, outside strings. O(length), no recursion.
 * A string is skipped with `indexOf` to its closing quote (one not preceded by an odd number of
 * backslashes), not character by character: most of a run's text is strings.
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = closingQuote(text, i);
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/** The index of the quote that closes the string opened at `open`, or the text's length if none does. */
function closingQuote(text: string, open: number): number {
  for (let at = open + 1; ; at++) {
    at = text.indexOf('"', at);
    if (at === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** Lone surrogates (raw, or as \u escapes) can be parsed but never written back canonically. */
const SURROGATE = /\\u[dD][89a-fA-F]|[\uD800-\uDFFF]/;

/**
 * Refuses a text nested deeper than a checkpoint may be, before anything that recurses (zod,
 * freezing) walks what it parses to. `under`: the levels the text sits under in its checkpoint
 * (an entry: 4).
 */
export function checkDepth(text: string, under = 0): void {
  const depth = nestingDepth(text) + under;
  if (depth > MAX_CHECKPOINT_DEPTH) {
    fail(
      `nests ${depth} levels deep; a run's values nest at most ${MAX_JSON_DEPTH} (the checkpoint ${MAX_CHECKPOINT_DEPTH})`,
    );
  }
}

/**
 * Does a parsed JSON value nest deeper than `limit` levels (as `nestingDepth` counts its text)?
 * Read off the value by a walk that stops `limit` levels down: it costs the value's nodes (an
 * entry's handful), not its characters. `JSON.parse` does not recurse (Node ≥ 20 parses a million
 * levels), so checking after it is safe; what recurses afterwards (zod, freezing) is what this guards.
 */
export function deeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const v of value) if (deeperThan(v, limit - 1)) return true;
    return false;
  }
  for (const key of Object.keys(value)) if (deeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  return false;
}

/** Refuses a parsed value of `text` that nests deeper than a checkpoint may (`under`: as `checkDepth`). */
export function checkParsedDepth(value: unknown, text: string, under: number): void {
  // Too deep: the text's own count, for the same message as `checkDepth`.
  if (deeperThan(value, MAX_CHECKPOINT_DEPTH - under)) checkDepth(text, under);
}

function parse(blob: unknown): unknown {
  if (typeof blob !== 'string') fail(`expected a string, got ${blob === null ? 'null' : typeof blob}`);
  checkDepth(blob);
  try {
    return JSON.parse(blob);
  } catch (error) {
    fail(`not JSON (${(error as Error).message})`);
  }
}

/** Does a text hold a lone surrogate (raw, or as a \u escape)? */
export function mayHoldLoneSurrogate(text: string): boolean {
  return SURROGATE.test(text);
}

/**
 * Parses, migrates and validates a checkpoint blob. Throws `CheckpointError` (with `path`) for
 * anything that is not a checkpoint this version can resume; never returns a partly valid snapshot.
 */
export function decodeCheckpoint(blob: unknown): PersistedRun {
  const parsed = parse(blob);
  return checkParsed(parsed, typeof blob === 'string' && SURROGATE.test(blob));
}

/**
 * Migrates and validates a parsed checkpoint envelope (`decodeCheckpoint` after its parse; the
 * journal form's `decodeStored`). `surrogates`: its text may hold a lone surrogate, which is then
 * looked for by writing the run back.
 */
export function checkParsed(parsed: unknown, surrogates: boolean): PersistedRun {
  const outer = envelopeSchema.safeParse(parsed);
  if (!outer.success) fail('expected an object with format, version and snapshot');
  const { format, version } = outer.data;
  if (format !== CHECKPOINT_FORMAT)
    fail(`format is ${JSON.stringify(format)}, expected "${CHECKPOINT_FORMAT}"`, 'format');
  const given = migrate(version, outer.data.snapshot);
  // The history is checked apart, entry by entry, with a quick check before the schema: the
  // schema's cost per entry adds up over a long run's many entries.
  const context = isObject(given) && isObject(given.context) ? given.context : null;
  const history = context?.history;
  const shallow =
    context && Array.isArray(history) ? { ...(given as object), context: { ...context, history: [] } } : given;
  const inner = snapshotSchema.safeParse(shallow);
  if (!inner.success) {
    const issue = inner.error.issues[0] as z.core.$ZodIssue;
    const path = pathOf(issue, 'snapshot');
    fail(`${path}: ${issue.message}`, path);
  }
  checkHistory(history);
  // The parsed value itself, not zod's copy: zod drops `__proto__` keys from records, and the
  // run must keep exactly the arguments it recorded. Strict objects refuse a `__proto__` key; a
  // record's is not checked by zod, so the rules check the one record that matters (standing).
  const run = shallow as PersistedRun;
  if (shallow !== given) run.context.history = history as HistoryEntry[];
  // Before the rules, which canonicalise calls (their ids) and children: a lone surrogate parses,
  // but can never be written back, and must be refused as what it is.
  if (surrogates) {
    try {
      encodeCheckpoint(run);
    } catch (error) {
      fail(`cannot be written back as canonical JSON (${(error as Error).message})`);
    }
  }
  const problem = consistencyProblem(run);
  if (problem) fail(`${problem[0]}: ${problem[1]}`, problem[0]);
  // History entries are frozen while a run is live (machines/history.ts); restore that.
  deepFreeze(run.context.history);
  return run;
}
