// `agent.checkpoint()` builds the persisted run itself (the state, the context and the children
// the state determines) instead of asking XState for it, which walks every history entry. These
// runs hold it to exactly what XState's own `getPersistedSnapshot()` gives, in every state a
// checkpoint can be taken in: inside a policy call, inside a tool call, inside a summary, paused,
// and after each way a run ends.

import { describe, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { encodeCheckpoint } from '../src/checkpoint/index.js';
import { Agent, type AgentOptions, type Tool } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

/** An agent whose root XState actor is kept (through `inspect`), and a check of its checkpoint against it. */
function watched(options: AgentOptions) {
  let root: AnyActorRef | null = null;
  const agent = new Agent({
    ...options,
    inspect: (event: InspectionEvent) => {
      if (event.type === '@xstate.actor' && event.actorRef.sessionId === event.rootId)
        root = event.actorRef as AnyActorRef;
    },
  });
  const seen: string[] = [];
  const same = () => {
    const xstate = encodeCheckpoint((root as unknown as AnyActorRef).getPersistedSnapshot());
    const ours = agent.checkpoint();
    expect(ours).toBe(xstate);
    seen.push(JSON.parse(ours).snapshot.value.running ?? JSON.parse(ours).snapshot.value);
  };
  return { agent, same, seen };
}

describe('agent.checkpoint() is what XState would persist', () => {
  it('inside a policy call, inside a tool call, paused for approval, and done', async () => {
    let check = () => {};
    const read: Tool = {
      name: 'read',
      fn: () => {
        check();
        return { text: 'page' };
      },
    };
    const policy = sequence({ tool: 'read', args: { page: 1 } }, { tool: 'pay', args: { cents: 5 } }, { final: 'ok' });
    const { agent, same, seen } = watched({
      policy: (history, ctx) => {
        check();
        return policy(history, ctx);
      },
      tools: [read, recorder('pay', { sideEffect: true }).tool],
    });
    check = same;
    expect(await agent.start('go')).toBe('awaiting_approval');
    same();
    expect(await agent.decide(true)).toBe('done');
    same();
    expect(seen).toEqual(['deciding', 'executing', 'deciding', 'awaiting_approval', 'deciding', 'done']);
  });

  it('inside a batch of calls side by side, before and after one of them ended', async () => {
    let check = () => {};
    let calls = 0;
    const read: Tool = {
      name: 'read',
      fn: async () => {
        calls++;
        // The second call checks once the first ended and was recorded.
        if (calls === 2) await new Promise((resolve) => setTimeout(resolve, 5));
        check();
        return { text: 'page' };
      },
    };
    const policy = sequence(
      {
        calls: [
          { tool: 'read', args: { page: 1 } },
          { tool: 'read', args: { page: 2 } },
        ],
      },
      { final: 'ok' },
    );
    const { agent, same, seen } = watched({ policy, tools: [read] });
    check = same;
    expect(await agent.start('go')).toBe('done');
    same();
    expect(seen).toEqual(['batching', 'batching', 'done']);
  });

  it('out of budget, cancelled, and inside a summary', async () => {
    const out = watched({ policy: sequence({ tool: 'read' }), tools: [recorder('read').tool], maxSteps: 2 });
    expect(await out.agent.start('go')).toBe('budget_exhausted');
    out.same();

    const cancelled = watched({
      policy: sequence({ tool: 'pay' }),
      tools: [recorder('pay', { sideEffect: true }).tool],
    });
    expect(await cancelled.agent.start('go')).toBe('awaiting_approval');
    expect(await cancelled.agent.cancel('no')).toBe('cancelled');
    cancelled.same();

    let check = () => {};
    const summarised = watched({
      policy: sequence({ tool: 'read' }, { tool: 'read' }, { tool: 'read' }, { tool: 'read' }, { final: 'ok' }),
      tools: [recorder('read').tool],
      compaction: {
        when: { entries: 5 },
        keep: 1,
        summarize: (entries) => {
          check();
          return `${entries.length} entries`;
        },
      },
    });
    check = summarised.same;
    expect(await summarised.agent.start('go')).toBe('done');
    summarised.same();
    expect(summarised.seen).toContain('summarising');
    expect(out.seen).toEqual(['budget_exhausted']);
    expect(cancelled.seen).toEqual(['cancelled']);
  });
});
