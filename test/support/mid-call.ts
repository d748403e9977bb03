/** A run stopped while an approved `pay` call is in flight: the crash tests' starting point. */
import { expect } from 'vitest';
import { Agent, type Tool } from '../../src/index.js';
import { gate, sequence, until } from './helpers.js';

/** A tool whose first call hangs until released, so a checkpoint can be taken mid-call. */
export function blocking(name: string, extra: Partial<Tool> = {}) {
  const held = gate();
  const calls: { args: unknown; key: string; signal: AbortSignal }[] = [];
  const tool: Tool = {
    name,
    ...extra,
    fn: (args, key, ctx) => {
      calls.push({ args, key, signal: ctx.signal });
      return held.promise;
    },
  };
  return { tool, calls, held };
}

/** Starts a run that approves `name` and stops while the call is in flight; returns that checkpoint. */
export async function midCall(extra: Partial<Tool>) {
  const b = blocking('pay', extra);
  const agent = new Agent({
    runId: 'r',
    policy: sequence({ tool: 'pay', args: { amount: 7 } }, { final: 'paid' }),
    tools: [b.tool],
  });
  void agent.start('pay');
  await until(() => b.calls.length === 1 || agent.status === 'awaiting_approval');
  if (agent.status === 'awaiting_approval') void agent.decide(true, 'go', { by: 'alice' });
  await until(() => b.calls.length === 1);
  const blob = agent.checkpoint();
  await agent.cancel('simulated crash'); // the original process is gone
  expect(agent.status).toBe('cancelled');
  expect(b.calls[0]?.signal.aborted).toBe(true);
  return blob;
}
