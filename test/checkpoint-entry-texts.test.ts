/**
 * A run's entry texts (src/checkpoint/encode.ts `EntryTexts`): each entry encoded once, by its
 * place in the history, and never a text that is not the entry's own.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../machines/canonical.js';
import { deepFreeze } from '../machines/history.js';
import type { HistoryEntry } from '../machines/types.js';
import { EntryTexts, encodeCheckpoint } from '../src/checkpoint/index.js';

const call = (n: number): HistoryEntry => deepFreeze({ role: 'assistant', tool: 'echo', args: { n, z: 1, a: 2 } });
const result = (n: number): HistoryEntry =>
  deepFreeze({ role: 'tool', tool: 'echo', result: { n, text: 'x'.repeat(n) } });
const history = (steps: number, from = 0): HistoryEntry[] =>
  Array.from({ length: steps }, (_, i) => [call(from + i), result(from + i)]).flat();
const canonical = (entries: readonly HistoryEntry[]) => entries.map((e) => canonicalJson(e));

describe('EntryTexts', () => {
  it('gives each entry’s canonical text, from any index, as the history grows', () => {
    const texts = new EntryTexts();
    const live = history(3);
    expect(texts.textsOf(live)).toEqual(canonical(live));
    live.push(...history(2, 3));
    expect(texts.textsOf(live, 6)).toEqual(canonical(live.slice(6)));
    expect(texts.textsOf(live)).toEqual(canonical(live));
    expect(texts.textsOf(live, live.length)).toEqual([]);
  });

  it('starts past its first entries (a loaded run’s first save), then fills them in', () => {
    const texts = new EntryTexts();
    const live = history(50);
    expect(texts.textsOf(live, 90)).toEqual(canonical(live.slice(90)));
    expect(texts.textsOf(live)).toEqual(canonical(live));
  });

  it('never gives the text of another entry that stood at the same place', () => {
    const texts = new EntryTexts();
    const one = history(3);
    const other = history(3, 100);
    expect(texts.textsOf(one)).toEqual(canonical(one));
    expect(texts.textsOf(other)).toEqual(canonical(other));
    expect(texts.textsOf(one)).toEqual(canonical(one));
  });

  it('keeps no text of an entry that is not frozen: it may still change', () => {
    const texts = new EntryTexts();
    const open = { role: 'user', content: 'first' } as { role: 'user'; content: string };
    expect(texts.textsOf([open])).toEqual(['{"content":"first","role":"user"}']);
    open.content = 'second';
    expect(texts.textsOf([open])).toEqual(['{"content":"second","role":"user"}']);
  });

  it('makes the same checkpoint as encoding every entry afresh', () => {
    const texts = new EntryTexts();
    const live = history(4);
    const run = { value: 'done', context: { history: live } };
    expect(encodeCheckpoint(run, texts)).toBe(encodeCheckpoint(run));
    live.push(...history(2, 4));
    expect(encodeCheckpoint(run, texts)).toBe(encodeCheckpoint(run));
  });
});
