/**
 * The real policy and tool actors, given to the pure machine with `machine.provide`. They do
 * the I/O: calling the policy (with bounded retries), calling tools (with timeouts, abort and
 * JSON checks), and measuring the active time the budgets count.
 */
import { fromPromise } from 'xstate';
import type { PolicyInput } from '../machines/agent.js';
import { describeError } from '../machines/agent.js';
import type { Decision, HistoryEntry, InflightCall, ToolOutcome } from '../machines/types.js';
import { classify, needsApproval, usageOf } from './action.js';
import { type Clock, isoTime } from './clock.js';
import { toJson } from './json.js';
import type { Policy, Tool } from './types.js';

/** What the actors need from the Agent that provides them. */
export interface ActorHost {
  runId: string;
  policy: Policy;
  tools: ReadonlyMap<string, Tool>;
  clock: Clock;
  policyRetries: number;
  retryDelayMs: number;
  /** The live history (entries are frozen; the array is copied for the policy). */
  history(): readonly HistoryEntry[];
  /**
   * Keys that were in flight in the checkpoint this agent was resumed from. A non-idempotent
   * side effect among them is not called again: its outcome is unknown.
   */
  recovering: Set<string>;
  /**
   * Awaited before every policy and tool call: with a store, the run as it is now (the call in
   * flight included) is saved first. The write-ahead point; and a writer that lost its place
   * (ConflictError) stops here, before calling anything.
   */
  durable(): Promise<void>;
}

/**
 * Finds the Agent an actor works for, by its actor system (one per Agent): the actors are
 * provided to the machine once, not once per Agent.
 */
export type HostOf = (system: object) => ActorHost;

const MAX_RETRY_DELAY_MS = 30_000;

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** An error that carries the active time spent before it, so the budget still counts it. */
function withElapsed(error: unknown, elapsedMs: number): unknown {
  if (error !== null && typeof error === 'object') {
    if (Object.isExtensible(error)) {
      try {
        Object.assign(error, { elapsedMs });
        return error;
      } catch {
        /* a read-only elapsedMs: fall through */
      }
    }
    // Frozen: a stand-in with the same name and message (the run records '<name>: <message>').
    if ('message' in error) {
      const { name, message } = error as { name?: unknown; message?: unknown };
      const standIn = Object.assign(new Error(String(message), { cause: error }), { elapsedMs });
      if (typeof name === 'string') standIn.name = name;
      return standIn;
    }
  }
  // A thrown primitive: the machine's describeError adds the 'Error: ' prefix once.
  return Object.assign(new Error(String(error)), { elapsedMs });
}

export function policyActor(hostOf: HostOf) {
  return fromPromise<Decision, PolicyInput>(async ({ input, signal, system }) => {
    const host = hostOf(system);
    await host.durable();
    if (signal.aborted) throw signal.reason;
    const started = host.clock.now();
    for (let attempt = 0; ; attempt++) {
      let raw: unknown;
      try {
        raw = await host.policy(host.history().slice(), { runId: input.runId, step: input.step, attempt, signal });
      } catch (error) {
        if (signal.aborted || attempt >= host.policyRetries) {
          throw withElapsed(error, host.clock.now() - started);
        }
        const delay = Math.min(host.retryDelayMs * 2 ** attempt, MAX_RETRY_DELAY_MS);
        await host.clock.sleep(delay, signal);
        continue;
      }
      const decision = await classify(raw, host.tools);
      const now = host.clock.now();
      return { ...decision, usage: usageOf(raw), elapsedMs: Math.max(0, now - started), at: isoTime(now) };
    }
  });
}

/** Calls `fn`, racing it against the tool's timeout; aborts the tool's signal on timeout. */
async function callWithTimeout(tool: Tool, call: InflightCall, host: ActorHost, signal: AbortSignal) {
  const ms = tool.timeoutMs;
  // Without a timeout the actor's own signal (aborted on cancel) is the tool's: no extra
  // controllers on the hot path.
  const controller = ms === undefined ? null : new AbortController();
  const forward = () => controller?.abort(signal.reason);
  const ctx = {
    signal: controller?.signal ?? signal,
    runId: host.runId,
    step: call.step,
    key: call.key,
    approvedCallId: call.approval?.callId ?? null,
  };
  // The tool gets its own copy: the call's args are also the (frozen) history entry's.
  const work = Promise.resolve().then(() => tool.fn(structuredClone(call.args), call.key, ctx));
  if (controller === null || ms === undefined) return await work;
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  const timer = new AbortController();
  try {
    const timeout = host.clock.sleep(ms, timer.signal).then(() => {
      const error = new TimeoutError(`tool ${tool.name} timed out after ${ms} ms`);
      controller.abort(error);
      throw error;
    });
    return await Promise.race([work, timeout]);
  } finally {
    timer.abort();
    signal.removeEventListener('abort', forward);
  }
}

export function toolActor(hostOf: HostOf) {
  return fromPromise<ToolOutcome, InflightCall>(async ({ input: call, signal, system }) => {
    const host = hostOf(system);
    const tool = host.tools.get(call.tool);
    if (host.recovering.delete(call.key) && tool?.sideEffect && !tool.idempotent) {
      return { type: 'outcome_unknown', at: isoTime(host.clock.now()) };
    }
    await host.durable();
    // Cancelled while the write-ahead record was being made: the call never starts.
    if (signal.aborted) throw signal.reason;
    const started = host.clock.now();
    const done = (body: { result: unknown } | { error: string }): ToolOutcome => {
      const now = host.clock.now();
      const cost = { elapsedMs: Math.max(0, now - started), at: isoTime(now) };
      if ('error' in body) return { type: 'error', error: body.error, ...cost };
      const json = toJson(body.result, 'result');
      return json.ok
        ? { type: 'result', result: json.value, ...cost }
        : { type: 'error', error: `TypeError: tool result is not JSON: ${json.reason}`, ...cost };
    };
    // The tool set given at resume may differ from the one the call was decided with.
    if (!tool) return done({ error: `unknown tool ${call.tool}` });
    // Defence in depth for invariant 1: a call that needs approval runs only with one.
    if (call.approval === null && (await needsApproval(tool, call.args))) {
      return done({ error: `refused: ${call.tool} needs approval and this call has none` });
    }
    // Cancelled while an async needsApproval was deciding: the call never starts either.
    if (signal.aborted) throw signal.reason;
    try {
      return done({ result: await callWithTimeout(tool, call, host, signal) });
    } catch (error) {
      return done({ error: describeError(error) });
    }
  });
}
