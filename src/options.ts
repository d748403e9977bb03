/**
 * Option checking, up front: a bad option throws `OptionsError` naming the option and the value,
 * before anything runs or is persisted.
 */
import { z } from 'zod';
import type { Limits } from '../machines/types.js';
import { type Clock, systemClock } from './clock.js';
import { OptionsError } from './errors.js';
import type { AgentOptions, Policy, ResumeOptions, RuntimeOptions, Tool } from './types.js';

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: 'expected a function' });
const count = z.number().int().nonnegative();
const limit = z.number().nonnegative().nullable().optional();

const tool = z.looseObject({
  name: z.string().min(1),
  fn,
  sideEffect: z.boolean().optional(),
  needsApproval: z.union([z.boolean(), fn]).optional(),
  idempotent: z.boolean().optional(),
  timeoutMs: z.number().positive().finite().optional(),
});

const runtime = {
  policy: fn,
  tools: z.array(tool),
  clock: z.looseObject({ now: fn, sleep: fn }).optional(),
  policyRetries: z.number().int().min(0).max(100).optional(),
  retryDelayMs: z.number().nonnegative().finite().optional(),
};

const agentSchema = z.looseObject({
  ...runtime,
  maxSteps: count.optional(),
  maxTokens: limit,
  maxActiveMs: limit,
  approvalTtlMs: z.number().positive().finite().nullable().optional(),
  runId: z.string().min(1).max(200).optional(),
  store: z.looseObject({ load: fn, save: fn, list: fn, delete: fn }).optional(),
});

const resumeSchema = z.looseObject({ ...runtime, maxSteps: count.optional(), maxTokens: limit, maxActiveMs: limit });

const limitsSchema = z.strictObject({ maxSteps: count.optional(), maxTokens: limit, maxActiveMs: limit });

/** The runtime pieces of the options, checked and with defaults. */
export interface Runtime {
  policy: Policy;
  tools: ReadonlyMap<string, Tool>;
  clock: Clock;
  policyRetries: number;
  retryDelayMs: number;
}

/**
 * Validates `value` and returns it as it was: zod's output is a plain copy, which would unbind
 * methods of a class-based clock or tool.
 */
function check<T>(schema: z.ZodType<unknown>, value: T, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return value;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const where = issue.path.length ? issue.path.map(String).join('.') : what;
  throw new OptionsError(`${what}: ${where}: ${issue.message}`);
}

function runtimeOf(options: RuntimeOptions): Runtime {
  const tools = new Map<string, Tool>();
  for (const t of options.tools) {
    if (tools.has(t.name)) throw new OptionsError(`options: tools: two tools are named ${JSON.stringify(t.name)}`);
    tools.set(t.name, t);
  }
  return {
    policy: options.policy,
    tools,
    clock: options.clock ?? systemClock,
    policyRetries: options.policyRetries ?? 2,
    retryDelayMs: options.retryDelayMs ?? 250,
  };
}

/** Only the limits the caller named, for overriding a checkpoint's. */
function limitsGiven(options: {
  maxSteps?: number;
  maxTokens?: number | null;
  maxActiveMs?: number | null;
}): Partial<Limits> {
  const out: Partial<Limits> = {};
  if (options.maxSteps !== undefined) out.maxSteps = options.maxSteps;
  if (options.maxTokens !== undefined) out.maxTokens = options.maxTokens;
  if (options.maxActiveMs !== undefined) out.maxActiveMs = options.maxActiveMs;
  return out;
}

export function parseAgentOptions(options: AgentOptions) {
  const o = check(agentSchema, options, 'options');
  return {
    runtime: runtimeOf(o),
    runId: o.runId,
    limits: { maxSteps: 8, maxTokens: null, maxActiveMs: null, ...limitsGiven(o) } as Limits,
    approvalTtlMs: o.approvalTtlMs ?? null,
  };
}

export function parseResumeOptions(options: ResumeOptions) {
  const o = check(resumeSchema, options, 'options');
  return { runtime: runtimeOf(o), limits: limitsGiven(o) };
}

export function parseLimits(limits: unknown): Partial<Limits> {
  return limitsGiven(check(limitsSchema, limits as Partial<Limits>, 'extendBudget'));
}
