/**
 * How the history grows: the machine's pure append (a new array, snapshots never change) and
 * the runtime's O(1) append in place, and what the runtime's in-place growth must never show.
 */
import { describe, expect, it } from 'vitest';
import { appendCopy, appendInPlace } from '../machines/index.js';
import type { HistoryEntry } from '../machines/types.js';
import { Agent } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';
import { sequence } from './support/helpers.js';

const user = (content: string): HistoryEntry => ({ role: 'user', content });

describe('appendCopy (the machine)', () => {
  it('returns a new array and leaves the one it was given unchanged', () => {
    const before = [user('a')];
    const after = appendCopy(before, user('b'), user('c'));
    expect(after).not.toBe(before);
    expect(before).toEqual([user('a')]);
    expect(after).toEqual([user('a'), user('b'), user('c')]);
    expect(Object.isFrozen(after[1])).toBe(true);
  });
});

describe('appendInPlace (the runtime)', () => {
  it('pushes onto the array it was given and freezes the entries, deeply', () => {
    const log: HistoryEntry[] = [];
    const entry: HistoryEntry = { role: 'assistant', tool: 't', args: { nested: { n: 1 } } };
    expect(appendInPlace(log, entry)).toBe(log);
    expect(log).toEqual([entry]);
    expect(Object.isFrozen(entry)).toBe(true);
    expect(Object.isFrozen((entry as unknown as { args: { nested: object } }).args.nested)).toBe(true);
  });

  it('copies a frozen array (a restored run) once, then grows the copy', () => {
    const restored = Object.freeze([user('a')]) as HistoryEntry[];
    const first = appendInPlace(restored, user('b'));
    expect(first).not.toBe(restored);
    expect(restored).toEqual([user('a')]);
    expect(appendInPlace(first, user('c'))).toBe(first);
    expect(first).toEqual([user('a'), user('b'), user('c')]);
  });
});

describe('the runtime grows the history in place, and no one can see it', () => {
  const steps = (n: number) =>
    sequence(...Array.from({ length: n }, (_, i) => ({ tool: 't', args: { i } })), { final: 'ok' });

  it('a history the policy kept does not grow with the run', async () => {
    const kept: { length: number; history: readonly HistoryEntry[] }[] = [];
    const script = steps(3);
    const agent = new Agent({
      tools: [{ name: 't', fn: () => 'r' }],
      policy: (history, ctx) => {
        kept.push({ length: history.length, history });
        return script(history, ctx);
      },
    });
    await agent.start('go');
    expect(kept.map((k) => k.length)).toEqual([1, 3, 5, 7]);
    expect(kept.map((k) => k.history.length)).toEqual([1, 3, 5, 7]);
  });

  it('a state or checkpoint taken earlier does not grow with the run', async () => {
    const tool = { name: 'pay', sideEffect: true, fn: () => 'paid' };
    const agent = new Agent({ tools: [tool], policy: sequence({ tool: 'pay' }, { tool: 'pay' }, { final: 'ok' }) });
    await agent.start('go');
    const state = agent.state;
    const blob = agent.checkpoint();
    await agent.decide(true);
    await agent.decide(true);
    expect(agent.state.history).toHaveLength(6);
    expect(state.history).toHaveLength(2);
    expect(JSON.parse(blob).snapshot.context.history).toHaveLength(2);
  });

  it('a resumed run grows its own history, not the checkpoint it came from', async () => {
    const tools = [{ name: 't', fn: () => 'r' }];
    const first = new Agent({ tools, policy: steps(2), maxSteps: 2, runId: 'r' });
    expect(await first.start('go')).toBe('budget_exhausted');
    const blob = first.checkpoint();
    // A clock that stands still: with the real one, a and b may count different active times.
    const clock = new ManualClock();
    const a = Agent.resume(blob, { tools, policy: steps(2), maxSteps: 5, clock });
    const b = Agent.resume(blob, { tools, policy: steps(2), maxSteps: 5, clock });
    expect(await a.run()).toBe('done');
    expect(b.state.history).toHaveLength(5);
    expect(await b.run()).toBe('done');
    expect(b.state.history).toEqual(a.state.history);
    expect(b.checkpoint()).toBe(a.checkpoint());
  });
});
