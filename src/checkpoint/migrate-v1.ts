/**
 * Version 1 → 2. Version 1 held one call per step: `pending` (awaiting approval) or `inflight`
 * (executing). Version 2 holds the step's calls in `calls` and the run's standing approvals in
 * `standing`; the invoked tool actor's input is the call. History entries are unchanged: every
 * version-1 entry is a version-2 entry.
 *
 * The version-1 fields this step reads are checked as version 1 wrote them (strict shapes, the
 * tool actor's input being the call in flight), with version-1 paths in the error: a blob that
 * version 1 refused is not made valid by migrating it. The rest is validated as version 2 after.
 */
import { z } from 'zod';
import { CheckpointError } from '../errors.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const iso = z.iso.datetime();
const jsonObject = z.record(z.string(), z.json());
const approval = z.strictObject({
  approved: z.boolean(),
  by: z.string(),
  note: z.string(),
  at: iso,
  callId: z.string(),
});
const call = {
  id: z.string().min(1),
  key: z.string().min(1),
  step: z.number().int().positive(),
  tool: z.string().min(1),
  args: jsonObject,
  attempt: z.number().int().positive(),
};
const v1Pending = z.strictObject({
  ...call,
  requestedAt: iso,
  expiresAt: iso.nullable(),
  outcome: z.literal('unknown').optional(),
});
const v1Inflight = z.strictObject({ ...call, approval: approval.nullable() });

function refuse(message: string, path: string): never {
  throw new CheckpointError(`invalid checkpoint: ${path}: ${message}`, path);
}

function checked<T>(schema: z.ZodType<T>, value: unknown, path: string): T | null {
  if (value === null) return null;
  const result = schema.safeParse(value);
  if (result.success) return value as T;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const where = [path, ...issue.path.map(String)].join('.');
  return refuse(issue.message, where);
}

function callOf(old: Record<string, unknown>, state: 'pending' | 'running'): Record<string, unknown> {
  return {
    id: old.id,
    key: old.key,
    step: old.step,
    index: 1,
    toolCallId: old.key,
    modelId: false,
    tool: old.tool,
    args: old.args,
    attempt: old.attempt,
    state,
    requestedAt: state === 'pending' ? old.requestedAt : null,
    expiresAt: state === 'pending' ? old.expiresAt : null,
    outcome: state === 'pending' && old.outcome === 'unknown' ? 'unknown' : null,
    approval: state === 'running' ? old.approval : null,
    done: null,
  };
}

export function migrateV1(snapshot: unknown): unknown {
  if (!isObject(snapshot) || !isObject(snapshot.context)) return snapshot;
  const ctx = snapshot.context;
  for (const field of ['pending', 'inflight']) {
    if (!(field in ctx)) refuse('missing (a version-1 checkpoint has it)', `snapshot.context.${field}`);
  }
  for (const field of ['calls', 'standing']) {
    if (field in ctx) refuse('not a version-1 field', `snapshot.context.${field}`);
  }
  const { pending, inflight, ...rest } = ctx;
  const p = checked(v1Pending, pending, 'snapshot.context.pending');
  const f = checked(v1Inflight, inflight, 'snapshot.context.inflight');
  const calls: Record<string, unknown>[] = [];
  if (p) calls.push(callOf(p, 'pending'));
  if (f) calls.push(callOf(f, 'running'));
  const children = isObject(snapshot.children) ? snapshot.children : {};
  const tool = children.tool;
  let migratedChildren = children;
  if (isObject(tool) && isObject(tool.snapshot)) {
    // Version 1's rule: the tool actor runs exactly the call in flight.
    if (JSON.stringify(tool.snapshot.input) !== JSON.stringify(inflight)) {
      refuse('the invoked tool actor does not run the call in flight', 'snapshot.children.tool');
    }
    if (calls[0])
      migratedChildren = { ...children, tool: { ...tool, snapshot: { ...tool.snapshot, input: calls[0] } } };
  }
  return { ...snapshot, context: { ...rest, calls, standing: {} }, children: migratedChildren };
}
