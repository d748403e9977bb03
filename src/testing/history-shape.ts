/**
 * The history's contract (docs/api.md, "Policies"), checked on any history: every entry has one of
 * the contract's shapes, and the entries pair up. A one-call step records the seed's two entries;
 * a step with several calls records one assistant entry holding them, then one tool entry per
 * call, in call order, each with its call's id. A malformed action is one tool entry alone.
 */
import type { HistoryEntry } from '../../machines/types.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const optionalText = (v: unknown) => v === undefined || typeof v === 'string';

/** Why an entry has none of the contract's shapes, or null. */
export function shapeProblem(entry: unknown): string | null {
  if (!isObject(entry)) return 'not an object';
  const e = entry;
  switch (e.role) {
    case 'system':
      return typeof e.content === 'string' ? null : 'a system entry without content';
    case 'user':
      return typeof e.content === 'string' ? null : 'a user entry without content';
    case 'assistant':
      if ('content' in e)
        return typeof e.content === 'string' && Object.keys(e).length === 2 ? null : 'a malformed reply';
      if ('final' in e) return 'tool' in e || 'calls' in e ? 'an answer with calls' : null;
      if ('calls' in e) {
        const ok =
          Array.isArray(e.calls) &&
          e.calls.length > 1 &&
          e.calls.every(
            (c) => isObject(c) && typeof c.id === 'string' && typeof c.tool === 'string' && isObject(c.args),
          ) &&
          !('tool' in e) &&
          optionalText(e.text);
        return ok ? null : 'a malformed entry of several calls';
      }
      return typeof e.tool === 'string' && isObject(e.args) && optionalText(e.id) && optionalText(e.text)
        ? null
        : 'a malformed call entry';
    case 'tool': {
      const one = 'result' in e !== 'error' in e && (!('error' in e) || typeof e.error === 'string');
      const extra = optionalText(e.id) && (e.approval === undefined || isObject(e.approval));
      const outcome = e.outcome === undefined || (e.outcome === 'unknown' && 'error' in e);
      return typeof e.tool === 'string' && one && extra && outcome ? null : 'a malformed tool entry';
    }
    case 'summary': {
      const covers = e.covers as Record<string, unknown> | undefined;
      const ok =
        typeof e.text === 'string' &&
        isObject(covers) &&
        Number.isSafeInteger(covers.from) &&
        Number.isSafeInteger(covers.to) &&
        (covers.from as number) <= (covers.to as number);
      return ok ? null : 'a malformed summary';
    }
    default:
      return 'no such role';
  }
}

/** The calls an assistant entry holds, as `{ id, tool }` (a one-call entry's id may be absent). */
function callsOf(e: Record<string, unknown>): { id: unknown; tool: unknown }[] | null {
  if (e.role !== 'assistant' || 'final' in e || 'content' in e) return null;
  if (Array.isArray(e.calls)) return (e.calls as Record<string, unknown>[]).map((c) => ({ id: c.id, tool: c.tool }));
  return [{ id: e.id, tool: e.tool }];
}

/** Where a history breaks its contract: the entry, and what is wrong there. */
export interface HistoryFault {
  at: number;
  message: string;
}

/**
 * Where a history breaks the contract, or null. `complete`: every call has its tool entry;
 * `inProgress`: the last step's calls may have none yet (they are appended when the step ends);
 * `cancelled`: the last step records only the calls that had their outcome, in call order.
 */
export function historyProblem(
  history: readonly HistoryEntry[],
  mode: 'complete' | 'inProgress' | 'cancelled',
): HistoryFault | null {
  const h = history as readonly Record<string, unknown>[];
  for (const [i, e] of h.entries()) {
    const shape = shapeProblem(e);
    if (shape) return { at: i, message: `history[${i}] is ${shape}: ${JSON.stringify(e)}` };
  }
  // System entries (a run started from messages) come first, then the goal or a conversation.
  let i = 0;
  while (h[i]?.role === 'system') i++;
  if (i > 0 && i === h.length) return { at: 0, message: 'the history holds system entries alone' };
  // The goal, or the conversation's first message: the user's, or an earlier reply.
  const first = h[i];
  if (first && first.role !== 'user' && !(first.role === 'assistant' && 'content' in first))
    return { at: i, message: `history[${i}] is not the goal` };
  const late = h.findIndex((e, at) => at >= i && e.role === 'system');
  if (late >= 0) return { at: late, message: `history[${late}] is a system entry after the conversation began` };
  i++;
  while (i < h.length) {
    const e = h[i] as Record<string, unknown>;
    const calls = callsOf(e);
    if (e.role === 'tool') {
      // Not after a call: only a malformed action's observation stands alone.
      if (typeof e.error !== 'string' || !e.error.startsWith('malformed action: '))
        return { at: i, message: `history[${i}] is a tool entry that answers no call: ${JSON.stringify(e)}` };
      i++;
      continue;
    }
    if (!calls) {
      i++;
      continue;
    }
    let j = i + 1;
    const answers: Record<string, unknown>[] = [];
    while (j < h.length && h[j]?.role === 'tool' && answers.length < calls.length) answers.push(h[j++] as never);
    const last = j >= h.length;
    const several = calls.length > 1;
    const partial = last && (mode === 'cancelled' || (mode === 'inProgress' && answers.length === 0));
    if (answers.length !== calls.length && !partial)
      return {
        at: i,
        message: `history[${i}] holds ${calls.length} calls, followed by ${answers.length} tool entries`,
      };
    let k = 0;
    for (const [n, a] of answers.entries()) {
      // A cancelled step keeps the calls that had their outcome: a subsequence, in call order.
      while (k < calls.length && mode === 'cancelled' && last && calls[k]?.id !== a.id && several) k++;
      const call = calls[k++];
      const id = several || call?.id !== undefined ? call?.id : undefined;
      if (!call || a.tool !== call.tool || a.id !== id)
        return {
          at: i + 1 + n,
          message: `history[${i + 1 + n}] (${JSON.stringify(a.tool)}, id ${JSON.stringify(a.id)}) does not answer call ${k} of history[${i}] (${JSON.stringify(call?.tool)}, id ${JSON.stringify(id)})`,
        };
    }
    i = j;
  }
  return null;
}
