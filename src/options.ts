/**
 * The options of an Agent (`new Agent`, `Agent.resume`, `Agent.load`, `extendBudget`), each object
 * defined once by its schema (option-schema.ts) and checked up front: a bad option throws
 * `OptionsError` naming the call, the option and the bad value (`new Agent: maxSteps must be a
 * whole number ≥ 0, got -1`), before anything runs or is persisted. Every duration is bounded
 * where it becomes a timer (2^31−1 ms) or a date (the representable range).
 */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { MAX_COST_USD } from '../machines/budget.js';
import { hasLoneSurrogate } from '../machines/strings.js';
import type { Limits, TurnLimits } from '../machines/types.js';
import { type Clock, MAX_TIMER_MS, systemClock } from './clock.js';
import { type Compaction, compactionOf } from './compaction.js';
import { OptionsError } from './errors.js';
import { isPlainObject } from './json.js';
import { checkKeys, showValue } from './option-keys.js';
import {
  checkedApart,
  checkOptions,
  clockSchema,
  count,
  fn,
  keysOf,
  must,
  type OptionShape,
  pathText,
  text,
  timerMs,
  valueAt,
} from './option-schema.js';
import { type Pricing, pricingOf } from './price.js';
import { groupBudgetsOf } from './store/contract.js';
import { checkGroupId } from './store/groups.js';
import { checkToolSchema } from './tool-schema.js';
import type { TracerLike } from './tracer.js';
import type { AgentOptions, InspectOption, Policy, ResumeOptions, RunOptions, RuntimeOptions, Tool } from './types.js';

/** The longest approval TTL: 10 years, so every expiry time is a representable date. */
export const MAX_APPROVAL_TTL_MS = 10 * 365 * 24 * 3_600_000;

const tokens = must('a whole number ≥ 0, or null for no limit', (e) =>
  z.number(e).int(e).min(0, e).max(Number.MAX_SAFE_INTEGER, e).nullable().optional(),
);
const activeMs = must('a number of milliseconds ≥ 0, or null for no limit', (e) =>
  z.number(e).min(0, e).max(Number.MAX_SAFE_INTEGER, e).nullable().optional(),
);
// Positive: a budget of 0 dollars would allow no policy call at all (maxSteps: 0 says that).
// At least a micro-dollar, the unit spending is counted in; at most MAX_COST_USD, so sums stay exact.
const costUsd = must(`a number of US dollars from 0.000001 to ${MAX_COST_USD}, or null for no limit`, (e) =>
  z.number(e).min(0.000001, e).max(MAX_COST_USD, e).nullable().optional(),
);
const perMTok = must('a number of US dollars per million tokens ≥ 0', (e) =>
  z.number(e).min(0, e).max(MAX_COST_USD, e),
);
const modelPrice = z.strictObject(
  { inputUsdPerMTok: perMTok, outputUsdPerMTok: perMTok, cachedInputUsdPerMTok: perMTok.optional() },
  { error: 'a price { inputUsdPerMTok, outputUsdPerMTok, cachedInputUsdPerMTok? }' },
);
const priceTable =
  'a table of prices by model name ({ [model]: { inputUsdPerMTok, outputUsdPerMTok } }), or a function';
const price = z
  .custom<object>((v) => typeof v === 'function' || (isPlainObject(v) && Object.keys(v).length > 0), {
    error: priceTable,
  })
  .optional();
export const runIdSchema = must('a string of 1 to 200 characters, without control characters or lone surrogates', (e) =>
  z.custom<string>(
    (v) =>
      typeof v === 'string' &&
      v.length >= 1 &&
      v.length <= 200 &&
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
      !/[\u0000-\u001f\u007f]/.test(v) &&
      !hasLoneSurrogate(v),
    e,
  ),
);

const toolShape = {
  name: must('a non-empty string (without lone surrogates)', (e) =>
    z.custom<string>((v) => typeof v === 'string' && v !== '' && !hasLoneSurrogate(v), e),
  ),
  description: z.string({ error: 'a string' }).optional(),
  // Checked apart (tool-schema.ts), for errors that name the schema's problem.
  input: z.unknown().optional(),
  fn,
  sideEffect: z.boolean({ error: 'true or false' }).optional(),
  needsApproval: z.union([z.boolean(), fn], { error: 'true, false or a function' }).optional(),
  idempotent: z.boolean({ error: 'true or false' }).optional(),
  allowEdit: z.boolean({ error: 'true or false' }).optional(),
  timeoutMs: timerMs().optional(),
  verify: fn.optional(),
} satisfies OptionShape<Tool>;
const tool = z.looseObject(toolShape);

