import { describe, expect, it } from 'vitest';
import { machineGraph, machineMermaid } from '../src/cli/diagram.js';
import { defineAgent, isAgentDefinition, OptionsError } from '../src/index.js';

describe('defineAgent', () => {
  const policy = () => ({ final: 1 });
  it('checks the definition up front and brands it', () => {
    const def = defineAgent({ name: 'a', policy, tools: [], maxSteps: 3 });
    expect(isAgentDefinition(def)).toBe(true);
    expect(Object.isFrozen(def)).toBe(true);
    expect(isAgentDefinition({ name: 'a', policy, tools: [] })).toBe(false);
    expect(isAgentDefinition(null)).toBe(false);
  });
  it('rejects a bad definition with OptionsError', () => {
    expect(() => defineAgent({ name: '', policy, tools: [] })).toThrow(OptionsError);
    expect(() => defineAgent({ name: 'a', policy, tools: [], maxSteps: -1 })).toThrow(/maxSteps/);
    expect(() => defineAgent({ name: 'a', tools: [] } as never)).toThrow(/policy/);
    expect(() => defineAgent(null as never)).toThrow(OptionsError);
  });
});

describe('the machine diagram', () => {
  it('has every state and every transition, including always and CANCEL from each live state', () => {
    const g = machineGraph();
    const ids = g.states.map((s) => s.id).sort();
    expect(ids).toEqual(
      [
        'agent.awaiting_approval',
        'agent.budget_exhausted',
        'agent.cancelled',
        'agent.done',
        'agent.failed',
        'agent.idle',
        'agent.running',
        'agent.running.batching',
        'agent.running.deciding',
        'agent.running.dispatching',
        'agent.running.executing',
        'agent.running.malformed',
        'agent.running.summarising',
      ].sort(),
    );
    const edge = (from: string, to: string, event: string) =>
      g.edges.some((e) => e.from === `agent.${from}` && e.to === `agent.${to}` && e.event === event);
    // The budget rule is deciding's own: tried on entering it, before the policy call starts.
    expect(edge('running.deciding', 'budget_exhausted', 'always')).toBe(true);
    expect(edge('running.deciding', 'running.summarising', 'always')).toBe(true);
    // A step whose first call needs nobody goes straight to it; its last outcome starts the next step.
    expect(edge('running.deciding', 'running.executing', 'done:policy')).toBe(true);
    expect(edge('running.deciding', 'running.dispatching', 'done:policy')).toBe(true);
    expect(edge('running.executing', 'running.deciding', 'done:tool')).toBe(true);
    expect(edge('running.executing', 'running.deciding', 'error:tool')).toBe(true);
    expect(edge('awaiting_approval', 'running.dispatching', 'DECIDE')).toBe(true);
    expect(edge('running.dispatching', 'running.executing', 'always')).toBe(true);
    expect(edge('running.dispatching', 'awaiting_approval', 'always')).toBe(true);
    expect(edge('running.dispatching', 'running.deciding', 'always')).toBe(true);
    expect(edge('running.executing', 'running.dispatching', 'done:tool')).toBe(true);
    // Calls that may run together go in flight at once, from the policy's answer or the dispatch.
    expect(edge('running.deciding', 'running.batching', 'done:policy')).toBe(true);
    expect(edge('running.dispatching', 'running.batching', 'always')).toBe(true);
    expect(edge('running.batching', 'running.batching', 'CALL_DONE')).toBe(true);
    expect(edge('running.batching', 'running.dispatching', 'done:tools')).toBe(true);
    expect(edge('running.summarising', 'running.deciding', 'done:summary')).toBe(true);
    expect(edge('running.summarising', 'budget_exhausted', 'done:summary')).toBe(true);
    expect(edge('running.summarising', 'running.deciding', 'error:summary')).toBe(true);
    for (const s of ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed', 'done']) {
      expect(edge(s, 'cancelled', 'CANCEL')).toBe(true);
    }
    expect(edge('cancelled', 'cancelled', 'CANCEL')).toBe(false);
    // A conversation: a new message goes on from an answer, or from a budget's stop.
    expect(edge('done', 'running', 'SEND')).toBe(true);
    expect(edge('budget_exhausted', 'running', 'SEND')).toBe(true);
    expect(edge('running.deciding', 'budget_exhausted', 'always')).toBe(true);
    const mermaid = machineMermaid();
    expect(mermaid.startsWith('stateDiagram-v2\n')).toBe(true);
    expect(mermaid).toContain('running_deciding --> budget_exhausted : always [noStepsLeft]');
    expect(mermaid).toContain('running_deciding --> budget_exhausted : error:policy [activeTimeSpentByCall]');
    expect(mermaid).toContain('state "executing" as running_executing');
    expect(mermaid).toContain('running_deciding --> running_summarising : always [summaryDue]');
    expect(mermaid).toContain('running_deciding --> running_malformed : done:policy');
    expect(mermaid).toContain('running_malformed --> running_deciding : always');
    // A conversation: Stately and `tollgate machine` draw the new message, and only cancelled is final.
    expect(mermaid).toContain('done --> running : SEND');
    expect(mermaid).toContain('budget_exhausted --> running : SEND');
    expect(mermaid).toContain('cancelled --> [*]');
    expect(mermaid).not.toContain('done --> [*]');
  });
});
