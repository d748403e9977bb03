/**
 * The journal form a store keeps a run in: a small head (the checkpoint with an empty history)
 * and the history as an append-only list of canonical entries. A save replaces the head and
 * appends the new entries: O(new data) per step, not O(history).
 */

import { canonicalJson } from '../../machines/canonical.js';
import type { HistoryEntry } from '../../machines/types.js';
import { compactHead, expandHead, isCompactHead } from './compact-head.js';
import { checkDepth, checkParsed, checkParsedDepth, fail, mayHoldLoneSurrogate } from './decode.js';
import { canonicalEntry, isObject, spliceHistory } from './encode.js';
import { isDelta, joinDelta } from './head-delta.js';
import type { PersistedRun } from './schema.js';

/**
 * The head of a run as a store keeps it: its persisted snapshot with an empty history, compact
 * (compact-head.ts: what the rest determines left out). O(1) in the history.
 */
export function headOf(run: Omit<PersistedRun, 'children'>): string {
  return compactHead(run);
}

/** A history entry as a store keeps it: canonical JSON (made once per entry). */
export function entryOf(entry: HistoryEntry): string {
  return canonicalEntry(entry);
}

/**
 * The checkpoint blob of a stored run: its head (a checkpoint with an empty history) and its
 * entries (each canonical JSON). Each entry must be one JSON object; validate the result with
 * `decodeCheckpoint`. The head keeps its own version, so a run stored by an older Tollgate is
 * migrated when it is decoded. `base`: the run's stored base (`StoredRun.base`), which a head
 * that is a delta (head-delta.ts) is joined with.
 */
export function joinRun(head: string, entries: readonly string[], base?: string | null): string {
  const parsed = headEnvelope(head, base);
  for (const [i, text] of entries.entries()) entryValue(text, i);
  try {
    return spliceHistory(parsed, entries);
  } catch (error) {
    // The head parses but cannot be written canonically (a lone surrogate): refused as such.
    return fail(`cannot be written back as canonical JSON (${(error as Error).message})`);
  }
}

/**
 * A stored run decoded: exactly `decodeCheckpoint(joinRun(head, entries))` — the same run, or a
 * `CheckpointError` — without writing the whole checkpoint out and parsing it again: each entry
 * is parsed once, and only the (small) head is written canonically. What a load costs.
 */
export function decodeStored(head: string, entries: readonly string[], base?: string | null): PersistedRun {
  if (typeof head !== 'string') fail('the stored head is not a string', 'head');
  checkDepth(head);
  if (typeof base === 'string') checkDepth(base);
  const envelope = headEnvelope(head, base);
  const { snapshot } = envelope;
  let text: string;
  try {
    // The head as `joinRun` writes it (an empty history): its values exactly as a blob gives them.
    text = canonicalJson({
      ...envelope,
      snapshot: { ...snapshot, context: { ...snapshot.context, history: [] } },
    }) as string;
  } catch (error) {
    return fail(`cannot be written back as canonical JSON (${(error as Error).message})`);
  }
  checkDepth(text);
  let surrogates = mayHoldLoneSurrogate(text);
  const history: unknown[] = new Array(entries.length);
  for (const [i, entry] of entries.entries()) {
    const value = entryValue(entry, i);
    // An entry sits under four levels of the checkpoint: the envelope, snapshot, context, history.
    checkParsedDepth(value, entry, 4);
    history[i] = value;
    if (!surrogates && mayHoldLoneSurrogate(entry)) surrogates = true;
  }
  const parsed = JSON.parse(text) as { snapshot: { context: Record<string, unknown> } };
  parsed.snapshot.context.history = history;
  return checkParsed(parsed, surrogates);
}

/**
 * A stored head as a checkpoint envelope with a context: deltas joined with the base, compact
 * heads expanded, whole ones as they are.
 */
function headEnvelope(
  head: string,
  base: string | null | undefined,
): { snapshot: { context: Record<string, unknown> } } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(head);
  } catch (error) {
    fail(`the stored head is not JSON (${(error as Error).message})`, 'head');
  }
  if (isObject(parsed) && isDelta(parsed)) parsed = joinDelta(base, parsed);
  if (isObject(parsed) && isCompactHead(parsed)) parsed = expandHead(parsed);
  // Heads written before compact heads are whole checkpoints (with an empty history): read as such.
  if (!isObject(parsed) || !isObject(parsed.snapshot) || !isObject(parsed.snapshot.context)) {
    fail('the stored head is not a checkpoint', 'head');
  }
  return parsed as { snapshot: { context: Record<string, unknown> } };
}

/** A stored entry: one complete JSON object each, so a damaged entry cannot change the structure around it. */
function entryValue(text: string, i: number): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (!isObject(value)) fail(`stored entry ${i} is not a JSON object`, `snapshot.context.history.${i}`);
  return value;
}
