/**
 * Streaming (issue 14's core): a policy reports deltas as its model streams; observers see them,
 * the history records only the final action. And `inspect`: XState's inspector sees the live run.
 */
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { Agent, type RunEvent } from '../src/index.js';
import { gate, until } from './support/helpers.js';

describe('streaming deltas', () => {
  it('reach observers as they arrive; the history keeps the final action only; late deltas are dropped', async () => {
    const held = gate();
    let late: ((text: string) => void) | undefined;
    const agent = new Agent({
      runId: 's',
      tools: [],
      policy: async (_h, ctx) => {
        ctx.stream({ kind: 'text', text: 'Think' });
        ctx.stream({ kind: 'call', index: 0, id: 'c1', tool: 'look' });
        ctx.stream({ kind: 'call', index: 0, argsText: '{"q":' });
        late = (text) => ctx.stream({ kind: 'text', text });
        await held.promise;
        return { final: 'done' };
      },
    });
    const deltas: RunEvent[] = [];
    agent.observe((e) => {
      if (e.type === 'delta') deltas.push(e);
    });
    const done = agent.start('go');
    await until(() => deltas.length === 3);
    held.resolve(undefined);
    expect(await done).toBe('done');
    late?.('after the end');
    expect(deltas).toEqual([
      { type: 'delta', step: 1, delta: { kind: 'text', text: 'Think' } },
      { type: 'delta', step: 1, delta: { kind: 'call', index: 0, id: 'c1', tool: 'look' } },
      { type: 'delta', step: 1, delta: { kind: 'call', index: 0, argsText: '{"q":' } },
    ]);
    expect(agent.state.history).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', final: 'done' },
    ]);
  });

  it('a hostile delta (not data) is dropped, never breaks the run', async () => {
    const agent = new Agent({
      tools: [],
      policy: (_h, ctx) => {
        ctx.stream({ kind: 'text', text: (() => 1) as never });
        return { final: 1 };
      },
    });
    const seen: RunEvent[] = [];
    agent.observe((e) => seen.push(e));
    expect(await agent.start('go')).toBe('done');
    expect(seen.filter((e) => e.type === 'delta')).toEqual([]);
  });
});

describe('inspect', () => {
  it('is handed to XState: the inspector sees the run actor and its events', async () => {
    const events: InspectionEvent[] = [];
    const agent = new Agent({ tools: [], policy: () => ({ final: 1 }), inspect: (e) => events.push(e) });
    await agent.start('go');
    expect(events.some((e) => e.type === '@xstate.actor')).toBe(true);
    expect(events.some((e) => e.type === '@xstate.event' && e.event.type === 'START')).toBe(true);
  });

  it('must be a function or an observer', () => {
    expect(() => new Agent({ tools: [], policy: () => ({ final: 1 }), inspect: 5 as never })).toThrow(
      'new Agent: inspect must be a function or an observer of inspection events, got 5',
    );
  });
});
