/**
 * What the adapter tests share: the support-desk tools (typed, with schemas), a history with every
 * kind of entry the mapping must render, and a policy context for calling a policy directly.
 */
import { z } from 'zod';
import { defineTool, type HistoryEntry, type PolicyContext, type PolicyDelta } from '../../src/index.js';

export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Look an order up by its id',
  input: z.object({ order: z.string() }),
  fn: ({ order }) => ({ order, item: order === 'A-1001' ? 'espresso machine' : 'milk frother', damaged: true }),
});

export const refund = defineTool({
  name: 'refund',
  description: 'Refund an order, in dollars',
  input: z.object({ order: z.string(), amount: z.number() }),
  sideEffect: true,
  needsApproval: ({ amount }) => amount > 50,
  fn: ({ order, amount }) => ({ refunded: amount, order }),
});

export const tools = [lookupOrder, refund] as const;

/** Every kind of entry a history holds, in an order the runtime could have written. */
export const history: HistoryEntry[] = [
  { role: 'user', content: 'Refund the broken orders A-1001 and A-1002.' },
  // A step of two calls with text beside them; one result, one denial.
  {
    role: 'assistant',
    text: 'Looking up both.',
    calls: [
      { id: 'call_a', tool: 'lookup_order', args: { order: 'A-1001' } },
      { id: 'call_b', tool: 'refund', args: { order: 'A-1002', amount: 500 } },
    ],
  },
  { role: 'tool', tool: 'lookup_order', id: 'call_a', result: { order: 'A-1001', damaged: true } },
  { role: 'tool', tool: 'refund', id: 'call_b', error: 'denied by human: too much' },
  // A one-call step without ids (a scripted policy), run with arguments a human edited.
  { role: 'assistant', tool: 'refund', args: { order: 'A-1001', amount: 500 } },
  {
    role: 'tool',
    tool: 'refund',
    result: 'ok',
    approval: {
      approved: true,
      by: 'ana',
      note: '',
      at: '2026-01-01T00:00:00.000Z',
      callId: 'x',
      args: { order: 'A-1001', amount: 129 },
    },
  },
  // A malformed action: no call was made, so no tool result may answer it.
  { role: 'tool', tool: '', error: 'malformed action: args must be an object' },
  // An id the APIs would refuse (a run's key), and an expired approval.
  { role: 'assistant', tool: 'refund', args: { order: 'A-1002', amount: 19 }, id: 'run-1:4' },
  { role: 'tool', tool: 'refund', id: 'run-1:4', error: 'approval expired' },
  { role: 'assistant', final: 'Refunded A-1001.' },
  { role: 'user', content: 'And A-1002?' },
];

/** A context for calling a policy directly; `deltas` collects what it streams. */
export function policyContext(overrides: Partial<PolicyContext> = {}): PolicyContext & { deltas: PolicyDelta[] } {
  const deltas: PolicyDelta[] = [];
  return {
    runId: 'run-1',
    step: 1,
    attempt: 0,
    signal: new AbortController().signal,
    remaining: { steps: 5, tokens: null, activeMs: null },
    stream: (delta) => deltas.push(delta),
    deltas,
    ...overrides,
  };
}

/** The text, the reasoning and the per-call argument text a run's delta events add up to. */
export function joinDeltas(deltas: PolicyDelta[]): { text: string; reasoning: string; calls: Record<number, string> } {
  let text = '';
  let reasoning = '';
  const calls: Record<number, string> = {};
  for (const d of deltas) {
    if (d.kind === 'text') text += d.text;
    else if (d.kind === 'reasoning') reasoning += d.text;
    else calls[d.index] = (calls[d.index] ?? '') + (d.argsText ?? '');
  }
  return { text, reasoning, calls };
}
