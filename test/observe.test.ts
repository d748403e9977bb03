import { describe, expect, it } from 'vitest';
import { Agent, type RunEvent } from '../src/index.js';
import { recorder, sequence } from './support/helpers.js';

describe('observe', () => {
  it('reports entries, calls and status changes in order', async () => {
    const mail = recorder('mail', { sideEffect: true });
    const agent = new Agent({
      runId: 'r',
      policy: sequence({ tool: 'look', args: { q: 1 } }, { tool: 'mail' }, { final: 'ok' }),
      tools: [recorder('look').tool, mail.tool],
    });
    const events: RunEvent[] = [];
    const stop = agent.observe((e) => events.push(e));
    agent.observe(() => {
      throw new Error('a broken observer is ignored');
    });
    await agent.start('go');
    expect(events).toEqual([
      { type: 'entry', index: 0, entry: { role: 'user', content: 'go' } },
      { type: 'deciding', step: 1 },
      { type: 'status', status: 'running' },
      { type: 'entry', index: 1, entry: { role: 'assistant', tool: 'look', args: { q: 1 } } },
      { type: 'executing', call: { key: 'r:1', tool: 'look', args: { q: 1 }, step: 1 } },
      { type: 'entry', index: 2, entry: { role: 'tool', tool: 'look', result: 'ok' } },
      { type: 'deciding', step: 2 },
      { type: 'entry', index: 3, entry: { role: 'assistant', tool: 'mail', args: {} } },
      // A status event on each change of status only: not on every phase of `running`.
      { type: 'status', status: 'awaiting_approval' },
    ]);
    stop();
    await agent.decide(true);
    expect(events).toHaveLength(9);
  });

  it('a resumed agent reports only what happens after observe', async () => {
    const agent = new Agent({
      policy: sequence({ tool: 'mail' }),
      tools: [recorder('mail', { sideEffect: true }).tool],
    });
    await agent.start('go');
    const resumed = Agent.resume(agent.checkpoint(), {
      policy: sequence({ final: 'x' }),
      tools: [recorder('mail', { sideEffect: true }).tool],
    });
    const events: RunEvent[] = [];
    resumed.observe((e) => events.push(e));
    await resumed.decide(false, 'no');
    expect(events.filter((e) => e.type === 'entry').map((e) => (e as { index: number }).index)).toEqual([2, 3]);
    expect(events.at(-1)).toEqual({ type: 'status', status: 'done' });
  });
});