/** The keys a tool may have. */
export const TOOL_KEYS = keysOf(toolShape);

/** The schema of every run's runtime options (the worker's lease and observer options are these). */
export const runtimeShape = {
  policy: fn,
  tools: z.array(tool, { error: 'an array of tools' }),
  clock: clockSchema.optional(),
  policyRetries: must('a whole number from 0 to 100', (e) => z.number(e).int(e).min(0, e).max(100, e)).optional(),
  retryDelayMs: must(`a number of milliseconds ≥ 0 and ≤ ${MAX_TIMER_MS}`, (e) =>
    z.number(e).min(0, e).max(MAX_TIMER_MS, e),
  ).optional(),
  policyTimeoutMs: timerMs(', or null for none').nullable().optional(),
  leaseMs: timerMs().optional(),
  durability: z.enum(['full', 'points'], { error: '"full" or "points"' }).optional(),
  concurrency: must('a whole number from 1 to 64', (e) => z.number(e).int(e).min(1, e).max(64, e)).optional(),
  leaseWaitMs: must(`a number of milliseconds ≥ 0 and ≤ ${MAX_TIMER_MS}`, (e) =>
    z.number(e).min(0, e).max(MAX_TIMER_MS, e),
  ).optional(),
  inspect: z
    .custom<object>((v) => typeof v === 'function' || (v !== null && typeof v === 'object'), {
      error: 'a function or an observer of inspection events',
    })
    .optional(),
  tracer: z
    .custom<object>(
      (v) => {
        try {
          return v !== null && typeof v === 'object' && typeof (v as { startSpan?: unknown }).startSpan === 'function';
        } catch {
          return false;
        }
      },
      { error: "an OpenTelemetry Tracer (an object with startSpan, such as trace.getTracer('my-service'))" },
    )
    .optional(),
  price,
  // Checked apart (compaction.ts), for errors that name the path inside it.
  compaction: z.unknown().optional(),
  owner: must('a string of 1 to 256 characters (without lone surrogates)', (e) =>
    z.custom<string>((v) => typeof v === 'string' && v.length >= 1 && v.length <= 256 && !hasLoneSurrogate(v), e),
  ).optional(),
  // As a store keeps it (store/arguments.ts checkAgentName): 1 to 256 characters, no NUL, no lone surrogate.
  agent: must('a string of 1 to 256 characters, without NUL or lone surrogates', (e) =>
    z.custom<string>(
      (v) => typeof v === 'string' && v.length >= 1 && v.length <= 256 && !v.includes('\u0000') && !hasLoneSurrogate(v),
      e,
    ),
  ).optional(),
} satisfies OptionShape<RuntimeOptions>;
const limitShape = {
  maxSteps: count.optional(),
  maxTokens: tokens,
  maxActiveMs: activeMs,
  maxCostUsd: costUsd,
  // Checked apart (limitsGiven), for errors that name the field inside it.
  perTurn: checkedApart,
} satisfies OptionShape<Limits>;
/** `perTurn`'s fields: each limits the turn when given (a turn with no room for one step is refused). */
const turnShape = {
  maxSteps: must('a whole number ≥ 1', (e) => z.number(e).int(e).min(1, e).max(Number.MAX_SAFE_INTEGER, e).optional()),
  maxTokens: must('a whole number ≥ 1', (e) => z.number(e).int(e).min(1, e).max(Number.MAX_SAFE_INTEGER, e).optional()),
  maxCostUsd: must(`a number of US dollars from 0.000001 to ${MAX_COST_USD}`, (e) =>
    z.number(e).min(0.000001, e).max(MAX_COST_USD, e).optional(),
  ),
} satisfies OptionShape<TurnLimits>;
const storeShape = z.custom<object>(
  (v) =>
    v !== null &&
    typeof v === 'object' &&
    ['load', 'save', 'list', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { error: 'a CheckpointStore (an object with load, save, list and delete)' },
);
/** The schema of `new Agent`'s options. */
export const agentShape = {
  ...runtimeShape,
  ...limitShape,
  approvalTtlMs: must(`a number of milliseconds > 0 and ≤ ${MAX_APPROVAL_TTL_MS} (10 years), or null for never`, (e) =>
    z.number(e).gt(0, e).max(MAX_APPROVAL_TTL_MS, e).nullable().optional(),
  ),
  budgetGroup: must(
    'a group id: 1 to 128 characters of ASCII letters, digits and . _ : @ -, starting with a letter or digit',
    (e) =>
      z.custom<string>((v) => {
        try {
          checkGroupId('', v);
          return true;
        } catch {
          return false;
        }
      }, e),
  ).optional(),
  runId: runIdSchema.optional(),
  store: storeShape.optional(),
} satisfies OptionShape<AgentOptions>;
const resumeShape = { ...runtimeShape, ...limitShape } satisfies OptionShape<ResumeOptions>;

/** The options of `agent.run()`. */
export const runShape = {
  signal: z.instanceof(AbortSignal, { error: 'an AbortSignal' }).optional(),
} satisfies OptionShape<RunOptions>;

/** How a run holds its lease: who it is, how long a lease lasts, how long to wait for a busy run. */
export interface LeaseTerms {
  owner: string;
  leaseMs: number;
  /** Wait this long for another owner's lease to end when claiming; 0: fail at once. */
  waitMs: number;
}

/** `'full'`: every save is durable before the run goes on; `'points'`: only the saves that guard an effect. */
export type Durability = 'full' | 'points';

/** How many concurrent calls of a step run at once, by default. */
export const DEFAULT_CONCURRENCY = 4;

/** The default lease length: long enough to ride out a slow save, short enough to take over a dead worker's run soon. */
export const DEFAULT_LEASE_MS = 30_000;

/** The host's name, asked once (a system call each time otherwise). */
let host: string | undefined;

/** An owner id unique to this holder: the host, the process and a random part. */
export function ownerId(): string {
  host ??= hostname();
  return `${host}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** The runtime pieces of the options, checked and with defaults. */
export interface Runtime {
  policy: Policy;
  tools: ReadonlyMap<string, Tool>;
  clock: Clock;
  policyRetries: number;
  retryDelayMs: number;
  policyTimeoutMs: number | null;
  /** How the run holds its lease on a store. */
  lease: LeaseTerms;
  /** Which saves are made durable before the store answers (see `RuntimeOptions.durability`). */
  durability: Durability;
  /** How many concurrent calls of a step run at once (see `RuntimeOptions.concurrency`). */
  concurrency: number;
  /** XState's inspector for the run's actor, when given. */
  inspect: InspectOption | undefined;
  /** The OpenTelemetry tracer the run's spans go to, when given. */
  tracer: TracerLike | undefined;
  /** The agent definition's name, saved with the run for workers; null: none given. */
  agent: string | null;
  /** What a policy call costs (runtime/cost.ts); null: no price given. */
  price: Pricing | null;
  /** When and how the run summarises older turns (compaction.ts); null: it never does. */
  compaction: Compaction | null;
}

/**
 * A price table's entries, each checked, the bad one named: `price["gpt-4.1"].inputUsdPerMTok`.
 * Every own key, one by one: zod's `z.record` passes over a `__proto__` key (as JSON.parse makes
 * one) without checking its value, and a model may well be called that.
 */
function checkPrice(call: string, value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  for (const [model, entry] of Object.entries(value)) {
    const result = modelPrice.safeParse(entry);
    if (result.success) continue;
    const issue = result.error.issues[0] as z.core.$ZodIssue;
    const where = `price[${JSON.stringify(model)}]${issue.path.length > 0 ? `.${pathText(issue.path)}` : ''}`;
    throw new OptionsError(`${call}: ${where} must be ${issue.message}, got ${showValue(valueAt(entry, issue.path))}`);
  }
}

function runtimeOf(call: string, options: RuntimeOptions<any>): Runtime {
  checkPrice(call, options.price);
  const tools = new Map<string, Tool>();
  for (const [i, t] of options.tools.entries()) {
    // A tool literal is strict (a typo such as `sideEfect` must not drop the approval gate); a
    // class-based tool keeps state in fields of its own, so only its known keys are checked.
    if (isPlainObject(t)) checkKeys(`${call}: tools[${i}] (${JSON.stringify(t.name)})`, t, TOOL_KEYS, 'tool option');
    const schema = checkToolSchema(t);
    if (schema) throw new OptionsError(`${call}: tools[${i}] (${JSON.stringify(t.name)}): ${schema}`);
    if (tools.has(t.name)) throw new OptionsError(`${call}: tools: two tools are named ${JSON.stringify(t.name)}`);
    tools.set(t.name, t);
  }
  return {
    policy: options.policy,
    tools,
    clock: options.clock ?? systemClock,
    policyRetries: options.policyRetries ?? 2,
    retryDelayMs: options.retryDelayMs ?? 250,
    policyTimeoutMs: options.policyTimeoutMs ?? null,
    inspect: options.inspect,
    tracer: options.tracer,
    agent: options.agent ?? null,
    price: pricingOf(options.price),
    compaction: compactionOf(call, options.compaction),
    durability: options.durability ?? 'full',
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    lease: {
      owner: options.owner ?? ownerId(),
      leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
      waitMs: options.leaseWaitMs ?? 0,
    },
  };
}

/** Only the limits the caller named, for overriding a checkpoint's. */
function limitsGiven(options: Partial<Limits>, call: string): Partial<Limits> {
  const out: Partial<Limits> = {};
  if (options.maxSteps !== undefined) out.maxSteps = options.maxSteps;
  if (options.maxTokens !== undefined) out.maxTokens = options.maxTokens;
  if (options.maxActiveMs !== undefined) out.maxActiveMs = options.maxActiveMs;
  if (options.maxCostUsd !== undefined) out.maxCostUsd = options.maxCostUsd;
  if (options.perTurn !== undefined) out.perTurn = turnLimitsOf(options.perTurn, call);
  return out;
}

/** A new run's limits: the defaults, then those given (no `perTurn` field unless a turn is limited). */
function newLimits(given: Partial<Limits>): Limits {
  const { perTurn, ...rest } = given;
  return {
    maxSteps: 8,
    maxTokens: null,
    maxActiveMs: null,
    maxCostUsd: null,
    ...rest,
    ...(perTurn ? { perTurn } : {}),
  };
}

/** `perTurn` checked and copied (its fields only); null: no limits on a turn. */
function turnLimitsOf(given: unknown, call: string): TurnLimits | null {
  if (given === null) return null;
  if (!isPlainObject(given)) {
    throw new OptionsError(
      `${call}: perTurn must be an object ({ maxSteps?, maxTokens?, maxCostUsd? }) or null, got ${showValue(given)}`,
    );
  }
  const checked = checkOptions(call, given as TurnLimits, turnShape, {}, 'perTurn');
  const out: TurnLimits = {};
  if (checked.maxSteps !== undefined) out.maxSteps = checked.maxSteps;
  if (checked.maxTokens !== undefined) out.maxTokens = checked.maxTokens;
  if (checked.maxCostUsd !== undefined) out.maxCostUsd = checked.maxCostUsd;
  return Object.keys(out).length > 0 ? out : null;
}

export function parseAgentOptions(options: AgentOptions<any>, call = 'new Agent') {
  const o = checkOptions(call, options, agentShape);
  // Group budgets exist only in a store, where every process sees the same spending.
  if (o.budgetGroup !== undefined && !(o.store && groupBudgetsOf(o.store))) {
    throw new OptionsError(
      `${call}: budgetGroup needs a store with group budgets (MemoryStore, SqliteStore, PostgresStore), ${o.store ? 'and this store has none' : 'and no store was given'}`,
    );
  }
  return {
    runtime: runtimeOf(call, o),
    runId: o.runId,
    budgetGroup: o.budgetGroup ?? null,
    limits: newLimits(limitsGiven(o, call)),
    approvalTtlMs: o.approvalTtlMs ?? null,
  };
}

export function parseResumeOptions(options: ResumeOptions<any>, call: string) {
  if (options !== null && typeof options === 'object' && 'store' in options) {
    throw new OptionsError(
      `${call}: store is not an option here: Agent.load(store, runId, options) continues a stored run and saves it back (with conflict protection)`,
    );
  }
  const o = checkOptions(call, options, resumeShape);
  return { runtime: runtimeOf(call, o), limits: limitsGiven(o, call) };
}

export function parseLimits(limits: unknown, call = 'extendBudget'): Partial<Limits> {
  return limitsGiven(checkOptions(call, limits as Partial<Limits>, limitShape), call);
}

/** Checks a string argument of a call: `start: goal must be a string (…), got 42`. */
export function checkText(call: string, name: string, value: unknown): asserts value is string {
  const result = text('a string').safeParse(value);
  if (!result.success) {
    throw new OptionsError(`${call}: ${name} must be ${result.error.issues[0]?.message}, got ${showValue(value)}`);
  }
}
