/**
 * Version 2 → 3. Version 3 adds the cost budget: the run's spending in `usage.costUsd` and its
 * limit in `limits.maxCostUsd`. A version-2 run spent nothing that was counted, and had no cost
 * budget: `costUsd: 0`, `maxCostUsd: null`. Nothing else changed.
 *
 * The version-2 fields this step reads are checked as version 2 wrote them (strict shapes), with
 * version-2 paths in the error: a blob that version 2 refused (or one holding version-3 fields
 * already) is not made valid by migrating it. The rest is validated as version 3 after.
 */
import { z } from 'zod';
import { CheckpointError } from '../errors.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const count = z.number().int().nonnegative();
const limitOrNull = z.number().nonnegative().nullable();
const v2Usage = z.strictObject({ inputTokens: count, outputTokens: count });
const v2Limits = z.strictObject({ maxSteps: count, maxTokens: limitOrNull, maxActiveMs: limitOrNull });

function refuse(message: string, path: string): never {
  throw new CheckpointError(`invalid checkpoint: ${path}: ${message}`, path);
}

function checked<T extends object>(schema: z.ZodType<T>, value: unknown, path: string): T {
  const result = schema.safeParse(value);
  if (result.success) return value as T;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const where = [path, ...issue.path.map(String)].join('.');
  return refuse(issue.message, where);
}

export function migrateV2(snapshot: unknown): unknown {
  if (!isObject(snapshot) || !isObject(snapshot.context)) return snapshot;
  const ctx = snapshot.context;
  if (isObject(ctx.usage) && 'costUsd' in ctx.usage) refuse('not a version-2 field', 'snapshot.context.usage.costUsd');
  if (isObject(ctx.limits) && 'maxCostUsd' in ctx.limits) {
    refuse('not a version-2 field', 'snapshot.context.limits.maxCostUsd');
  }
  const usage = checked(v2Usage, ctx.usage, 'snapshot.context.usage');
  const limits = checked(v2Limits, ctx.limits, 'snapshot.context.limits');
  return {
    ...snapshot,
    context: { ...ctx, usage: { ...usage, costUsd: 0 }, limits: { ...limits, maxCostUsd: null } },
  };
}
