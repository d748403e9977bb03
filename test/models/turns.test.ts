import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../src/index.js';
import { SUMMARY_PREFIX, turnsOf } from '../../src/models/turns.js';

describe('turnsOf', () => {
  it('renders a summary (the model view of a compacted run) as a user turn that says what it is', () => {
    const view: HistoryEntry[] = [
      { role: 'user', content: 'go' },
      { role: 'summary', text: 'Looked up A-1.', covers: { from: 1, to: 6 } },
      { role: 'assistant', tool: 't', args: {}, id: 'a' },
      { role: 'tool', tool: 't', id: 'a', result: 'ok' },
    ];
    expect(turnsOf(view)).toEqual([
      { role: 'user', text: 'go' },
      { role: 'user', text: `${SUMMARY_PREFIX}Looked up A-1.` },
      { role: 'assistant', text: '', calls: [{ id: 'a', name: 't', args: {} }] },
      { role: 'results', results: [{ id: 'a', name: 't', content: 'ok', isError: false }] },
    ]);
    expect(SUMMARY_PREFIX).toBe('Summary of the earlier conversation (older turns were replaced by it):\n');
  });

  it('gives a call with no recorded result one that says so, so that no call is left unanswered', () => {
    const history: HistoryEntry[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        calls: [
          { id: 'a', tool: 't', args: {} },
          { id: 'b', tool: 't', args: {} },
        ],
      },
      { role: 'tool', tool: 't', id: 'a', result: 1 },
      { role: 'user', content: 'next' },
    ];
    expect(turnsOf(history)).toEqual([
      { role: 'user', text: 'go' },
      {
        role: 'assistant',
        text: '',
        calls: [
          { id: 'a', name: 't', args: {} },
          { id: 'b', name: 't', args: {} },
        ],
      },
      {
        role: 'results',
        results: [
          { id: 'a', name: 't', content: '1', isError: false },
          { id: 'b', name: 't', content: 'Error: no result was recorded', isError: true },
        ],
      },
      { role: 'user', text: 'next' },
    ]);
  });

  it('makes a tool entry that answers no call a note, never a result without its call', () => {
    const history: HistoryEntry[] = [
      { role: 'user', content: 'go' },
      { role: 'tool', tool: 'ghost', id: 'nobody', error: 'unknown tool ghost' },
      { role: 'assistant', tool: 't', args: {}, id: 'a' },
      { role: 'tool', tool: 't', id: 'a', result: 'ok' },
      { role: 'tool', tool: 't', id: 'a', result: 'again' },
    ];
    const turns = turnsOf(history);
    expect(turns[1]).toEqual({ role: 'user', text: 'Tool ghost: unknown tool ghost' });
    expect(turns.filter((t) => t.role === 'results')).toEqual([
      { role: 'results', results: [{ id: 'a', name: 't', content: 'ok', isError: false }] },
    ]);
    expect(turns.at(-1)).toEqual({ role: 'user', text: 'Tool t: again' });
  });

  it('gives ids the APIs refuse, or that repeat an earlier step, a fresh id used by call and result alike', () => {
    const long = 'x'.repeat(41);
    const history: HistoryEntry[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', tool: 't', args: {}, id: 'same' },
      { role: 'tool', tool: 't', id: 'same', result: 1 },
      { role: 'assistant', tool: 't', args: {}, id: 'same' },
      { role: 'tool', tool: 't', id: 'same', result: 2 },
      { role: 'assistant', tool: 't', args: {}, id: long },
      { role: 'tool', tool: 't', id: long, result: 3 },
      { role: 'assistant', tool: 't', args: {}, id: 'call_tg_1' },
      { role: 'tool', tool: 't', id: 'call_tg_1', result: 4 },
    ];
    const pairs = turnsOf(history).flatMap((t) =>
      t.role === 'assistant'
        ? t.calls.map((c) => `call ${c.id}`)
        : t.role === 'results'
          ? t.results.map((r) => `result ${r.id}`)
          : [],
    );
    expect(pairs).toEqual([
      'call same',
      'result same',
      'call call_tg_1',
      'result call_tg_1',
      'call call_tg_2',
      'result call_tg_2',
      'call call_tg_3',
      'result call_tg_3',
    ]);
  });
});
