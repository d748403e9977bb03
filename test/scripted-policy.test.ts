/**
 * `scriptedPolicy` (tollgate/testing) answers the n-th step with the n-th action, whatever the
 * model sees: under compaction (older turns summarised away) and after a malformed action (which
 * leaves no assistant turn), it goes on with the script instead of repeating a step.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '../src/agent.js';
import { MemoryStore } from '../src/stores/memory.js';
import { scriptedPolicy } from '../src/testing/index.js';
import type { Action, Tool } from '../src/types.js';

function counter() {
  const seen: unknown[] = [];
  const tool: Tool = {
    name: 'count',
    fn: (args) => {
      seen.push((args as { n: number }).n);
      return 'ok';
    },
  };
  return { tool, seen };
}

describe('scriptedPolicy', () => {
  it('goes on with the script under compaction, when the model no longer sees the earlier steps', async () => {
    const { tool, seen } = counter();
    const script: Action[] = [1, 2, 3, 4, 5].map((n) => ({ tool: 'count', args: { n } }));
    const agent = new Agent({
      policy: scriptedPolicy([...script, { final: 'counted' }]),
      tools: [tool],
      maxSteps: 20,
      compaction: { when: { entries: 4 }, keep: 1, summarize: () => 'earlier counting' },
    });
    expect(await agent.start('count to five')).toBe('done');
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(agent.state.answer).toBe('counted');
    expect(agent.state.steps).toBe(6);
    // The model did not see every step: the script went on by the run's count.
    expect(agent.view().filter((e) => e.role === 'assistant').length).toBeLessThan(6);
  });

  it('goes past a malformed action instead of repeating it', async () => {
    const { tool, seen } = counter();
    const agent = new Agent({
      policy: scriptedPolicy([{ tool: 42 } as never, { tool: 'count', args: { n: 1 } }, { final: 'ok' }]),
      tools: [tool],
      maxSteps: 10,
    });
    expect(await agent.start('go')).toBe('done');
    expect(seen).toEqual([1]);
    expect(agent.state.steps).toBe(3);
  });

  it('continues where it was after a resume from a store', async () => {
    const store = new MemoryStore();
    const { tool, seen } = counter();
    const mail: Tool = { name: 'mail', sideEffect: true, fn: () => 'sent' };
    const policy = scriptedPolicy([{ tool: 'count', args: { n: 1 } }, { tool: 'mail' }, { final: 'mailed' }]);
    const first = new Agent({ policy, tools: [tool, mail], store, runId: 'r' });
    expect(await first.start('go')).toBe('awaiting_approval');
    const again = await Agent.load(store, 'r', { policy, tools: [tool, mail] });
    expect(await again.decide(true)).toBe('done');
    expect(again.state.answer).toBe('mailed');
    expect(seen).toEqual([1]);
  });

  it('called by hand without a context, counts the assistant turns it is given', () => {
    const policy = scriptedPolicy([{ final: 'first' }, { final: 'second' }]);
    const call = policy as unknown as (history: unknown[]) => Action;
    expect(call([{ role: 'user', content: 'x' }])).toEqual({ final: 'first' });
    expect(
      call([
        { role: 'user', content: 'x' },
        { role: 'assistant', final: 'first' },
      ]),
    ).toEqual({ final: 'second' });
  });
});
