/**
 * Type guards for history entries, so that strict TypeScript narrows a `HistoryEntry` without a
 * cast: `if (isResultEntry(entry)) entry.result`. Each guard looks only at the fields that tell
 * the kinds apart (`role`, then `tool`, `calls`, `final`, `result` or `error`); the entries
 * themselves are checked when they enter a run.
 */
import type {
  CallEntry,
  CallsEntry,
  ErrorEntry,
  FinalEntry,
  HistoryCall,
  HistoryEntry,
  ReplyEntry,
  ResultEntry,
  SummaryEntry,
  SystemEntry,
  ToolEntry,
  UserEntry,
} from './types.js';

/**
 * True for a system entry: the instructions of a run started from messages, `{ role: 'system',
 * content }`. They come first in the history, and compaction never summarises them.
 *
 * @example
 * const instructions = agent.state.history.filter(isSystemEntry).map((e) => e.content);
 */
export function isSystemEntry(entry: HistoryEntry): entry is SystemEntry {
  return entry.role === 'system';
}

/**
 * True for the goal (or another user message): `{ role: 'user', content }`.
 *
 * @example
 * const goal = agent.state.history.find(isUserEntry)?.content;
 */
export function isUserEntry(entry: HistoryEntry): entry is UserEntry {
  return entry.role === 'user';
}

/**
 * True for a reply of an earlier turn given with the messages a run started from: `{ role:
 * 'assistant', content }`. No policy made it: it is no step, and no answer of this run.
 *
 * @example
 * const earlier = agent.state.history.filter(isReplyEntry).length;
 */
export function isReplyEntry(entry: HistoryEntry): entry is ReplyEntry {
  return entry.role === 'assistant' && 'content' in entry;
}

/**
 * True for the assistant entry of a step with one call: `{ role: 'assistant', tool, args }` (with
 * `id` when the model gave one, `text` when it said something beside the call).
 *
 * @example
 * if (isCallEntry(entry)) console.log(`called ${entry.tool}`, entry.args);
 */
export function isCallEntry(entry: HistoryEntry): entry is CallEntry {
  return entry.role === 'assistant' && 'tool' in entry;
}

/**
 * True for the assistant entry of a step with several calls: `{ role: 'assistant', calls, text? }`.
 * One tool entry per call follows it, in call order, each with its call's `id`.
 *
 * @example
 * if (isCallsEntry(entry)) console.log(entry.calls.map((c) => c.tool).join(', '));
 */
export function isCallsEntry(entry: HistoryEntry): entry is CallsEntry {
  return entry.role === 'assistant' && 'calls' in entry;
}

/**
 * True for the final answer: `{ role: 'assistant', final }`.
 *
 * @example
 * const answer = agent.state.history.filter(isFinalEntry).at(-1)?.final;
 */
export function isFinalEntry(entry: HistoryEntry): entry is FinalEntry {
  return entry.role === 'assistant' && 'final' in entry;
}

/**
 * True for any tool entry (a result or an error): `{ role: 'tool', tool, ... }`.
 *
 * @example
 * const observations = history.filter(isToolEntry).length;
 */
export function isToolEntry(entry: HistoryEntry): entry is ToolEntry {
  return entry.role === 'tool';
}

/**
 * True for a tool entry holding the tool's result: `{ role: 'tool', tool, result }`.
 *
 * @example
 * if (isResultEntry(entry)) render(entry.tool, entry.result);
 */
export function isResultEntry(entry: HistoryEntry): entry is ResultEntry {
  return entry.role === 'tool' && 'result' in entry;
}

/**
 * True for a tool entry holding an error: `{ role: 'tool', tool, error }` — the tool threw, was
 * unknown, got invalid arguments, was denied, or its outcome is unknown after a crash (`outcome`).
 *
 * @example
 * const denied = history.filter(isErrorEntry).filter((e) => e.error.startsWith('denied'));
 */
export function isErrorEntry(entry: HistoryEntry): entry is ErrorEntry {
  return entry.role === 'tool' && 'error' in entry;
}

/**
 * True for a summary made by compaction: `{ role: 'summary', text, covers: { from, to } }`. It
 * stands for the entries `covers.from` to `covers.to` in the model's view (`agent.view()`); the
 * history keeps those entries too.
 *
 * @example
 * const summaries = agent.state.history.filter(isSummaryEntry).length;
 */
export function isSummaryEntry(entry: HistoryEntry): entry is SummaryEntry {
  return entry.role === 'summary';
}

/**
 * The calls an assistant entry holds, whichever its shape: one for `{ tool, args }`, each of
 * `{ calls }` in call order, none for any other entry. A model adapter turns the history into its
 * API's messages with it. `id` is `undefined` for a one-call step whose model gave no id: the
 * adapter then makes one up and gives the same to the tool entry that follows.
 *
 * @example
 * const toolCalls = history.flatMap((entry) => callsOf(entry));
 * // [{ id: 'call_1', tool: 'search', args: { q: 'refunds' } }, …]
 */
export function callsOf(entry: HistoryEntry): HistoryCall[] {
  if (isCallEntry(entry)) return [{ id: entry.id, tool: entry.tool, args: entry.args }];
  if (isCallsEntry(entry)) return entry.calls.map((call) => ({ id: call.id, tool: call.tool, args: call.args }));
  return [];
}
