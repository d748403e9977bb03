/**
 * The history as a model API's conversation, before any API's wire shapes: the goal and other
 * user messages, assistant turns (text and tool calls), the results of those calls paired by id,
 * and notes; a run's system entries go to the API's instructions field (`instructionsOf`). Every adapter renders these turns, so the pairing rules live in one place:
 *
 * - every call gets an id the APIs accept, and exactly one result with that id, right after its
 *   turn (a call with no recorded result gets one that says so: no API accepts a call without
 *   its result);
 * - a tool entry that answers no call (a malformed action, which never became a call) is not a
 *   tool result, which the APIs would refuse as an orphan, but a note in the user's voice;
 * - denials, expiries, unknown outcomes and invalid arguments are error results (`isError`), and
 *   a call that ran with arguments a human edited says so in its result;
 * - a summary of earlier turns (compaction) is a user turn that says what it is
 *   (`SUMMARY_PREFIX`). The policy is given the model's view, where a summary never stands
 *   between a call and its result (compaction never splits a step), so no result is orphaned.
 */
import type { HistoryEntry, Json } from '../../machines/types.js';
import { callsOf } from '../history.js';

/** One tool call of an assistant turn, with an id the API accepts. */
export interface TurnCall {
  id: string;
  name: string;
  args: Record<string, Json>;
}

/** The outcome of one call, as the model reads it. */
export interface TurnResult {
  id: string;
  name: string;
  /** What the model reads: the result (strings as they are, other JSON as JSON text), or the error. */
  content: string;
  isError: boolean;
}

export type Turn =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; calls: TurnCall[] }
  | { role: 'results'; results: TurnResult[] };

/** The ids every API takes: OpenAI's chat API caps tool-call ids at 40 characters, Anthropic's pattern. */
const SAFE_ID = /^[A-Za-z0-9_-]{1,40}$/;

/** The text of a JSON value for a model: a string as it is, anything else as JSON. */
export function textOf(value: Json): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** How a summary entry reads to the model: a user message, as every API accepts one anywhere. */
export const SUMMARY_PREFIX = 'Summary of the earlier conversation (older turns were replaced by it):\n';

const MALFORMED_HINT =
  'Reply with tool calls (their arguments a JSON object that fits the tool) or with a final answer.';

/** What a tool entry says, for the model. */
function resultOf(entry: Extract<HistoryEntry, { role: 'tool' }>, id: string): TurnResult {
  const edited = entry.approval?.args;
  const note = edited
    ? `A human edited the arguments before the call ran; it ran with ${JSON.stringify(edited)}.\n`
    : '';
  if ('error' in entry) return { id, name: entry.tool, content: `${note}Error: ${entry.error}`, isError: true };
  return { id, name: entry.tool, content: `${note}${textOf(entry.result)}`, isError: false };
}

/** Ids as the APIs accept them, each unique in the conversation; the history's own ids when they fit. */
class Ids {
  #used = new Set<string>();
  #count = 0;
  fresh(given: string | undefined): string {
    if (given !== undefined && SAFE_ID.test(given) && !this.#used.has(given)) {
      this.#used.add(given);
      return given;
    }
    let id: string;
    do id = `call_tg_${++this.#count}`;
    while (this.#used.has(id));
    this.#used.add(id);
    return id;
  }
}

/**
 * What a model API's instructions field (OpenAI's `instructions` or system message, Anthropic's
 * and the AI SDK's `system`) is given: the adapter's own `instructions`, then the system entries
 * of a run started from messages, each a paragraph; undefined when there are neither.
 */
export function instructionsOf(history: readonly HistoryEntry[], instructions: string | undefined): string | undefined {
  const parts = instructions ? [instructions] : [];
  for (const entry of history) {
    if (entry.role !== 'system') break;
    parts.push(entry.content);
  }
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}

/**
 * The turns of a history, for any API: see the module comment. Consecutive user turns (a note
 * after the goal) are kept apart here; an adapter whose API wants them joined joins them.
 */
export function turnsOf(history: readonly HistoryEntry[]): Turn[] {
  const turns: Turn[] = [];
  const ids = new Ids();
  /** The calls of the last assistant turn still without a result: history id → API id. */
  let open: { historyId: string | undefined; call: TurnCall }[] = [];
  let results: TurnResult[] = [];
  const closeStep = () => {
    for (const { call } of open) {
      results.push({ id: call.id, name: call.name, content: 'Error: no result was recorded', isError: true });
    }
    if (results.length > 0) turns.push({ role: 'results', results });
    open = [];
    results = [];
  };
  for (const entry of history) {
    if (entry.role === 'tool') {
      // Paired by id, or (a one-call step without ids) with the call that has none.
      const at = open.findIndex(({ historyId }) => historyId === entry.id);
      const match = at >= 0 ? open.splice(at, 1)[0] : undefined;
      if (match) {
        results.push(resultOf(entry, match.call.id));
        continue;
      }
      closeStep();
      const why = 'error' in entry ? entry.error : textOf(entry.result);
      const text = why.startsWith('malformed action')
        ? `Your last reply could not be used (${why}). ${MALFORMED_HINT}`
        : `Tool ${entry.tool || '(none)'}: ${why}`;
      turns.push({ role: 'user', text });
      continue;
    }
    if (entry.role === 'system') continue; // the API's instructions field: `instructionsOf`
    closeStep();
    if (entry.role === 'user') {
      turns.push({ role: 'user', text: entry.content });
    } else if (entry.role === 'summary') {
      turns.push({ role: 'user', text: `${SUMMARY_PREFIX}${entry.text}` });
    } else if ('final' in entry) {
      turns.push({ role: 'assistant', text: textOf(entry.final), calls: [] });
    } else if ('content' in entry) {
      turns.push({ role: 'assistant', text: entry.content, calls: [] });
    } else {
      const calls = callsOf(entry).map((c) => ({
        historyId: c.id,
        call: { id: ids.fresh(c.id), name: c.tool, args: c.args },
      }));
      open = calls;
      turns.push({ role: 'assistant', text: entry.text ?? '', calls: calls.map((c) => c.call) });
    }
  }
  closeStep();
  return turns;
}
