/**
 * Streaming (issue 14's core): a policy reports deltas as its model streams; observers see them,
 * the history records only the final action. And `inspect`: XState's inspector sees the live run.
 */
import { describe, expect, it } from 'vitest';
import type { InspectionEvent, Observer } from 'xstate';
import { Agent, defineAgent, type InspectEvent, type RunEvent } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { submitRun, Worker } from '../src/worker/index.js';
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

  it('a delta of a try that failed is dropped, even while the next try streams', async () => {
    let stale: ((text: string) => void) | undefined;
    const agent = new Agent({
      tools: [],
      policyRetries: 1,
      retryDelayMs: 0,
      policy: (_h, ctx) => {
        if (ctx.attempt === 0) {
          stale = (text) => ctx.stream({ kind: 'text', text });
          throw new Error('overloaded');
        }
        stale?.('from the failed try');
        ctx.stream({ kind: 'text', text: 'fresh' });
        return { final: 'ok' };
      },
    });
    const deltas: RunEvent[] = [];
    agent.observe((e) => {
      if (e.type === 'delta') deltas.push(e);
    });
    expect(await agent.start('go')).toBe('done');
    expect(deltas).toEqual([{ type: 'delta', step: 1, delta: { kind: 'text', text: 'fresh' } }]);
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
    const events: InspectEvent[] = [];
    const agent = new Agent({ tools: [], policy: () => ({ final: 1 }), inspect: (e) => events.push(e) });
    await agent.start('go');
    expect(events.some((e) => e.type === '@xstate.actor')).toBe(true);
    expect(events.some((e) => e.type === '@xstate.event' && e.event.type === 'START')).toBe(true);
  });

  it("takes XState's own inspector types: a function of InspectionEvent, and an Observer of them", async () => {
    const seen: InspectionEvent[] = [];
    const fn = (event: InspectionEvent) => {
      seen.push(event);
    };
    const observer: Observer<InspectionEvent> = { next: (event) => seen.push(event) };
    for (const inspect of [fn, observer]) {
      const agent = new Agent({ tools: [], policy: () => ({ final: 1 }), inspect });
      await agent.start('go');
    }
    expect(seen.filter((e) => e.type === '@xstate.actor').length).toBeGreaterThanOrEqual(2);
  });

  it('must be a function or an observer', () => {
    expect(() => new Agent({ tools: [], policy: () => ({ final: 1 }), inspect: 5 as never })).toThrow(
      'new Agent: inspect must be a function or an observer of inspection events, got 5',
    );
  });

  it("on a Worker: passed to each run's actor, in place of the definition's", async () => {
    const store = new MemoryStore();
    const own: InspectEvent[] = [];
    const support = defineAgent({
      name: 'support',
      tools: [],
      policy: () => ({ final: 1 }),
      inspect: (e) => own.push(e),
    });
    await submitRun(store, { agent: support, goal: 'a', runId: 'w1' });
    await submitRun(store, { agent: support, goal: 'b', runId: 'w2' });
    const events: InspectEvent[] = [];
    const worker = new Worker({ store, agents: [support], inspect: (e) => events.push(e) });
    expect(await worker.drain()).toBe(2);
    // Each run's actor (restored from the store), and the machine's events as the run goes on.
    const runIds = new Set(
      events.flatMap((e) =>
        e.type === '@xstate.snapshot'
          ? [(e.snapshot as { context?: { runId?: string } }).context?.runId ?? []].flat()
          : [],
      ),
    );
    expect([...runIds].sort()).toEqual(['w1', 'w2']);
    const machineEvents = events.flatMap((e) => (e.type === '@xstate.event' ? [e.event.type] : []));
    expect(machineEvents.filter((t) => t === 'xstate.done.actor.policy')).toHaveLength(2);
    expect(own).toEqual([]);

    // Without one of its own, the worker hands each run the definition's.
    await submitRun(store, { agent: support, goal: 'c', runId: 'w3' });
    expect(await new Worker({ store, agents: [support] }).drain()).toBe(1);
    expect(own.some((e) => e.type === '@xstate.event' && e.event.type === 'xstate.done.actor.policy')).toBe(true);
  });

  it('on a Worker: checked like the Agent option', () => {
    const support = defineAgent({ name: 'support', tools: [], policy: () => ({ final: 1 }) });
    expect(() => new Worker({ store: new MemoryStore(), agents: [support], inspect: 5 as never })).toThrow(
      'new Worker: inspect must be a function or an observer of inspection events, got 5',
    );
    expect(() => new Worker({ store: new MemoryStore(), agents: [support], inspec: () => {} } as never)).toThrow(
      'new Worker: unknown option "inspec" (did you mean "inspect"?)',
    );
  });
});
