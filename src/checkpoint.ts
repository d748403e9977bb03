/**
 * The checkpoint codec: the actor's persisted snapshot in a named, versioned envelope,
 * serialised as canonical JSON (RFC 8785) so that `resume(blob).checkpoint() === blob`.
 *
 * Decoding validates everything before XState sees it: restoring a snapshot whose state does
 * not exist does not throw but kills the process later, and a missing or renamed invoke hangs
 * the run (ARCHITECTURE.md, "XState pitfalls"). A blob that passes `decodeCheckpoint` restores
 * to a run that can only do what its state allows.
 */
import { randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import { z } from 'zod';
import { callIdOf, deepFreeze, exhaustedBudget } from '../machines/agent.js';
import type { AgentContext, HistoryEntry, Limits, Status } from '../machines/types.js';
import { CheckpointError } from './errors.js';
import { MAX_JSON_DEPTH } from './json.js';

export const CHECKPOINT_FORMAT = 'tollgate.checkpoint';
export const CHECKPOINT_VERSION = 1;
/** Versions this build can read. A migration step goes in its own module when version 2 comes. */
export const READABLE_VERSIONS: readonly number[] = [1];

/** The persisted snapshot as XState writes it for the agent machine. */
export interface PersistedRun {
  status: 'active' | 'done';
  value: string | { running: 'deciding' | 'executing' };
  historyValue: Record<string, never>;
  context: AgentContext;
  children: Record<string, { snapshot: { status: 'active'; input: unknown }; src: string; syncSnapshot: false }>;
}

const count = z.number().int().nonnegative();
const iso = z.iso.datetime();
const json = z.json();
const jsonObject = z.record(z.string(), json);
const approval = z.strictObject({
  approved: z.boolean(),
  by: z.string(),
  note: z.string(),
  at: iso,
  callId: z.string(),
});
/** A history entry's schema (exported for the tests of the quick check). */
export const entrySchema = z.union([
  z.looseObject({ role: z.literal('user'), content: z.string() }),
  z.looseObject({ role: z.literal('assistant'), tool: z.string(), args: jsonObject }),
  z.looseObject({ role: z.literal('assistant'), final: json }),
  z.looseObject({ role: z.literal('tool'), tool: z.string(), result: json, approval: approval.optional() }),
  z.looseObject({
    role: z.literal('tool'),
    tool: z.string(),
    error: z.string(),
    approval: approval.optional(),
    outcome: z.literal('unknown').optional(),
  }),
]);
const call = {
  id: z.string().min(1),
  key: z.string().min(1),
  step: z.number().int().positive(),
  tool: z.string().min(1),
  args: jsonObject,
  attempt: z.number().int().positive(),
};
const pending = z.strictObject({
  ...call,
  requestedAt: iso,
  expiresAt: iso.nullable(),
  outcome: z.literal('unknown').optional(),
});
const inflight = z.strictObject({ ...call, approval: approval.nullable() });
const limitOrNull = z.number().nonnegative().nullable();

const context = z.strictObject({
  runId: z.string().min(1),
  history: z.array(entrySchema),
  steps: count,
  usage: z.strictObject({ inputTokens: count, outputTokens: count }),
  activeMs: z.number().nonnegative(),
  limits: z.strictObject({ maxSteps: count, maxTokens: limitOrNull, maxActiveMs: limitOrNull }),
  approvalTtlMs: z.number().positive().nullable(),
  pending: pending.nullable(),
  inflight: inflight.nullable(),
  answer: json,
  stoppedBy: z.enum(['steps', 'tokens', 'time']).nullable(),
  error: z.string().nullable(),
  cancelReason: z.string().nullable(),
});

const value = z.union([
  z.enum(['idle', 'awaiting_approval', 'budget_exhausted', 'failed', 'done', 'cancelled']),
  z.strictObject({ running: z.enum(['deciding', 'executing']) }),
]);

const snapshot = z.strictObject({
  status: z.enum(['active', 'done']),
  value,
  historyValue: z.strictObject({}),
  context,
  children: z.record(z.string(), z.unknown()),
});

const envelope = z.looseObject({ format: z.unknown(), version: z.unknown(), snapshot: z.unknown() });

/** The status a persisted value stands for. */
export function statusOfValue(v: PersistedRun['value']): Status {
  return typeof v === 'string' ? (v as Status) : 'running';
}

/** The children XState must find to resume the state: the invoke of that state, nothing else. */
export function expectedChildren(run: Pick<PersistedRun, 'value' | 'context'>): PersistedRun['children'] {
  const v = run.value;
  if (typeof v === 'string') return {};
  const c = run.context;
  return v.running === 'deciding'
    ? {
        policy: {
          snapshot: { status: 'active', input: { runId: c.runId, step: c.steps + 1 } },
          src: 'policy',
          syncSnapshot: false,
        },
      }
    : { tool: { snapshot: { status: 'active', input: c.inflight }, src: 'tool', syncSnapshot: false } };
}

/** Rules that tie the context to the state: what zod's shapes cannot say. */
function consistencyProblem(run: PersistedRun): [string, string] | null {
  const status = statusOfValue(run.value);
  const c = run.context;
  const executing = typeof run.value === 'object' && run.value.running === 'executing';
  if ((run.status === 'done') !== (status === 'done' || status === 'cancelled')) {
    return ['snapshot.status', `status ${run.status} does not fit state ${status}`];
  }
  if ((c.pending !== null) !== (status === 'awaiting_approval')) {
    return ['snapshot.context.pending', `pending must be set exactly when awaiting_approval (state ${status})`];
  }
  if ((c.inflight !== null) !== executing) {
    return ['snapshot.context.inflight', 'inflight must be set exactly while executing a tool'];
  }
  const call = c.pending ?? c.inflight;
  if (call && (call.key !== `${c.runId}:${call.step}` || call.step > c.steps)) {
    return ['snapshot.context', `call key ${call.key} does not belong to run ${c.runId} at step ${c.steps}`];
  }
  // The id names the exact call (its digest of tool and arguments); version 1 wrote `key#attempt`.
  if (
    call &&
    call.id !== `${call.key}#${call.attempt}` &&
    call.id !== callIdOf(call.key, call.attempt, call.tool, call.args)
  ) {
    const where = c.pending ? 'pending' : 'inflight';
    return [`snapshot.context.${where}.id`, `call id ${call.id} does not name this call (tool, arguments, attempt)`];
  }
  if ((c.stoppedBy !== null) !== (status === 'budget_exhausted')) {
    return ['snapshot.context.stoppedBy', 'stoppedBy must be set exactly when budget_exhausted'];
  }
  // Only a run that never started has no history (one cancelled before starting included).
  if (status !== 'idle' && status !== 'cancelled' && c.history.length === 0) {
    return ['snapshot.context.history', `a ${status} run must have a history`];
  }
  if (canonicalize(run.children) !== canonicalize(expectedChildren(run))) {
    return ['snapshot.children', `the invoked actors do not match state ${JSON.stringify(run.value)}`];
  }
  return null;
}

function fail(message: string, path?: string): never {
  throw new CheckpointError(`invalid checkpoint: ${message}`, path);
}

function pathOf(issue: z.core.$ZodIssue, prefix: string): string {
  return [prefix, ...issue.path.map(String)].join('.');
}

/** Canonical JSON of each frozen history entry, made once: a frozen entry never changes. */
const entryTexts = new WeakMap<object, string>();

/** An entry as canonical JSON; cached for frozen entries (every entry of a live run). */
export function canonicalEntry(entry: HistoryEntry): string {
  const cached = entryTexts.get(entry);
  if (cached !== undefined) return cached;
  const text = canonicalize(entry);
  if (text === undefined) throw new TypeError('history entry is not serialisable');
  if (Object.isFrozen(entry)) entryTexts.set(entry, text);
  return text;
}

/** Stands in for the history while the rest is canonicalised; never a value of a real run. */
const HISTORY_MARK = `\u0000tollgate-history-${randomUUID()}`;

/**
 * `envelope` as canonical JSON with `history` (an array of canonical JSON texts) spliced in at
 * the context's `history` key: the entries are not walked again.
 */
function spliceHistory(envelope: { snapshot: { context: object } }, history: readonly string[]): string {
  const { snapshot } = envelope;
  const text = canonicalize({
    ...envelope,
    snapshot: { ...snapshot, context: { ...snapshot.context, history: HISTORY_MARK } },
  });
  if (text === undefined) throw new TypeError('snapshot is not serialisable');
  const mark = JSON.stringify(HISTORY_MARK);
  const at = text.indexOf(mark);
  return `${text.slice(0, at)}[${history.join(',')}]${text.slice(at + mark.length)}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Serialises a persisted snapshot as a checkpoint blob. O(new entries): entries are cached. */
export function encodeCheckpoint(run: unknown): string {
  const envelope = { format: CHECKPOINT_FORMAT, version: CHECKPOINT_VERSION, snapshot: run };
  const history = isObject(run) && isObject(run.context) ? run.context.history : undefined;
  if (Array.isArray(history) && history.length > 0 && history.every(isObject)) {
    return spliceHistory(
      envelope as { snapshot: { context: object } },
      history.map((e) => canonicalEntry(e as HistoryEntry)),
    );
  }
  const text = canonicalize(envelope);
  if (text === undefined) throw new TypeError('snapshot is not serialisable');
  return text;
}

/**
 * The checkpoint blob of a stored run: its head (a checkpoint with an empty history) and its
 * entries (each canonical JSON). Each entry must be one JSON object; validate the result with
 * `decodeCheckpoint`.
 */
export function joinCheckpoint(head: string, entries: readonly string[]): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(head);
  } catch (error) {
    fail(`the stored head is not JSON (${(error as Error).message})`, 'head');
  }
  if (!isObject(parsed) || !isObject(parsed.snapshot) || !isObject(parsed.snapshot.context)) {
    fail('the stored head is not a checkpoint', 'head');
  }
  for (const [i, text] of entries.entries()) {
    // One complete JSON object each: a damaged entry cannot change the structure around it.
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!isObject(value)) fail(`stored entry ${i} is not a JSON object`, `snapshot.context.history.${i}`);
  }
  return spliceHistory(parsed as { snapshot: { context: object } }, entries);
}

/**
 * The history entries that the quick check accepts are accepted by the `entry` schema too; any
 * other entry is left to the schema, which decides and words the error. (Values came from
 * JSON.parse, so they are JSON.)
 */
export function plainEntry(e: unknown): boolean {
  if (!isObject(e)) return false;
  switch (e.role) {
    case 'user':
      return typeof e.content === 'string';
    case 'assistant':
      return typeof e.tool === 'string' ? isObject(e.args) : e.tool === undefined && 'final' in e;
    case 'tool':
      return (
        typeof e.tool === 'string' &&
        e.approval === undefined &&
        ('result' in e || (typeof e.error === 'string' && (e.outcome === undefined || e.outcome === 'unknown')))
      );
    default:
      return false;
  }
}

function checkHistory(history: unknown): void {
  if (!Array.isArray(history)) return; // the schema reports it
  for (const [i, e] of history.entries()) {
    if (plainEntry(e)) continue;
    const result = entrySchema.safeParse(e);
    if (!result.success) {
      const path = pathOf(result.error.issues[0] as z.core.$ZodIssue, `snapshot.context.history.${i}`);
      fail(`${path}: ${(result.error.issues[0] as z.core.$ZodIssue).message}`, path);
    }
  }
}

/**
 * The deepest a checkpoint may nest: a run's values (`MAX_JSON_DEPTH`) under the envelope's own
 * levels (`snapshot.context.history[i].result`). Checked on the text, before `JSON.parse` and zod,
 * which recurse and would overflow the stack on a blob nested a few thousand levels deep.
 */
const MAX_CHECKPOINT_DEPTH = MAX_JSON_DEPTH + 8;

/** The deepest nesting of `[` and `{` in a JSON text, outside strings. O(length), no recursion. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: to the next quote that is not escaped.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/** Lone surrogates (raw, or as \u escapes) can be parsed but never written back canonically. */
const SURROGATE = /\\u[dD][89a-fA-F]|[\uD800-\uDFFF]/;

/**
 * Parses and validates a checkpoint blob. Throws `CheckpointError` (with `path`) for anything
 * that is not a checkpoint this version can resume; never returns a partly valid snapshot.
 */
export function decodeCheckpoint(blob: unknown): PersistedRun {
  if (typeof blob !== 'string') fail(`expected a string, got ${blob === null ? 'null' : typeof blob}`);
  const depth = nestingDepth(blob);
  if (depth > MAX_CHECKPOINT_DEPTH) {
    fail(
      `nests ${depth} levels deep; a run's values nest at most ${MAX_JSON_DEPTH} (the checkpoint ${MAX_CHECKPOINT_DEPTH})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(blob);
  } catch (error) {
    fail(`not JSON (${(error as Error).message})`);
  }
  const outer = envelope.safeParse(parsed);
  if (!outer.success) fail('expected an object with format, version and snapshot');
  const { format, version } = outer.data;
  if (format !== CHECKPOINT_FORMAT)
    fail(`format is ${JSON.stringify(format)}, expected "${CHECKPOINT_FORMAT}"`, 'format');
  if (typeof version !== 'number' || !READABLE_VERSIONS.includes(version)) {
    fail(`unsupported version ${JSON.stringify(version)}; this build reads ${READABLE_VERSIONS.join(', ')}`, 'version');
  }
  // The history is checked apart, entry by entry, with a quick check before the schema: the
  // schema alone takes ~5 µs an entry, and a long run has many.
  const given = outer.data.snapshot;
  const context = isObject(given) && isObject(given.context) ? given.context : null;
  const history = context?.history;
  const shallow =
    context && Array.isArray(history) ? { ...(given as object), context: { ...context, history: [] } } : given;
  const inner = snapshot.safeParse(shallow);
  if (!inner.success) {
    const issue = inner.error.issues[0] as z.core.$ZodIssue;
    const path = pathOf(issue, 'snapshot');
    fail(`${path}: ${issue.message}`, path);
  }
  checkHistory(history);
  // The parsed value itself, not zod's copy: zod drops `__proto__` keys from records, and the
  // run must keep exactly the arguments it recorded (a strict schema passed: nothing extra is in it).
  const run = shallow as PersistedRun;
  if (shallow !== given) run.context.history = history as HistoryEntry[];
  const problem = consistencyProblem(run);
  if (problem) fail(`${problem[0]}: ${problem[1]}`, problem[0]);
  if (SURROGATE.test(blob)) {
    try {
      encodeCheckpoint(run); // e.g. a lone surrogate: parses, but can never be written back
    } catch (error) {
      fail(`cannot be written back as canonical JSON (${(error as Error).message})`);
    }
  }
  // History entries are frozen while a run is live (see machines/agent.ts); restore that.
  deepFreeze(run.context.history);
  return run;
}

/**
 * The run with some limits replaced, as `Agent.resume(blob, { maxSteps })` and `extendBudget`
 * on a not-started agent apply them. A run resting in a policy call that the new limits no
 * longer allow stops the way the machine would have stopped before making that call:
 * `budget_exhausted`, the call abandoned (a restored invoke would otherwise call the policy
 * past its budget: invariant 3).
 */
export function withLimits(run: PersistedRun, limits: Partial<Limits>): PersistedRun {
  const context = { ...run.context, limits: { ...run.context.limits, ...limits } };
  // A run stopped by a budget is stopped by whatever budget stops it under the new limits.
  if (run.value === 'budget_exhausted') context.stoppedBy = exhaustedBudget(context) ?? context.stoppedBy;
  const deciding = typeof run.value === 'object' && run.value.running === 'deciding';
  const stoppedBy = deciding ? exhaustedBudget(context) : null;
  if (stoppedBy === null) return { ...run, context };
  return { ...run, value: 'budget_exhausted', context: { ...context, stoppedBy }, children: {} };
}
