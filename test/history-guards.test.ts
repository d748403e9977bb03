/**
 * The history entry guards (issue 12): each kind is recognised and no other, strict TypeScript
 * narrows `HistoryEntry` with them without a cast, and `callsOf` reads the calls of either
 * assistant shape in call order.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ApprovalRecord, AssistantCall, HistoryEntry, Json, JsonObject } from '../machines/types.js';
import {
  callsOf,
  isCallEntry,
  isCallsEntry,
  isErrorEntry,
  isFinalEntry,
  isReplyEntry,
  isResultEntry,
  isSummaryEntry,
  isSystemEntry,
  isToolEntry,
  isUserEntry,
} from '../src/history.js';
import type { HistoryCall } from '../src/types.js';

const approval: ApprovalRecord = { approved: true, by: 'ops', note: 'ok', at: '2026-01-01T00:00:00.000Z', callId: 'c' };

type Kind =
  | 'system'
  | 'user'
  | 'call'
  | 'callWithId'
  | 'calls'
  | 'reply'
  | 'final'
  | 'finalNull'
  | 'result'
  | 'resultNull'
  | 'error'
  | 'unknown'
  | 'summary';

/** One entry of every kind, with their optional fields, as a run records them. */
const entries: Record<Kind, HistoryEntry> = {
  system: { role: 'system', content: 'You answer for the refunds desk.' },
  user: { role: 'user', content: 'refund order 7' },
  call: { role: 'assistant', tool: 'search', args: { q: 'refunds' } },
  callWithId: { role: 'assistant', tool: 'search', args: { q: 'refunds' }, id: 'call_9', text: 'looking' },
  calls: {
    role: 'assistant',
    calls: [
      { id: 'call_1', tool: 'search', args: { q: 'a' } },
      { id: 'run-1:2.2', tool: 'send_email', args: { to: 'ops@example.com' } },
    ],
    text: 'two at once',
  },
  reply: { role: 'assistant', content: 'Do you want a refund?' },
  final: { role: 'assistant', final: { refunded: true } },
  finalNull: { role: 'assistant', final: null },
  result: { role: 'tool', tool: 'search', result: ['doc'] },
  resultNull: { role: 'tool', tool: 'search', result: null, id: 'call_1', approval },
  error: { role: 'tool', tool: 'send_email', error: 'denied by human: no' },
  unknown: { role: 'tool', tool: 'send_email', error: 'outcome unknown', outcome: 'unknown', id: 'run-1:2.2' },
  summary: { role: 'summary', text: 'searched twice', covers: { from: 1, to: 4 } },
};

const guards = {
  isSystemEntry,
  isUserEntry,
  isReplyEntry,
  isCallEntry,
  isCallsEntry,
  isFinalEntry,
  isToolEntry,
  isResultEntry,
  isErrorEntry,
  isSummaryEntry,
};

/** The kinds each guard accepts; it must refuse every other. */
const accepts: Record<keyof typeof guards, Kind[]> = {
  isSystemEntry: ['system'],
  isReplyEntry: ['reply'],
  isUserEntry: ['user'],
  isCallEntry: ['call', 'callWithId'],
  isCallsEntry: ['calls'],
  isFinalEntry: ['final', 'finalNull'],
  isToolEntry: ['result', 'resultNull', 'error', 'unknown'],
  isResultEntry: ['result', 'resultNull'],
  isErrorEntry: ['error', 'unknown'],
  isSummaryEntry: ['summary'],
};

