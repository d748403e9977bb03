/**
 * The `Observers` class behind `agent.observe` (src/runtime/observe.ts), fed contexts by hand:
 * what it reports against what it has already reported, the copies it hands out, and listeners
 * that throw or leave. test/observe.test.ts checks the same through a live Agent.
 */
import { describe, expect, it } from 'vitest';
import type { AgentContext, HistoryEntry, StepCall } from '../machines/types.js';
import { Observers } from '../src/runtime/observe.js';
import type { RunEvent } from '../src/types.js';

function context(history: HistoryEntry[], steps = 0, calls: StepCall[] = []): AgentContext {
  return { history, steps, calls } as unknown as AgentContext;
}

function call(key: string, state: StepCall['state'], args: Record<string, unknown> = { q: 1 }): StepCall {
  return { key, tool: 'look', args, step: 1, state } as unknown as StepCall;
}

const goal: HistoryEntry = { role: 'user', content: 'go' };
const asked: HistoryEntry = { role: 'assistant', tool: 'look', args: { q: 1 } };
const answered: HistoryEntry = { role: 'tool', tool: 'look', result: 'found' };

describe('Observers', () => {
  it('is active only while it has a listener; a listener that leaves hears nothing more', () => {
    const observers = new Observers();
    expect(observers.active).toBe(false);
    const heard: RunEvent[] = [];
    const stop = observers.add((e) => heard.push(e), context([goal]), 'running', false);
    expect(observers.active).toBe(true);
    observers.notify(context([goal, asked]), 'running', false);
    expect(heard).toHaveLength(1);
    expect(stop()).toBe(true);
    expect(observers.active).toBe(false);
    observers.notify(context([goal, asked, answered]), 'done', false);
    observers.delta(1, { kind: 'text', text: 'x' });
    expect(heard).toHaveLength(1);
  });

  it('reports from the run as it is when the first listener comes: nothing already there is repeated', () => {
    const observers = new Observers();
    const heard: RunEvent[] = [];
    observers.add((e) => heard.push(e), context([goal, asked], 1, [call('r:1', 'running')]), 'running', true);
    // The same context again: the entries, the step being decided, the running call and the status were seen.
    observers.notify(context([goal, asked], 1, [call('r:1', 'running')]), 'running', true);
    expect(heard).toEqual([]);
    observers.notify(context([goal, asked, answered], 1), 'running', true);
    expect(heard).toEqual([{ type: 'entry', index: 2, entry: answered }]);
  });

  it('a second listener does not reset what was reported: it hears only what is new', () => {
    const observers = new Observers();
    const first: RunEvent[] = [];
    const second: RunEvent[] = [];
    observers.add((e) => first.push(e), context([goal]), 'running', false);
    observers.notify(context([goal, asked]), 'running', false);
    observers.add((e) => second.push(e), context([]), 'idle', false);
    observers.notify(context([goal, asked, answered]), 'running', false);
    expect(first).toEqual([
      { type: 'entry', index: 1, entry: asked },
      { type: 'entry', index: 2, entry: answered },
    ]);
    expect(second).toEqual([{ type: 'entry', index: 2, entry: answered }]);
  });

  it('reports each entry, the step being decided, the call that starts and a change of status, in that order, once', () => {
    const observers = new Observers();
    const heard: RunEvent[] = [];
    observers.add((e) => heard.push(e), context([]), 'idle', false);
    observers.notify(context([goal], 0), 'running', true);
    expect(heard).toEqual([
      { type: 'entry', index: 0, entry: goal },
      { type: 'deciding', step: 1 },
      { type: 'status', status: 'running' },
    ]);
    heard.length = 0;
    observers.notify(context([goal], 0), 'running', true); // nothing new
    expect(heard).toEqual([]);
    observers.notify(context([goal, asked], 1, [call('r:1', 'running')]), 'running', false);
    expect(heard).toEqual([
      { type: 'entry', index: 1, entry: asked },
      { type: 'executing', call: { key: 'r:1', tool: 'look', args: { q: 1 }, step: 1 } },
    ]);
    heard.length = 0;
    // The same call still running, then a queued one: no new executing event.
    observers.notify(context([goal, asked], 1, [call('r:1', 'running'), call('r:1.2', 'queued')]), 'running', false);
    expect(heard).toEqual([]);
    // Deciding the next step after one that was not being decided: reported.
    observers.notify(context([goal, asked, answered], 1), 'running', true);
    expect(heard).toEqual([
      { type: 'entry', index: 2, entry: answered },
      { type: 'deciding', step: 2 },
    ]);
    heard.length = 0;
    observers.notify(context([goal, asked, answered], 1), 'awaiting_approval', false);
    expect(heard).toEqual([{ type: 'status', status: 'awaiting_approval' }]);
  });

  it('the same step decided again after a pause is not reported twice, a new step is', () => {
    const observers = new Observers();
    const heard: RunEvent[] = [];
    observers.add((e) => heard.push(e), context([goal], 3), 'running', true);
    observers.notify(context([goal], 3), 'running', true);
    observers.notify(context([goal], 4), 'running', true);
    expect(heard).toEqual([{ type: 'deciding', step: 5 }]);
  });

  it('hands out copies: a listener that changes an event does not change the run', () => {
    const observers = new Observers();
    const entry: HistoryEntry = { role: 'assistant', tool: 'look', args: { q: { deep: 1 } } };
    const running = call('r:1', 'running', { q: { deep: 1 } });
    const ctx = context([entry], 1, [running]);
    const second: RunEvent[] = [];
    observers.add(
      (e) => {
        if (e.type === 'entry' && e.entry.role === 'assistant' && 'args' in e.entry) e.entry.args.q = 'changed';
        if (e.type === 'executing') (e.call.args as { q: unknown }).q = 'changed';
      },
      context([]),
      'idle',
      false,
    );
    observers.add((e) => second.push(e), context([]), 'idle', false);
    observers.notify(ctx, 'running', false);
    expect(entry).toEqual({ role: 'assistant', tool: 'look', args: { q: { deep: 1 } } });
    expect(running.args).toEqual({ q: { deep: 1 } });
    // One copy per event, shared by the listeners: the run is what is protected.
    expect(second.map((e) => e.type)).toEqual(['entry', 'executing', 'status']);
  });

  it('a listener that throws is ignored, and the listeners after it still hear every event', () => {
    const observers = new Observers();
    const heard: RunEvent[] = [];
    observers.add(
      () => {
        throw new Error('broken');
      },
      context([]),
      'idle',
      false,
    );
    observers.add((e) => heard.push(e), context([]), 'idle', false);
    expect(() => observers.notify(context([goal, asked]), 'running', false)).not.toThrow();
    expect(heard.map((e) => e.type)).toEqual(['entry', 'entry', 'status']);
  });

  it('passes deltas on as copies, with their step; drops one that is not data', () => {
    const observers = new Observers();
    const heard: RunEvent[] = [];
    observers.add((e) => heard.push(e), context([]), 'idle', false);
    const delta = { kind: 'call' as const, index: 0, argsText: '{"q"' };
    observers.delta(2, delta);
    expect(heard).toEqual([{ type: 'delta', step: 2, delta }]);
    expect((heard[0] as { delta: unknown }).delta).not.toBe(delta);
    observers.delta(2, { kind: 'text', text: 'x', fn: () => 1 } as never);
    expect(heard).toHaveLength(1);
  });

  it('with no listener, notify and delta do nothing and read nothing', () => {
    const observers = new Observers();
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('read');
        },
      },
    ) as AgentContext;
    expect(() => observers.notify(hostile, 'running', true)).not.toThrow();
    expect(() => observers.delta(1, hostile as never)).not.toThrow();
    let reads = 0;
    const delta = {
      kind: 'text',
      get text() {
        reads++;
        return 'x';
      },
    };
    observers.delta(1, delta as never);
    expect(reads).toBe(0); // not even copied
  });
});
