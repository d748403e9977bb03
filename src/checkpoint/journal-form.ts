/**
 * The journal form a store keeps a run in: a small head (the checkpoint with an empty history)
 * and the history as an append-only list of canonical entries. A save replaces the head and
 * appends the new entries: O(new data) per step, not O(history).
 */

import { canonicalJson } from '../../machines/canonical.js';
import type { HistoryEntry } from '../../machines/types.js';
import { fail } from './decode.js';
import { canonicalEntry, isObject, spliceHistory } from './encode.js';
import { expectedChildren } from './rules.js';
import type { PersistedRun } from './schema.js';
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './versions.js';

/** The head of a run: its persisted snapshot with an empty history. O(1) in the history. */
export function headOf(run: Omit<PersistedRun, 'children'>): string {
  const snapshot = { ...run, context: { ...run.context, history: [] }, children: expectedChildren(run) };
  return canonicalJson({ format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, snapshot }) as string;
}

/** A history entry as a store keeps it: canonical JSON (made once per entry). */
export function entryOf(entry: HistoryEntry): string {
  return canonicalEntry(entry);
}

/**
 * The checkpoint blob of a stored run: its head (a checkpoint with an empty history) and its
 * entries (each canonical JSON). Each entry must be one JSON object; validate the result with
 * `decodeCheckpoint`. The head keeps its own version, so a run stored by an older Tollgate is
 * migrated when it is decoded.
 */
export function joinRun(head: string, entries: readonly string[]): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(head);
  } catch (error) {
    fail(`the stored head is not JSON (${(error as Error).message})`, 'head');
  }
  if (!isObject(parsed) || !isObject(parsed.snapshot) || !isObject(parsed.snapshot.context)) {
    fail('the stored head is not a checkpoint', 'head');
  }
  for (const [i, text] of entries.entries()) {
    // One complete JSON object each: a damaged entry cannot change the structure around it.
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!isObject(value)) fail(`stored entry ${i} is not a JSON object`, `snapshot.context.history.${i}`);
  }
  try {
    return spliceHistory(parsed as { snapshot: { context: object } }, entries);
  } catch (error) {
    // The head parses but cannot be written canonically (a lone surrogate): refused as such.
    return fail(`cannot be written back as canonical JSON (${(error as Error).message})`);
  }
}
