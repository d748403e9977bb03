/**
 * The support-desk agent behind `npm start`: a scripted policy (no API key) or a real model
 * (`OPENAI_API_KEY` or `ANTHROPIC_API_KEY`: see model.ts), a pure order lookup, an idempotent
 * email tool, and a refund tool that needs a human's approval above $50. Its effects go to JSON
 * files beside the store (`.tollgate/`), keyed by idempotency key. The tools' schemas are what a
 * real model is told of their arguments.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { defineAgent, type HistoryEntry, type Policy, type Tool } from '../../src/index.js';
import { modelPolicy } from './model.js';

const dir = process.env.TOLLGATE_DEMO_DIR ?? '.tollgate';
const thinkMs = Number(process.env.TOLLGATE_DEMO_THINK_MS ?? 400);

const ORDERS: Record<string, { customer: string; item: string; amount: number }> = {
  'A-1001': { customer: 'ana@example.com', item: 'espresso machine', amount: 129 },
  'A-1002': { customer: 'bo@example.com', item: 'milk frother', amount: 19 },
};

/** Appends a record to a JSON ledger file, once per key when `dedupe` is set. */
function record(file: string, key: string, entry: object, dedupe: boolean): { duplicate: boolean } {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, file);
  const rows: { key: string }[] = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : [];
  if (dedupe && rows.some((r) => r.key === key)) return { duplicate: true };
  rows.push({ key, ...entry });
  writeFileSync(`${path}.tmp`, JSON.stringify(rows, null, 2));
  renameSync(`${path}.tmp`, path);
  return { duplicate: false };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => clearTimeout(timer), { once: true });
  });

const tools: Tool[] = [
  {
    name: 'lookup_order',
    description: 'Look an order up by its id (A-1234): customer email, item, amount in dollars',
    input: z.object({ order: z.string() }),
    fn: async ({ order }: { order: string }) => {
      await sleep(thinkMs / 2);
      const found = ORDERS[order];
      if (!found) throw new Error(`no order ${order}`);
      return { order, ...found };
    },
  },
  {
    name: 'refund',
    description: 'Refund an order, an amount in dollars',
    input: z.object({ order: z.string(), amount: z.number().positive() }),
    sideEffect: true,
    // Small refunds go through; above $50 a human approves each one.
    needsApproval: ({ amount }: { amount: number }) => amount > 50,
    fn: ({ order, amount }: { order: string; amount: number }, key) => {
      record('refunds.json', key, { order, amount, at: new Date().toISOString() }, false);
      return { refunded: amount, order };
    },
  },
  {
    name: 'send_email',
    description: 'Email a customer',
    input: z.object({ to: z.string(), subject: z.string(), body: z.string().optional() }),
    sideEffect: true,
    needsApproval: false, // routine customer mail: no approval, but deduplicated by key
    idempotent: true,
    fn: ({ to, subject }: { to: string; subject: string }, key) => {
      const { duplicate } = record('outbox.json', key, { to, subject }, true);
      return { queued: !duplicate, duplicate };
    },
  },
];

const last = (history: HistoryEntry[], tool: string) =>
  [...history].reverse().find((e) => e.role === 'tool' && e.tool === tool) as
    | { result?: Record<string, unknown>; error?: string }
    | undefined;

/** A scripted stand-in for a model: look up, refund, email the customer, answer. */
const policy: Policy = async (history, { signal }) => {
  await sleep(thinkMs, signal);
  const goal = (history[0] as { content: string }).content;
  const order = /A-\d{4}/.exec(goal)?.[0] ?? 'A-1001';
  const lookup = last(history, 'lookup_order');
  if (!lookup) return { tool: 'lookup_order', args: { order }, usage: { inputTokens: 120, outputTokens: 18 } };
  if (lookup.error) return { final: `I could not find order ${order}.` };
  const info = lookup.result as unknown as { customer: string; amount: number; order: string };
  const refund = last(history, 'refund');
  if (!refund)
    return { tool: 'refund', args: { order, amount: info.amount }, usage: { inputTokens: 180, outputTokens: 22 } };
  const email = last(history, 'send_email');
  // What the refund tool did, not what was asked: an approver may have edited the amount.
  const refunded = refund.error === undefined ? Number(refund.result?.refunded) : null;
  const asked = refunded !== null && refunded !== info.amount ? ` of the $${info.amount} asked` : '';
  if (!email) {
    const subject = refunded !== null ? `Your refund of $${refunded} for ${order}` : `About your order ${order}`;
    return { tool: 'send_email', args: { to: info.customer, subject }, usage: { inputTokens: 220, outputTokens: 40 } };
  }
  return {
    final:
      refunded !== null
        ? `Refunded $${refunded}${asked} for ${order} and emailed ${info.customer}.`
        : `No refund for ${order} (${refund.error}); emailed ${info.customer}.`,
    usage: { inputTokens: 260, outputTokens: 30 },
  };
};

export default defineAgent({
  name: 'support-desk',
  description: 'Handles a refund request: looks up the order, refunds (approval above $50), emails the customer.',
  policy: modelPolicy(tools) ?? policy,
  tools,
  maxSteps: 8,
  approvalTtlMs: 24 * 3600 * 1000,
});
