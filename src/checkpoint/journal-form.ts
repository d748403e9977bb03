/**
 * The journal form a store keeps a run in: a small head (the checkpoint with an empty history)
 * and the history as an append-only list of canonical entries. A save replaces the head and
 * appends the new entries: O(new data) per step, not O(history).
 */

import type { HistoryEntry } from '../../machines/types.js';
import { compactHead, expandHead, isCompactHead } from './compact-head.js';
import { fail } from './decode.js';
import { canonicalEntry, isObject, spliceHistory } from './encode.js';
import type { PersistedRun } from './schema.js';
import { CHECKPOINT_FORMAT } from './versions.js';

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
 * migrated when it is decoded.
 */
export function joinRun(head: string, entries: readonly string[]): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(head);
  } catch (error) {
    fail(`the stored head is not JSON (${(error as Error).message})`, 'head');
  }
  if (isObject(parsed) && isCompactHead(parsed)) parsed = expandHead(parsed, CHECKPOINT_FORMAT);
  // Heads written before compact heads are whole checkpoints (with an empty history): read as such.
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
