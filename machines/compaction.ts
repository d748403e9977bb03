/**
 * Compaction, the pure part: the model's view of a journal that holds summary entries, the turns
 * of that view, and the range the next summary would cover. The journal (`context.history`) is
 * never rewritten: a summary is one more entry, `{ role: 'summary', text, covers: { from, to } }`,
 * and the view is read off the journal each time.
 *
 * The run's head is always in view: its system entries (a run started from messages) and the
 * first message after them (the goal). Summaries fold: each covers the journal from the entry after
 * the head to `covers.to`, and the summariser is given the previous summary with the entries newly
 * covered. So only the latest summary is in the view, and a summary entry is never summarised twice.
 */
import type { HistoryEntry, SummaryEntry } from './types.js';

/** How many failed summaries in a row end summarising for the run (a success resets the count). */
export const MAX_SUMMARY_FAILURES = 3;

/** The longest summary text a run keeps; a longer one is cut to this, with a note of the cut. */
export const MAX_SUMMARY_LENGTH = 20_000;

/**
 * How many entries the run's head holds: its leading system entries and the first entry after
 * them (the goal, or the first message of the conversation it started from). Never summarised.
 */
export function headLength(history: readonly HistoryEntry[]): number {
  let i = 0;
  while (history[i]?.role === 'system') i++;
  return Math.min(i + 1, Math.max(history.length, 1));
}

/** The index of the latest entry of `role` after the head, or -1. */
function latestOf(history: readonly HistoryEntry[], role: HistoryEntry['role']): number {
  const head = headLength(history);
  for (let i = history.length - 1; i >= head; i--) if (history[i]?.role === role) return i;
  return -1;
}

/** The index of the latest summary entry of the journal, or -1. */
export function latestSummary(history: readonly HistoryEntry[]): number {
  return latestOf(history, 'summary');
}

/** The index of the latest user message after the head (the one a later turn began with), or -1. */
export function latestMessage(history: readonly HistoryEntry[]): number {
  return latestOf(history, 'user');
}

/**
 * `latestOf` a journal that only grows in place (the runtime's live one: entries are only ever
 * pushed): each array's answer is kept with the length it was found at, and a later call scans
 * only the entries appended since. O(new entries) a step, not O(history). An array found shorter
 * than at the last call is scanned again whole (the runtime's never is).
 */
function growingLatest(role: HistoryEntry['role']): (history: readonly HistoryEntry[]) => number {
  const found = new WeakMap<readonly HistoryEntry[], { length: number; at: number }>();
  return (history) => {
    const known = found.get(history);
    const whole = !known || known.length > history.length;
    let at = whole ? -1 : known.at;
    const head = headLength(history);
    for (let i = whole ? head : Math.max(known.length, head); i < history.length; i++) {
      if (history[i]?.role === role) at = i;
    }
    if (known) {
      known.length = history.length;
      known.at = at;
    } else found.set(history, { length: history.length, at });
    return at;
  };
}

/** `latestSummary` of a journal that only grows in place, in O(new entries). */
export const latestSummaryGrowing = growingLatest('summary');
/** `latestMessage` of a journal that only grows in place, in O(new entries). */
export const latestMessageGrowing = growingLatest('user');

/** The journal indices of the view's recent entries: after the latest summary's range, summaries left out. */
function recentIndices(history: readonly HistoryEntry[], at: number): number[] {
  const from = at < 0 ? headLength(history) : (history[at] as SummaryEntry).covers.to + 1;
  const out: number[] = [];
  for (let i = from; i < history.length; i++) if (history[i]?.role !== 'summary') out.push(i);
  return out;
}

/**
 * What the policy is given: the head (system entries, the goal), the latest summary (if any), the
 * message the current turn began with when the summary covers it (a conversation's latest ask is
 * never summarised out of view), then the entries after the range it covers. Without a summary in
 * the journal, the journal itself (a copy of the array). `at` and `ask`: the latest summary's and
 * message's indices.
 */
export function modelView(
  history: readonly HistoryEntry[],
  at = latestSummary(history),
  ask = at < 0 ? -1 : latestMessage(history),
): HistoryEntry[] {
  if (at < 0) return history.slice();
  const summary = history[at] as SummaryEntry;
  const head = history.slice(0, summary.covers.from);
  const kept = ask >= summary.covers.from && ask <= summary.covers.to ? [history[ask] as HistoryEntry] : [];
  return [...head, summary, ...kept, ...recentIndices(history, at).map((i) => history[i] as HistoryEntry)];
}

/**
 * The turns of the recent entries, as journal indices: an assistant entry and the tool entries
 * that follow it are one turn (a step is never split from its results); a tool entry that answers
 * no assistant entry (a malformed action) is a turn of its own, and so is any other entry.
 */
export function turnsOf(history: readonly HistoryEntry[], indices: readonly number[]): number[][] {
  const turns: number[][] = [];
  let open: number[] | null = null;
  for (const i of indices) {
    const entry = history[i] as HistoryEntry;
    if (entry.role === 'tool' && open !== null) {
      open.push(i);
      continue;
    }
    const turn = [i];
    turns.push(turn);
    open = entry.role === 'assistant' && ('tool' in entry || 'calls' in entry) ? turn : null;
  }
  return turns;
}

/** The range the next summary would cover, and what the summariser is given for it. */
export interface Cover {
  covers: { from: number; to: number };
  /** The previous summary (if any), then the entries newly covered, in journal order. */
  entries: HistoryEntry[];
}

/**
 * The next summary's range: from the entry after the head to the end of the last turn before the `keep` most
 * recent ones; null when that adds nothing to what the latest summary covers (so a view that is
 * over its threshold with only kept turns in it is not summarised again and again).
 */
export function nextCover(history: readonly HistoryEntry[], keep: number, at = latestSummary(history)): Cover | null {
  const turns = turnsOf(history, recentIndices(history, at));
  const covered = turns.slice(0, Math.max(0, turns.length - keep)).flat();
  const to = covered.at(-1);
  if (to === undefined) return null;
  const previous = at < 0 ? [] : [history[at] as HistoryEntry];
  const from = headLength(history);
  return { covers: { from, to }, entries: [...previous, ...covered.map((i) => history[i] as HistoryEntry)] };
}
