/**
 * The shape of a version-5 persisted snapshot, as zod schemas. What the shapes cannot say (which
 * fields go with which state) is in rules.ts.
 */
import { z } from 'zod';
import { MAX_COST_USD, MICRO_USD, microUsd } from '../../machines/budget.js';
import { MAX_SUMMARY_LENGTH } from '../../machines/compaction.js';
import type { AgentContext } from '../../machines/types.js';

/** The longest summary text a checkpoint may hold: the kept text and the note of what was cut. */
export const MAX_STORED_SUMMARY = MAX_SUMMARY_LENGTH + 100;

/** The persisted snapshot as XState writes it for the agent machine. */
export interface PersistedRun {
  status: 'active' | 'done';
  value: string | { running: 'deciding' | 'executing' | 'batching' | 'summarising' };
  historyValue: Record<string, never>;
  context: AgentContext;
  children: Record<string, { snapshot: { status: 'active'; input: unknown }; src: string; syncSnapshot: false }>;
}

const count = z.number().int().nonnegative();
const iso = z.iso.datetime();
const json = z.json();
const jsonObject = z.record(z.string(), json);

export const approvalSchema = z.strictObject({
  approved: z.boolean(),
  by: z.string(),
  note: z.string(),
  at: iso,
  callId: z.string(),
  args: jsonObject.optional(),
  always: z.literal(true).optional(),
  standing: z.string().optional(),
});

/** A history entry's schema (exported for the tests of the quick check). */
export const entrySchema = z.union([
  // Strict: a run's instructions, written by the runtime from checked messages.
  z.strictObject({ role: z.literal('system'), content: z.string() }),
  z.looseObject({ role: z.literal('user'), content: z.string() }),
  z.looseObject({
    role: z.literal('assistant'),
    tool: z.string(),
    args: jsonObject,
    id: z.string().optional(),
    text: z.string().optional(),
  }),
  z.looseObject({
    role: z.literal('assistant'),
    calls: z.array(z.strictObject({ id: z.string(), tool: z.string(), args: jsonObject })).min(2),
    text: z.string().optional(),
  }),
  z.looseObject({ role: z.literal('assistant'), final: json }),
  // Strict: an earlier reply given with the messages a run started from.
  z.strictObject({ role: z.literal('assistant'), content: z.string() }),
  z.looseObject({
    role: z.literal('tool'),
    tool: z.string(),
    result: json,
    id: z.string().optional(),
    approval: approvalSchema.optional(),
    verified: z.literal(true).optional(),
  }),
  z.looseObject({
    role: z.literal('tool'),
    tool: z.string(),
    error: z.string(),
    id: z.string().optional(),
    approval: approvalSchema.optional(),
    outcome: z.literal('unknown').optional(),
  }),
  // Strict: a summary is made by the runtime alone, with exactly these fields.
  z.strictObject({
    role: z.literal('summary'),
    text: z.string().min(1).max(MAX_STORED_SUMMARY),
    covers: z.strictObject({ from: z.number().int().positive(), to: z.number().int().positive() }),
  }),
]);

const outcome = z.union([
  z.strictObject({ result: json, approval: approvalSchema.optional(), verified: z.literal(true).optional() }),
  z.strictObject({ error: z.string(), approval: approvalSchema.optional(), outcome: z.literal('unknown').optional() }),
]);

export const callSchema = z.strictObject({
  id: z.string().min(1),
  key: z.string().min(1),
  step: z.number().int().positive(),
  index: z.number().int().positive(),
  toolCallId: z.string().min(1),
  modelId: z.boolean(),
  tool: z.string().min(1),
  args: jsonObject,
  attempt: z.number().int().positive(),
  state: z.enum(['queued', 'pending', 'running', 'done']),
  requestedAt: iso.nullable(),
  expiresAt: iso.nullable(),
  outcome: z.literal('unknown').nullable(),
  approval: approvalSchema.nullable(),
  done: outcome.nullable(),
  concurrent: z.literal(true).optional(),
});

const limitOrNull = z.number().nonnegative().nullable();
// What the machine adds is a whole number of micro-dollars (machines/budget.ts addUsd).
const spentUsd = z
  .number()
  .nonnegative()
  .max(MAX_COST_USD)
  .refine((usd) => Number.isFinite(usd) && microUsd(usd) / MICRO_USD === usd, 'dollars to the micro-dollar');
// As options.ts accepts it.
const costLimit = z.number().min(0.000001).max(MAX_COST_USD).nullable();
const positive = z.number().int().positive();
const turnLimits = z.strictObject({
  maxSteps: positive.optional(),
  maxTokens: positive.optional(),
  maxCostUsd: z.number().min(0.000001).max(MAX_COST_USD).optional(),
});

const context = z.strictObject({
  runId: z.string().min(1),
  history: z.array(entrySchema),
  steps: count,
  usage: z.strictObject({
    inputTokens: count,
    outputTokens: count,
    costUsd: spentUsd,
    estimatedTokens: z.number().int().positive().optional(),
  }),
  activeMs: z.number().nonnegative(),
  limits: z.strictObject({
    maxSteps: count,
    maxTokens: limitOrNull,
    maxActiveMs: limitOrNull,
    maxCostUsd: costLimit,
    perTurn: turnLimits.nullable().optional(),
  }),
  approvalTtlMs: z.number().positive().nullable(),
  calls: z.array(callSchema),
  standing: z.record(z.string(), approvalSchema),
  answer: json,
  stoppedBy: z.enum(['steps', 'tokens', 'cost', 'time', 'group', 'turn']).nullable(),
  error: z.string().nullable(),
  cancelReason: z.string().nullable(),
  compaction: z.strictObject({ failures: count, error: z.string().nullable(), retryAt: count }),
  turn: z.strictObject({ steps: count, tokens: count, costUsd: spentUsd }).optional(),
});

const value = z.union([
  z.enum(['idle', 'awaiting_approval', 'budget_exhausted', 'failed', 'done', 'cancelled']),
  z.strictObject({ running: z.enum(['deciding', 'executing', 'batching', 'summarising']) }),
]);

export const snapshotSchema = z.strictObject({
  status: z.enum(['active', 'done']),
  value,
  historyValue: z.strictObject({}),
  context,
  children: z.record(z.string(), z.unknown()),
});

export const envelopeSchema = z.looseObject({ format: z.unknown(), version: z.unknown(), snapshot: z.unknown() });