describe('history entry guards', () => {
  for (const [name, guard] of Object.entries(guards)) {
    it(`${name} accepts its kind and no other`, () => {
      const expected = accepts[name as keyof typeof guards];
      for (const [kind, entry] of Object.entries(entries)) {
        expect(guard(entry as HistoryEntry), `${name}(${kind})`).toBe(expected.includes(kind as Kind));
      }
    });
  }

  it('every entry is exactly one of system, user, reply, call, calls, final, result, error, summary', () => {
    const exclusive = [
      isSystemEntry,
      isUserEntry,
      isReplyEntry,
      isCallEntry,
      isCallsEntry,
      isFinalEntry,
      isResultEntry,
      isErrorEntry,
      isSummaryEntry,
    ];
    for (const entry of Object.values(entries)) {
      expect(exclusive.filter((guard) => guard(entry as HistoryEntry))).toHaveLength(1);
    }
  });

  it('narrow HistoryEntry under strict TypeScript, without casts', () => {
    const history: HistoryEntry[] = Object.values(entries);
    const seen: string[] = [];
    for (const entry of history) {
      if (isSystemEntry(entry)) {
        expectTypeOf(entry.content).toEqualTypeOf<string>();
        seen.push(entry.content);
      } else if (isReplyEntry(entry)) {
        expectTypeOf(entry.content).toEqualTypeOf<string>();
        seen.push(entry.content);
      } else if (isUserEntry(entry)) {
        expectTypeOf(entry.content).toEqualTypeOf<string>();
        seen.push(entry.content);
      } else if (isCallEntry(entry)) {
        expectTypeOf(entry.args).toEqualTypeOf<JsonObject>();
        expectTypeOf(entry.id).toEqualTypeOf<string | undefined>();
        seen.push(entry.tool);
      } else if (isCallsEntry(entry)) {
        expectTypeOf(entry.calls).toEqualTypeOf<AssistantCall[]>();
        seen.push(entry.calls.map((c) => c.id).join('+'));
      } else if (isFinalEntry(entry)) {
        expectTypeOf(entry.final).toEqualTypeOf<Json>();
        seen.push(JSON.stringify(entry.final));
      } else if (isResultEntry(entry)) {
        expectTypeOf(entry.result).toEqualTypeOf<Json>();
        expectTypeOf(entry.approval).toEqualTypeOf<ApprovalRecord | undefined>();
        seen.push(`result ${JSON.stringify(entry.result)}`);
      } else if (isErrorEntry(entry)) {
        expectTypeOf(entry.error).toEqualTypeOf<string>();
        expectTypeOf(entry.outcome).toEqualTypeOf<'unknown' | undefined>();
        seen.push(entry.error);
      } else if (isSummaryEntry(entry)) {
        expectTypeOf(entry.covers).toEqualTypeOf<{ from: number; to: number }>();
        seen.push(entry.text);
      } else {
        // Every kind is handled above: TypeScript has narrowed the entry to nothing.
        expectTypeOf(entry).toEqualTypeOf<never>();
      }
    }
    expect(seen).toHaveLength(history.length);
    const tools = history.filter(isToolEntry);
    expectTypeOf(tools[0]!.tool).toEqualTypeOf<string>();
    expect(tools).toHaveLength(4);
  });
});

describe('callsOf', () => {
  it('reads one call, with the model id or undefined', () => {
    expect(callsOf(entries.call)).toEqual([{ id: undefined, tool: 'search', args: { q: 'refunds' } }]);
    expect(callsOf(entries.callWithId)).toEqual([{ id: 'call_9', tool: 'search', args: { q: 'refunds' } }]);
  });

  it('reads several calls in call order, with their ids', () => {
    expect(callsOf(entries.calls)).toEqual([
      { id: 'call_1', tool: 'search', args: { q: 'a' } },
      { id: 'run-1:2.2', tool: 'send_email', args: { to: 'ops@example.com' } },
    ]);
  });

  it('reads no call from any other entry', () => {
    for (const kind of ['user', 'final', 'finalNull', 'result', 'error', 'unknown'] as const) {
      expect(callsOf(entries[kind])).toEqual([]);
    }
  });

  it('gives new call objects, not the history’s (which may be frozen)', () => {
    const several = entries.calls;
    if (!isCallsEntry(several)) throw new Error('not a calls entry');
    const entry = Object.freeze({ ...several, calls: several.calls.map((c) => Object.freeze({ ...c })) });
    const calls = callsOf(entry);
    expect(calls[0]).not.toBe(entry.calls[0]);
    expect(Object.isFrozen(calls[0])).toBe(false);
    expect(Object.keys(calls[0]!)).toEqual(['id', 'tool', 'args']);
  });

  it('flattens a history into its calls, for a model adapter', () => {
    const history: HistoryEntry[] = Object.values(entries);
    const calls = history.flatMap((entry) => callsOf(entry));
    expectTypeOf(calls).toEqualTypeOf<HistoryCall[]>();
    expect(calls.map((c) => c.id)).toEqual([undefined, 'call_9', 'call_1', 'run-1:2.2']);
  });
});
