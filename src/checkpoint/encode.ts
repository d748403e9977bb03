/**
 * Encoding: the persisted snapshot in its named, versioned envelope as canonical JSON (RFC 8785),
 * so that `resume(blob).checkpoint() === blob`. The history is spliced in from canonical texts
 * cached per frozen entry, so encoding a long run costs O(new entries).
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../../machines/canonical.js';
import type { HistoryEntry } from '../../machines/types.js';
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './versions.js';

/** Canonical JSON of each frozen history entry, made once: a frozen entry never changes. */
const entryTexts = new WeakMap<object, string>();

/** An entry as canonical JSON; cached for frozen entries (every entry of a live run). */
export function canonicalEntry(entry: HistoryEntry): string {
  const cached = entryTexts.get(entry);
  if (cached !== undefined) return cached;
  const text = canonicalJson(entry);
  if (text === undefined) throw new TypeError('history entry is not serialisable');
  if (Object.isFrozen(entry)) entryTexts.set(entry, text);
  return text;
}

/** Stands in for the history while the rest is canonicalised; never a value of a real run. */
const HISTORY_MARK = `\u0000tollgate-history-${randomUUID()}`;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `envelope` as canonical JSON with `history` (an array of canonical JSON texts) spliced in at
 * the context's `history` key: the entries are not walked again.
 */
export function spliceHistory(envelope: { snapshot: { context: object } }, history: readonly string[]): string {
  const { snapshot } = envelope;
  const text = canonicalJson({
    ...envelope,
    snapshot: { ...snapshot, context: { ...snapshot.context, history: HISTORY_MARK } },
  });
  if (text === undefined) throw new TypeError('snapshot is not serialisable');
  const mark = JSON.stringify(HISTORY_MARK);
  const at = text.indexOf(mark);
  return `${text.slice(0, at)}[${history.join(',')}]${text.slice(at + mark.length)}`;
}

/** Serialises a persisted snapshot as a checkpoint blob. O(new entries): entries are cached. */
export function encodeCheckpoint(run: unknown): string {
  const envelope = { format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, snapshot: run };
  const history = isObject(run) && isObject(run.context) ? run.context.history : undefined;
  if (Array.isArray(history) && history.length > 0 && history.every(isObject)) {
    return spliceHistory(
      envelope as { snapshot: { context: object } },
      history.map((e) => canonicalEntry(e as HistoryEntry)),
    );
  }
  const text = canonicalJson(envelope);
  if (text === undefined) throw new TypeError('snapshot is not serialisable');
  return text;
}
