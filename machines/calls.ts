/**
 * The calls of a step: each is its own unit of the invariants — its own id, idempotency key,
 * write-ahead record, approval, expiry and crash rule (docs/architecture.md, "Several calls in a
 * step"). Pure functions over plain JSON: the machine's actions are built from them.
 */
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { canonicalJson } from './canonical.js';
import type {
  AgentContext,
  ApprovalRecord,
  CallDecision,
  ClassifiedCall,
  JsonObject,
  PendingCall,
  StepCall,
} from './types.js';

/**
 * The id of one approval request: it names the run and step (the key), the attempt, and — by a
 * digest of the canonical `[tool, args]` — the exact call. Two requests that differ in anything
 * (say, two resumes of one checkpoint whose policy answered differently) never share an id, so an
 * approval given for one can never run the other (invariant 1). 128 bits of SHA-256: a collision
 * cannot be precomputed by whoever writes the arguments.
 */
export function callIdOf(key: string, attempt: number, tool: string, args: JsonObject): string {
  return `${key}#${attempt}@${digestOf(canonicalJson([tool, args]) as string)}`;
}

type HashText = (algorithm: string, data: string, encoding: 'hex') => string;

/**
 * Node's one-shot `crypto.hash`, reached without importing `node:crypto` (this module must load
 * in a browser too, for Stately's tools): several times faster than @noble/hashes, which is
 * what runs where Node's is missing (a browser, Node before 20.16). The same digest.
 */
const nodeHash: HashText | null = (() => {
  const host = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } };
  const crypto = host.process?.getBuiltinModule?.('node:crypto') as { hash?: unknown } | undefined;
  return typeof crypto?.hash === 'function' ? (crypto.hash as HashText) : null;
})();

/** The first 128 bits of the SHA-256 of `text` (UTF-8), as hex. */
export function digestOf(text: string): string {
  return nodeHash
    ? nodeHash('sha256', text, 'hex').slice(0, 32)
    : bytesToHex(sha256(utf8ToBytes(text)).subarray(0, 16));
}

/** The idempotency key of the `index`-th (1-based) of `count` calls of a step. */
export function keyOf(runId: string, step: number, index: number, count: number): string {
  return count === 1 ? `${runId}:${step}` : `${runId}:${step}.${index}`;
}

function expiresAt(ttlMs: number | null, at: string): string | null {
  return ttlMs === null ? null : new Date(Date.parse(at) + ttlMs).toISOString();
}

/** True when the call is pending and its approval has expired by `at`. */
export function isExpiredAt(call: StepCall, at: string): boolean {
  return call.state === 'pending' && call.expiresAt !== null && Date.parse(at) >= Date.parse(call.expiresAt);
}

/** A pending call as the human (and the stores) see it. */
export function pendingOf(call: StepCall): PendingCall {
  const { id, key, step, tool, args, attempt } = call;
  return {
    id,
    key,
    step,
    tool,
    args,
    attempt,
    requestedAt: call.requestedAt as string,
    expiresAt: call.expiresAt,
    ...(call.outcome === 'unknown' ? { outcome: 'unknown' as const } : {}),
  };
}

/** Every undecided call, in call order. */
export function pendingCalls(calls: readonly StepCall[]): PendingCall[] {
  return calls.filter((c) => c.state === 'pending').map(pendingOf);
}

/** A call asked about (again): pending from `at`, with its expiry. */
function asked(call: StepCall, ttlMs: number | null, at: string): StepCall {
  return { ...call, state: 'pending', requestedAt: at, expiresAt: expiresAt(ttlMs, at), approval: null };
}

/**
 * The standing approval of `tool`, if the run has one. Own keys only: a tool named `constructor`
 * or `__proto__` has no standing approval from Object.prototype.
 */
function standingFor(standing: AgentContext['standing'], tool: string): ApprovalRecord | undefined {
  return Object.hasOwn(standing, tool) ? standing[tool] : undefined;
}

