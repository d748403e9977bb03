/**
 * Real runs in each kind of state a head is saved in, and values for the context's defaultable
 * fields: what the stored-form and head-delta tests build heads from.
 */
import fc from 'fast-check';
import { entryOf } from '../../src/checkpoint/index.js';
import { Agent, type Tool } from '../../src/index.js';
import { gate, sequence, until } from './helpers.js';

/** Real runs in each kind of state a head is saved in: the invoked child differs in each. */
export async function states(): Promise<Record<string, { snapshot: Record<string, any>; entries: string[] }>> {
  const held = gate();
  let calling = false;
  const tools: Tool[] = [
    { name: 'pay', sideEffect: true, fn: () => 'paid' },
    {
      name: 'look',
      fn: async () => {
        calling = true;
        await held.promise;
        return 'seen';
      },
    },
  ];
  const of = (agent: Agent) => {
    const blob = JSON.parse(agent.checkpoint());
    return { snapshot: blob.snapshot, entries: blob.snapshot.context.history.map(entryOf) };
  };
  const done = new Agent({ runId: 'd', policy: sequence({ final: 'ok' }), tools });
  await done.start('go');
  const waiting = new Agent({ runId: 'w', policy: sequence({ tool: 'pay', args: { cents: 5 } }), tools });
  await waiting.start('go');
  const deciding = new Agent({ runId: 'p', policy: () => new Promise(() => {}), tools });
  void deciding.start('go');
  const executing = new Agent({ runId: 'x', policy: sequence({ tool: 'look' }, { final: 'ok' }), tools });
  void executing.start('go');
  await until(() => calling);
  const budget = new Agent({ runId: 'b', maxSteps: 1, policy: sequence({ tool: 'look' }), tools });
  const all = { done: of(done), waiting: of(waiting), deciding: of(deciding), executing: of(executing) };
  held.resolve(undefined);
  await budget.start('go');
  return { ...all, budget: of(budget) };
}

/** A value for a defaultable field: its default, or something else of the right kind. */
export const fieldValues = {
  answer: fc.oneof(fc.constant(null), fc.string(), fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 })),
  approvalTtlMs: fc.oneof(fc.constant(null), fc.nat()),
  cancelReason: fc.oneof(fc.constant(null), fc.string()),
  compaction: fc.record({
    error: fc.oneof(fc.constant(null), fc.string()),
    failures: fc.nat(3),
    retryAt: fc.constantFrom(0, 1_700_000_000_000),
  }),
  error: fc.oneof(fc.constant(null), fc.string()),
  stoppedBy: fc.oneof(fc.constant(null), fc.constantFrom('steps', 'tokens', 'group')),
  limits: fc.record({
    maxActiveMs: fc.oneof(fc.constant(null), fc.nat()),
    maxCostUsd: fc.oneof(fc.constant(null), fc.double({ min: 0, max: 10, noNaN: true })),
    maxSteps: fc.integer({ min: 1, max: 50 }),
    maxTokens: fc.oneof(fc.constant(null), fc.nat()),
  }),
};
