/**
 * Encoding: the persisted snapshot in its named, versioned envelope as canonical JSON (RFC 8785),
 * so that `resume(blob).checkpoint() === blob`. The history is spliced in from canonical texts
 * kept per run (`EntryTexts`), so encoding a long run again costs O(new entries).
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../../machines/canonical.js';
import type { HistoryEntry } from '../../machines/types.js';
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './versions.js';

/** An entry as canonical JSON. */
export function canonicalEntry(entry: HistoryEntry): string {
  const text = canonicalJson(entry);
  if (text === undefined) throw new TypeError('history entry is not serialisable');
  return text;
}

/**
 * The canonical texts of one run's history entries, each made once: a live run's history only
 * grows and its entries are frozen, so the text of the entry at a place never changes. An entry
 * not found at its place (another history) is encoded again. Kept per run, by place: a WeakMap
 * keyed by entry is slower to fill, and its ephemerons slow every garbage collection.
 */
export class EntryTexts {
  readonly #entries: (HistoryEntry | undefined)[] = [];
  readonly #texts: (string | undefined)[] = [];

  /** The texts of `history` from index `from` on. */
  textsOf(history: readonly HistoryEntry[], from = 0): string[] {
    const out = new Array<string>(Math.max(0, history.length - from));
    for (let i = from; i < history.length; i++) out[i - from] = this.#textAt(history[i] as HistoryEntry, i);
    return out;
  }

  #textAt(entry: HistoryEntry, i: number): string {
    if (this.#entries[i] === entry) return this.#texts[i] as string;
    const text = canonicalEntry(entry);
    if (Object.isFrozen(entry)) {
      // Flattened as it is kept (reading a character does it in V8): a text built piece by
      // piece is a tree of pieces, which every later checkpoint's join would walk again.
      text.charCodeAt(0);
      // Filled up to `i` first (a loaded run's first save starts at its stored count): a far
      // write into an empty array would make it a slow, dictionary-backed one.
      while (this.#entries.length < i) {
        this.#entries.push(undefined);
        this.#texts.push(undefined);
      }
      this.#entries[i] = entry;
      this.#texts[i] = text;
    }
    return text;
  }
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

/**
 * Serialises a persisted snapshot as a checkpoint blob. With the run's `texts`, O(new entries):
 * the entries encoded before are not encoded again.
 */
export function encodeCheckpoint(run: unknown, texts?: EntryTexts): string {
  const envelope = { format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, snapshot: run };
  const history = isObject(run) && isObject(run.context) ? run.context.history : undefined;
  if (Array.isArray(history) && history.length > 0 && history.every(isObject)) {
    const entries = history as HistoryEntry[];
    return spliceHistory(
      envelope as { snapshot: { context: object } },
      texts ? texts.textsOf(entries) : entries.map(canonicalEntry),
    );
  }
  const text = canonicalJson(envelope);
  if (text === undefined) throw new TypeError('snapshot is not serialisable');
  return text;
}