/**
 * The step's calls from the policy's classified calls: refused ones are done at once, calls that
 * need no approval (or that a standing approval covers) are queued, the others pending.
 */
export function stepCalls(context: AgentContext, classified: readonly ClassifiedCall[], at: string): StepCall[] {
  const step = context.steps;
  return classified.map((c, i) => {
    const key = keyOf(context.runId, step, i + 1, classified.length);
    const id = callIdOf(key, 1, c.tool, c.args);
    const call: StepCall = {
      id,
      key,
      step,
      index: i + 1,
      toolCallId: c.toolCallId ?? key,
      modelId: c.toolCallId !== null,
      tool: c.tool,
      args: c.args,
      attempt: 1,
      state: 'queued',
      requestedAt: null,
      expiresAt: null,
      outcome: null,
      approval: null,
      done: null,
    };
    if (c.verdict.kind === 'refuse') return { ...call, state: 'done', done: { error: c.verdict.error } };
    if (c.verdict.kind === 'run') return c.verdict.concurrent ? { ...call, concurrent: true } : call;
    const grant = standingFor(context.standing, c.tool);
    if (grant) {
      // A standing approval given earlier in the run covers this call: recorded as the grant's.
      const { always: _a, args: _e, ...given } = grant;
      return { ...call, approval: { ...given, callId: id, standing: grant.callId } };
    }
    return asked(call, context.approvalTtlMs, at);
  });
}

/** Whether a classified call is queued at once: it needs no human, or a standing approval covers it. */
function queuedAtOnce(standing: AgentContext['standing'], c: ClassifiedCall): boolean {
  return c.verdict.kind === 'run' || (c.verdict.kind === 'ask' && standingFor(standing, c.tool) !== undefined);
}

/** Whether the step's calls (as `stepCalls` will make them) put one in flight at once: the first not refused is queued. */
export function startsACall(context: AgentContext, classified: readonly ClassifiedCall[]): boolean {
  const first = classified.find((c) => c.verdict.kind !== 'refuse');
  return first !== undefined && queuedAtOnce(context.standing, first);
}

/** Whether the step's calls (as `stepCalls` will make them) start with a batch: `nextBatch` of them holds two or more. */
export function startsABatch(classified: readonly ClassifiedCall[]): boolean {
  const [first, second] = classified.filter((c) => c.verdict.kind !== 'refuse');
  const together = (c: ClassifiedCall | undefined) => c?.verdict.kind === 'run' && c.verdict.concurrent === true;
  return together(first) && together(second);
}

/** Whether a call may join a batch: queued, concurrent, and needing no approval. */
const joins = (call: StepCall) => call.state === 'queued' && call.concurrent === true && call.approval === null;

/**
 * The calls that run together next: from the step's first call without an outcome, each queued
 * concurrent call up to the first call without an outcome that is not one (calls done already
 * are passed over). A side effect, or any call that waits for a human, ends the batch: calls
 * after it start only once it has its outcome, as they would one at a time.
 */
export function nextBatch(calls: readonly StepCall[]): StepCall[] {
  const batch: StepCall[] = [];
  for (const call of calls) {
    if (call.state === 'done') continue;
    if (!joins(call)) break;
    batch.push(call);
  }
  return batch;
}

/**
 * The next call to run: the step's first call without an outcome, when it is queued. Calls take
 * effect in their order: none starts while an earlier call of its step waits for a human (asked
 * for its approval, or asked again after a crash left its outcome unknown).
 */
export function nextQueued(calls: readonly StepCall[]): StepCall | undefined {
  const next = calls.find((c) => c.state !== 'done');
  return next?.state === 'queued' ? next : undefined;
}

/** The call the tool actor is running. */
export function runningCall(calls: readonly StepCall[]): StepCall | undefined {
  return calls.find((c) => c.state === 'running');
}

