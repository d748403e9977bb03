/**
 * The real policy and tool actors, given to the pure machine with `machine.provide`. They do
 * the I/O: calling the policy (with bounded retries), calling tools (with timeouts, abort and
 * JSON checks), and measuring the active time the budgets count.
 */
import { fromPromise } from 'xstate';
import type { PolicyInput } from '../machines/agent.js';
import { describeError } from '../machines/agent.js';
import type { Decision, HistoryEntry, InflightCall, JsonObject, ToolOutcome } from '../machines/types.js';
import { needsApproval, readAction } from './action.js';
import { type Clock, isoTime } from './clock.js';
import { earliest, TimeoutError, withDeadline } from './deadline.js';
import { toJson } from './json.js';
import type { Policy, Tool } from './types.js';

/** What a policy is told it has left: the run's budgets minus what is spent; null = unlimited. */
export interface Remaining {
  /** Policy calls left, this one included. */
  steps: number;
  /** Input + output tokens left. */
  tokens: number | null;
  /** Active milliseconds left. */
  activeMs: number | null;
}

/** What the actors need from the Agent that provides them. */
export interface ActorHost {
  runId: string;
  policy: Policy;
  tools: ReadonlyMap<string, Tool>;
  clock: Clock;
  policyRetries: number;
  retryDelayMs: number;
  /** Each policy attempt is aborted after this long (a failed try); null: no per-call limit. */
  policyTimeoutMs: number | null;
  /** The live history (entries are frozen; the array is copied for the policy). */
  history(): readonly HistoryEntry[];
  /** The budgets left as the run stands now (before the call about to be made). */
  remaining(): Remaining;
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

/**
 * An error that carries the active time spent before it, so the budget still counts it. Total:
 * a frozen, hostile or primitive throw becomes a stand-in with the same name and message.
 */
function withElapsed(error: unknown, elapsedMs: number): unknown {
  try {
    if (error !== null && typeof error === 'object') {
      if (Object.isExtensible(error)) {
        try {
          Object.assign(error, { elapsedMs });
          if ((error as { elapsedMs?: unknown }).elapsedMs === elapsedMs) return error;
        } catch {
          /* a read-only or trapped elapsedMs: fall through */
        }
      }
    }
  } catch {
    /* a Proxy whose traps throw: fall through */
  }
  // The stand-in is described as the original would be ('<name>: <message>', once).
  const described = describeError(error);
  const colon = described.indexOf(': ');
  const standIn = Object.assign(new Error(described.slice(colon + 2), { cause: error }), { elapsedMs });
  standIn.name = described.slice(0, colon);
  return standIn;
}

/** Remaining active time after `spent` more ms, or null without an active-time budget. */
function activeLeft(remaining: Remaining, spent: number): number | null {
  return remaining.activeMs === null ? null : remaining.activeMs - spent;
}

export function policyActor(hostOf: HostOf) {
  return fromPromise<Decision, PolicyInput>(async ({ input, signal, system }) => {
    const host = hostOf(system);
    await host.durable();
    if (signal.aborted) throw signal.reason;
    const started = host.clock.now();
    const spent = () => Math.max(0, host.clock.now() - started);
    // Read live: a budget extended while the call runs moves its deadline.
    const activeLeftNow = () => activeLeft(host.remaining(), spent());
    for (let attempt = 0; ; attempt++) {
      const remaining = host.remaining();
      const left = activeLeft(remaining, spent());
      // The back-off ran into the end of the active-time budget: no further try.
      if (left !== null && left <= 0) {
        throw withElapsed(new TimeoutError('policy stopped: the active-time budget (maxActiveMs) ran out'), spent());
      }
      const ctx = {
        runId: input.runId,
        step: input.step,
        attempt,
        remaining: { ...remaining, activeMs: left },
      };
      let raw: unknown;
      try {
        // The active-time budget bounds the call in flight too: its rest is this call's deadline.
        const attemptStarted = spent();
        const attemptLeft = () => {
          const limit = host.policyTimeoutMs === null ? null : host.policyTimeoutMs - (spent() - attemptStarted);
          return earliest(limit, activeLeftNow());
        };
        ({ value: raw } = await withDeadline(
          (callSignal) => unwrap(host.policy(host.history().slice(), { ...ctx, signal: callSignal })),
          attemptLeft,
          signal,
          host.clock,
          () =>
            new TimeoutError(
              (activeLeftNow() ?? 1) > 0
                ? `policy timed out after ${host.policyTimeoutMs} ms`
                : 'policy stopped: the active-time budget (maxActiveMs) ran out',
            ),
        ));
      } catch (error) {
        const timeLeft = activeLeftNow();
        if (signal.aborted || attempt >= host.policyRetries || (timeLeft !== null && timeLeft <= 0)) {
          throw withElapsed(error, spent());
        }
        // The back-off counts as active time, so it is cut short where the budget ends.
        const delay = earliest(Math.min(host.retryDelayMs * 2 ** attempt, MAX_RETRY_DELAY_MS), timeLeft) ?? 0;
        await host.clock.sleep(delay, signal);
        continue;
      }
      const { decision, usage } = await readAction(raw, host.tools);
      const now = host.clock.now();
      return { ...decision, usage, elapsedMs: Math.max(0, now - started), at: isoTime(now) };
    }
  });
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
    const left = host.remaining().activeMs;
    // Not started at all when the active-time budget is already spent: not running is always safe.
    if (left !== null && left <= 0) {
      return done({ error: `not run: the active-time budget (maxActiveMs) was spent before ${call.tool} started` });
    }
    const spent = () => Math.max(0, host.clock.now() - started);
    // The tool's own timeout, and the active time left (read live: a budget extended meanwhile
    // moves the deadline), whichever ends first.
    const timeoutLeft = () => (tool.timeoutMs === undefined ? null : tool.timeoutMs - spent());
    const activeLeftNow = () => activeLeft(host.remaining(), spent());
    const ctx = { runId: host.runId, step: call.step, key: call.key, approvedCallId: call.approval?.callId ?? null };
    try {
      const result = await withDeadline(
        // The tool gets its own copy, made by the same JSON copy the arguments were checked with.
        (toolSignal) => unwrap(tool.fn(copyArgs(call.args), call.key, { ...ctx, signal: toolSignal })),
        () => earliest(timeoutLeft(), activeLeftNow()),
        signal,
        host.clock,
        () =>
          new TimeoutError(
            (timeoutLeft() ?? 1) <= 0
              ? `tool ${tool.name} timed out after ${tool.timeoutMs} ms`
              : `tool ${tool.name} stopped after ${spent()} ms: the active-time budget (maxActiveMs) ran out`,
          ),
      );
      return done({ result: result.value });
    } catch (error) {
      return done({ error: describeError(error) });
    }
  });
}

/**
 * What a policy or tool returned, awaited only when it is a promise, and boxed: awaiting or
 * resolving with a value reads its `then`, which a hostile value (a revoked Proxy, a throwing
 * getter) turns into a throw. Unread, it reaches the JSON copy, which reports it as data.
 */
async function unwrap(returned: unknown): Promise<{ value: unknown }> {
  let thenable = false;
  try {
    thenable =
      returned !== null &&
      (typeof returned === 'object' || typeof returned === 'function') &&
      typeof (returned as { then?: unknown }).then === 'function';
  } catch {
    thenable = false;
  }
  return { value: thenable ? await returned : returned };
}

/** The tool's own copy of the (frozen) arguments: the very value the approval rule saw. */
function copyArgs(args: JsonObject): JsonObject {
  const copy = toJson(args, 'args');
  if (!copy.ok) throw new TypeError(copy.reason); // a frozen JSON value always copies
  return copy.value as JsonObject;
}
