/**
 * How history entries are made and appended. Entries are frozen as they are appended, so the
 * policy can be handed the entries themselves (an O(1) share per step, not an O(history) deep
 * copy) without being able to change the run.
 */
import type { HistoryEntry, StepCall } from './types.js';

/** Freezes a JSON value in place: history entries are shared with the policy, never copied. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** How a history entry is appended: both kinds freeze the entries they append. */
export type Append = (history: HistoryEntry[], ...entries: HistoryEntry[]) => HistoryEntry[];

/**
 * The machine's own append: a new array every time (`concat`, a bulk copy), so a snapshot
 * never changes once made. O(history) per entry.
 */
export const appendCopy: Append = (history, ...entries) => history.concat(entries.map(deepFreeze));

/**
 * O(1): pushes onto the array it is given, and returns it. Only for an actor whose earlier
 * snapshots nobody keeps: the runtime's, which reads each snapshot once. A frozen array (a
 * restored run's) is copied once, then grows in place.
 */
export const appendInPlace: Append = (history, ...entries) => {
  const log = Object.isFrozen(history) ? history.slice() : history;
  for (const entry of entries) log.push(deepFreeze(entry));
  return log;
};

/**
 * The assistant entry of a step's calls: the seed's `{ tool, args }` for one call (with `id` when
 * the model gave one), `{ calls }` for several.
 */
export function assistantEntry(calls: readonly StepCall[], text: string | null): HistoryEntry {
  const said = text === null ? {} : { text };
  const only = calls.length === 1 ? calls[0] : undefined;
  if (only) {
    return {
      role: 'assistant',
      tool: only.tool,
      args: only.args,
      ...(only.modelId ? { id: only.toolCallId } : {}),
      ...said,
    };
  }
  return { role: 'assistant', calls: calls.map((c) => ({ id: c.toolCallId, tool: c.tool, args: c.args })), ...said };
}

/**
 * The tool entry of a finished call: the seed's `{ tool, result | error }`, with the call's id
 * when its step had several calls (or the model named it), and its approval and outcome.
 */
export function toolEntry(call: StepCall, several: boolean): HistoryEntry {
  const id = several || call.modelId ? { id: call.toolCallId } : {};
  return { role: 'tool', tool: call.tool, ...id, ...(call.done as object) } as HistoryEntry;
}