/** The calls in flight, in call order: the tool actor's one, or a batch's. */
export function runningCalls(calls: readonly StepCall[]): StepCall[] {
  return calls.filter((c) => c.state === 'running');
}

/** `calls` with the one whose key is `key` replaced by `change(call)`. */
export function updateCall(calls: readonly StepCall[], key: string, change: (call: StepCall) => StepCall): StepCall[] {
  return calls.map((c) => (c.key === key ? change(c) : c));
}

/**
 * Resumed with a non-idempotent side effect in flight: a human is asked again, as a new request
 * (a new attempt, a new id), marked outcome unknown — or not, when the tool's `verify` said the
 * effect did not happen (`unknown` false: only its approval was too old to run it again under).
 */
export function askAgain(call: StepCall, ttlMs: number | null, at: string, unknown = true): StepCall {
  const attempt = call.attempt + 1;
  // Asked about, it is no longer a call that runs without a human: it runs alone, if at all.
  const { concurrent: _c, ...alone } = call;
  const again = asked({ ...alone, attempt, id: callIdOf(call.key, attempt, call.tool, call.args) }, ttlMs, at);
  return { ...again, outcome: unknown ? 'unknown' : null };
}

/** The approval record of one decision. */
export function approvalOf(d: CallDecision, by: string, at: string): ApprovalRecord {
  return {
    approved: d.approve,
    by,
    note: d.note,
    at,
    callId: d.callId,
    ...(d.approve && d.args !== undefined ? { args: d.args } : {}),
    ...(d.approve && d.always === true ? { always: true } : {}),
  };
}

/** A call no longer waiting for a human: its request times belong to the pending state only. */
const decided = (call: StepCall): StepCall => ({ ...call, requestedAt: null, expiresAt: null });

/** The outcome of a call that ends without running, keeping its approval and unknown outcome. */
function ended(call: StepCall, error: string, approval: ApprovalRecord | null): StepCall {
  return {
    ...decided(call),
    state: 'done',
    done: {
      error,
      ...(approval ? { approval } : {}),
      ...(call.outcome === 'unknown' ? { outcome: 'unknown' as const } : {}),
    },
  };
}

/** An expired approval: nothing runs; the model is told, with the decision if one came late. */
export function expired(call: StepCall, approval: ApprovalRecord | null): StepCall {
  return ended(call, 'approval expired', approval);
}

/**
 * Applies decisions to the pending calls they name (the caller checked that each names one):
 * an approval queues the call, a denial ends it, and a decision at or after the call's expiry
 * ends it as expired, runs nothing. Returns the calls and the standing approvals granted.
 */
export function decide(
  calls: readonly StepCall[],
  decisions: readonly CallDecision[],
  by: string,
  at: string,
): { calls: StepCall[]; granted: Record<string, ApprovalRecord> } {
  const granted = new Map<string, ApprovalRecord>();
  const byId = new Map(decisions.map((d) => [d.callId, d]));
  const next = calls.map((call) => {
    const d = call.state === 'pending' ? byId.get(call.id) : undefined;
    if (!d) return call;
    const approval = approvalOf(d, by, at);
    if (isExpiredAt(call, at)) return expired(call, approval);
    if (!d.approve) return ended(call, `denied by human: ${d.note}`, approval);
    if (approval.always) granted.set(call.tool, approval);
    return { ...decided(call), state: 'queued' as const, approval };
  });
  // Own data properties, whatever the tool is called (`granted.__proto__ = …` would set the prototype).
  return { calls: next, granted: Object.fromEntries(granted) };
}

/** True when the decisions name distinct pending calls, and only pending calls. */
export function decisionsMatch(calls: readonly StepCall[], decisions: readonly CallDecision[]): boolean {
  if (decisions.length === 0) return false;
  const ids = new Set(decisions.map((d) => d.callId));
  if (ids.size !== decisions.length) return false;
  return decisions.every((d) => calls.some((c) => c.state === 'pending' && c.id === d.callId));
}
