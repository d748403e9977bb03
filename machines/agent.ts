/**
 * The agent run as an XState v5 machine. Pure: no I/O, no clock, no randomness. Time arrives
 * in events (`at`, `elapsedMs`) and the policy and tool are actors registered by name that the
 * runtime provides with `machine.provide({ actors })`. Importable by Stately tooling as is.
 */
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import canonicalize from 'canonicalize';
import { assign, fromPromise, setup } from 'xstate';
import { wellFormed } from './strings.js';
import type {
  AgentContext,
  AgentEvent,
  AgentInput,
  ApprovalRecord,
  BudgetKind,
  Decision,
  HistoryEntry,
  InflightCall,
  Json,
  PendingCall,
  ToolCall,
  ToolOutcome,
} from './types.js';

/** Input of the policy actor. Kept small: an invoked actor's input is persisted. */
export interface PolicyInput {
  runId: string;
  /** The step this call will be, 1-based. */
  step: number;
}

type DoneEvent<T, Id extends string> = { type: `xstate.done.actor.${Id}`; output: T };
type ErrorEvent<Id extends string> = { type: `xstate.error.actor.${Id}`; error: unknown };

/** Every event the machine handles, including those of its invoked actors. */
export type MachineEvent =
  | AgentEvent
  | DoneEvent<Decision, 'policy'>
  | ErrorEvent<'policy'>
  | DoneEvent<ToolOutcome, 'tool'>
  | ErrorEvent<'tool'>;

/** Freezes a JSON value in place: history entries are shared with the policy, never copied. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** How a history entry is appended: both kinds freeze the entries they append. */
export type Append = (history: HistoryEntry[], ...entries: HistoryEntry[]) => HistoryEntry[];

// Entries are frozen as they are appended, so the policy can be handed the entries themselves
// (an O(1) share per step, not an O(history) deep copy) without being able to change the run.

/**
 * The machine's own append: a new array every time (`concat`, a bulk copy), so a snapshot
 * never changes once made. O(history) per entry.
 */
export const appendCopy: Append = (history, ...entries) => history.concat(entries.map(deepFreeze));

/**
 * O(1): pushes onto the array it is given, and returns it. Only for an actor whose earlier
 * snapshots nobody keeps: the runtime's (src/agent.ts), which reads each snapshot once.
 * A frozen array (a restored run's) is copied once, then grows in place.
 */
export const appendInPlace: Append = (history, ...entries) => {
  const log = Object.isFrozen(history) ? history.slice() : history;
  for (const entry of entries) log.push(deepFreeze(entry));
  return log;
};

/** The longest error text a run keeps: enough for a model to act on, and bounded. */
export const MAX_ERROR_LENGTH = 8_000;

/**
 * A thrown value's message as text. Primitives as `String` gives them; an object is named, not
 * stringified: its own `toString` may throw, or never end (`String(new Array(2 ** 32 - 1))`).
 */
function text(value: unknown): string {
  try {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return String(value);
    return Array.isArray(value) ? '<an array>' : typeof value === 'function' ? '<a function>' : '<an object>';
  } catch {
    return '<unreadable>';
  }
}

/**
 * `'<ErrorName>: <message>'`: errors are kept as strings (an error snapshot persists as `{}`).
 * Total: a thrown value with a throwing `message` getter or `toString`, or a revoked Proxy, is
 * still described; the result is a well-formed string the checkpoint can always write.
 */
export function describeError(error: unknown): string {
  let described: string;
  try {
    if (error instanceof Error) {
      described = `${text(error.name)}: ${text(error.message)}`;
    } else if (error && typeof error === 'object' && 'message' in error) {
      const e = error as { name?: unknown; message?: unknown };
      const name = e.name;
      described = `${typeof name === 'string' ? name : 'Error'}: ${text(e.message)}`;
    } else {
      described = `Error: ${text(error)}`;
    }
  } catch {
    described = 'Error: <unreadable thrown value>';
  }
  if (described.length > MAX_ERROR_LENGTH) {
    described = `${described.slice(0, MAX_ERROR_LENGTH)}… (${described.length - MAX_ERROR_LENGTH} more characters)`;
  }
  return wellFormed(described);
}

function elapsedOf(error: unknown): number {
  try {
    const ms = (error as { elapsedMs?: unknown } | null)?.elapsedMs;
    return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? ms : 0;
  } catch {
    return 0;
  }
}

/**
 * The budget that allows no further policy call, checked in this order, or null. The one rule
 * for budgets: the machine's guards use it, and so does a resume that lowers a limit.
 */
export function exhaustedBudget(
  context: Pick<AgentContext, 'steps' | 'usage' | 'activeMs' | 'limits'>,
): BudgetKind | null {
  const { limits, usage } = context;
  if (context.steps >= limits.maxSteps) return 'steps';
  if (limits.maxTokens !== null && usage.inputTokens + usage.outputTokens >= limits.maxTokens) return 'tokens';
  if (limits.maxActiveMs !== null && context.activeMs >= limits.maxActiveMs) return 'time';
  return null;
}

function expiresAt(ttlMs: number | null, at: string): string | null {
  return ttlMs === null ? null : new Date(Date.parse(at) + ttlMs).toISOString();
}

function pendingFrom(call: ToolCall, ttlMs: number | null, at: string): PendingCall {
  return { ...call, requestedAt: at, expiresAt: expiresAt(ttlMs, at) };
}

/**
 * The id of one approval request: it names the run and step (the key), the attempt, and — by a
 * digest of the canonical `[tool, args]` — the exact call. Two requests that differ in anything
 * (say, two resumes of one checkpoint whose policy answered differently) never share an id, so an
 * approval given for one can never run the other (invariant 1). 128 bits of SHA-256: a collision
 * cannot be precomputed by whoever writes the arguments.
 */
export function callIdOf(key: string, attempt: number, tool: string, args: ToolCall['args']): string {
  const digest = bytesToHex(sha256(utf8ToBytes(canonicalize([tool, args]) as string)).subarray(0, 16));
  return `${key}#${attempt}@${digest}`;
}

function callOf(context: AgentContext, tool: string, args: ToolCall['args']): ToolCall {
  const step = context.steps;
  const key = `${context.runId}:${step}`;
  return { id: callIdOf(key, 1, tool, args), key, step, tool, args, attempt: 1 };
}

function approvalOf(
  event: { callId: string; by: string; note: string; at: string },
  approved: boolean,
): ApprovalRecord {
  return { approved, by: event.by, note: event.note, at: event.at, callId: event.callId };
}

function isExpiredAt(pending: PendingCall | null, at: string): boolean {
  return pending?.expiresAt != null && Date.parse(at) >= Date.parse(pending.expiresAt);
}

function decided(event: MachineEvent): Decision {
  return (event as DoneEvent<Decision, 'policy'>).output;
}

function outcome(event: MachineEvent): ToolOutcome {
  return (event as DoneEvent<ToolOutcome, 'tool'>).output;
}

function inflightEntry(context: AgentContext, body: { result: Json } | { error: string }): HistoryEntry {
  const call = context.inflight as InflightCall;
  const entry = { role: 'tool', tool: call.tool, ...body } as HistoryEntry;
  return call.approval ? ({ ...entry, approval: call.approval } as HistoryEntry) : entry;
}

const types = {
  context: {} as AgentContext,
  events: {} as MachineEvent,
  input: {} as AgentInput,
};

const actors = {
  // Placeholders: the runtime provides the real implementations with machine.provide().
  policy: fromPromise<Decision, PolicyInput>(async () => {
    throw new Error('the policy actor was not provided');
  }),
  tool: fromPromise<ToolOutcome, InflightCall>(async () => {
    throw new Error('the tool actor was not provided');
  }),
};

/** For typing the actions defined outside the machine's setup. */
const typed = setup({ types, actors });

/**
 * The actions that append to the history, on one append strategy: the machine's is
 * `appendCopy`; the runtime provides these with `appendInPlace` (O(1) per step).
 */
export function historyActions(append: Append) {
  return {
    startRun: typed.assign(({ event }) => ({
      history: append([], { role: 'user', content: (event as { goal: string }).goal }),
    })),
    recordFinal: typed.assign(({ context, event }) => {
      const d = decided(event) as Extract<Decision, { type: 'final' }>;
      return { answer: d.final, history: append(context.history, { role: 'assistant', final: d.final }) };
    }),
    requestApproval: typed.assign(({ context, event }) => {
      const d = decided(event) as Extract<Decision, { type: 'call' }>;
      return {
        pending: pendingFrom(callOf(context, d.tool, d.args), context.approvalTtlMs, d.at),
        history: append(context.history, { role: 'assistant', tool: d.tool, args: d.args }),
      };
    }),
    startCall: typed.assign(({ context, event }) => {
      const d = decided(event) as Extract<Decision, { type: 'call' }>;
      return {
        inflight: { ...callOf(context, d.tool, d.args), approval: null },
        history: append(context.history, { role: 'assistant', tool: d.tool, args: d.args }),
      };
    }),
    recordUnknownTool: typed.assign(({ context, event }) => {
      const d = decided(event) as Extract<Decision, { type: 'unknown_tool' }>;
      return {
        history: append(
          context.history,
          { role: 'assistant', tool: d.tool, args: d.args },
          { role: 'tool', tool: d.tool, error: `unknown tool ${d.tool}` },
        ),
      };
    }),
    recordMalformed: typed.assign(({ context, event }) => {
      const d = decided(event) as Extract<Decision, { type: 'malformed' }>;
      return { history: append(context.history, { role: 'tool', tool: d.tool, error: d.error }) };
    }),
    recordDenial: typed.assign(({ context, event }) => {
      const pending = context.pending as PendingCall;
      const e = event as Extract<AgentEvent, { type: 'DENY' }>;
      const entry: HistoryEntry = {
        role: 'tool',
        tool: pending.tool,
        error: `denied by human: ${e.note}`,
        approval: approvalOf(e, false),
        ...(pending.outcome ? { outcome: pending.outcome } : {}),
      };
      return { pending: null, history: append(context.history, entry) };
    }),
    recordExpiry: typed.assign(({ context, event }) => {
      const pending = context.pending as PendingCall;
      const decision =
        event.type === 'APPROVE' || event.type === 'DENY'
          ? { approval: approvalOf(event, event.type === 'APPROVE') }
          : {};
      const entry: HistoryEntry = {
        role: 'tool',
        tool: pending.tool,
        error: 'approval expired',
        ...decision,
        ...(pending.outcome ? { outcome: pending.outcome } : {}),
      };
      return { pending: null, history: append(context.history, entry) };
    }),
    recordResult: typed.assign(({ context, event }) => {
      const o = outcome(event) as Extract<ToolOutcome, { type: 'result' }>;
      return {
        inflight: null,
        activeMs: context.activeMs + o.elapsedMs,
        history: append(context.history, inflightEntry(context, { result: o.result })),
      };
    }),
    recordToolError: typed.assign(({ context, event }) => {
      const o = outcome(event);
      const error = o.type === 'error' ? o.error : 'unexpected tool outcome';
      const elapsedMs = o.type === 'error' ? o.elapsedMs : 0;
      return {
        inflight: null,
        activeMs: context.activeMs + elapsedMs,
        history: append(context.history, inflightEntry(context, { error })),
      };
    }),
    // The tool actor itself failed (a runtime fault, not the tool's): still an observation.
    recordToolFault: typed.assign(({ context, event }) => {
      const error = describeError((event as ErrorEvent<'tool'>).error);
      return {
        inflight: null,
        activeMs: context.activeMs + elapsedOf((event as ErrorEvent<'tool'>).error),
        history: append(context.history, inflightEntry(context, { error })),
      };
    }),
  };
}

export const agentMachine = setup({
  types,
  actors,
  guards: {
    stepsExhausted: ({ context }) => exhaustedBudget(context) === 'steps',
    tokensExhausted: ({ context }) => exhaustedBudget(context) === 'tokens',
    timeExhausted: ({ context }) => exhaustedBudget(context) === 'time',
    hasBudget: ({ context }) => exhaustedBudget(context) === null,
    // A policy call cut off by the active-time budget (its deadline) stops the run for time,
    // not as a failure: raising maxActiveMs and run() asks the policy again.
    activeTimeSpent: ({ context, event }) =>
      event.type === 'xstate.error.actor.policy' &&
      context.limits.maxActiveMs !== null &&
      context.activeMs + elapsedOf(event.error) >= context.limits.maxActiveMs,
    isFinal: ({ event }) => decided(event).type === 'final',
    needsApproval: ({ event }) => {
      const d = decided(event);
      return d.type === 'call' && d.needsApproval;
    },
    isCall: ({ event }) => decided(event).type === 'call',
    isUnknownTool: ({ event }) => decided(event).type === 'unknown_tool',
    // Approvals are matched to the exact pending call: a decision about an earlier request
    // (superseded, or already decided) never reaches the current one.
    callMatches: ({ context, event }) =>
      (event.type === 'APPROVE' || event.type === 'DENY') && context.pending?.id === event.callId,
    callMatchesAndExpired: ({ context, event }) =>
      (event.type === 'APPROVE' || event.type === 'DENY') &&
      context.pending?.id === event.callId &&
      isExpiredAt(context.pending, event.at),
    isExpired: ({ context, event }) => event.type === 'EXPIRE' && isExpiredAt(context.pending, event.at),
    outcomeUnknown: ({ event }) => outcome(event).type === 'outcome_unknown',
    toolSucceeded: ({ event }) => outcome(event).type === 'result',
  },
  actions: {
    ...historyActions(appendCopy),
    markStepsExhausted: assign({ stoppedBy: 'steps' as const }),
    markTokensExhausted: assign({ stoppedBy: 'tokens' as const }),
    markTimeExhausted: assign({ stoppedBy: 'time' as const }),
    // Whatever stops the run now (after a change of limits), so stoppedBy is never stale.
    markExhausted: assign(({ context }) => ({ stoppedBy: exhaustedBudget(context) ?? context.stoppedBy })),
    countPolicyTime: assign(({ context, event }) => ({
      activeMs: context.activeMs + elapsedOf((event as ErrorEvent<'policy'>).error),
    })),
    clearStop: assign({ stoppedBy: null, error: null }),
    // Every policy outcome counts one step and adds what it cost.
    countDecision: assign(({ context, event }) => {
      const d = decided(event);
      return {
        steps: context.steps + 1,
        activeMs: context.activeMs + d.elapsedMs,
        usage: d.usage
          ? {
              inputTokens: context.usage.inputTokens + d.usage.inputTokens,
              outputTokens: context.usage.outputTokens + d.usage.outputTokens,
            }
          : context.usage,
      };
    }),
    recordPolicyFailure: assign(({ context, event }) => {
      const error = (event as ErrorEvent<'policy'>).error;
      return { error: describeError(error), activeMs: context.activeMs + elapsedOf(error) };
    }),
    approvePending: assign(({ context, event }) => {
      const pending = context.pending as PendingCall;
      const { requestedAt: _r, expiresAt: _e, outcome: _o, ...call } = pending;
      return {
        pending: null,
        inflight: { ...call, approval: approvalOf(event as Extract<AgentEvent, { type: 'APPROVE' }>, true) },
      };
    }),
    // Resumed with a non-idempotent side effect in flight: ask a human again, marked unknown.
    requestAgain: assign(({ context, event }) => {
      const call = context.inflight as InflightCall;
      const { approval: _a, ...rest } = call;
      const attempt = call.attempt + 1;
      const at = outcome(event).at;
      const pending: PendingCall = {
        ...pendingFrom(
          { ...rest, id: callIdOf(call.key, attempt, call.tool, call.args), attempt },
          context.approvalTtlMs,
          at,
        ),
        outcome: 'unknown',
      };
      return { inflight: null, pending };
    }),
    assignLimits: assign(({ context, event }) => ({
      limits: { ...context.limits, ...(event as Extract<AgentEvent, { type: 'EXTEND_BUDGET' }>).limits },
    })),
    // A cancelled run has nothing pending, in flight or stopped: those belong to live states.
    // (A call in flight when cancelled had its signal aborted; its assistant entry stays.)
    recordCancel: assign(({ event }) => ({
      cancelReason: (event as Extract<AgentEvent, { type: 'CANCEL' }>).reason,
      pending: null,
      inflight: null,
      stoppedBy: null,
    })),
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    runId: input.runId,
    history: [],
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    activeMs: 0,
    limits: input.limits,
    approvalTtlMs: input.approvalTtlMs,
    pending: null,
    inflight: null,
    answer: null,
    stoppedBy: null,
    error: null,
    cancelReason: null,
  }),
  initial: 'idle',
  on: {
    CANCEL: { target: '.cancelled', actions: 'recordCancel' },
    EXTEND_BUDGET: { actions: 'assignLimits' },
  },
  states: {
    idle: {
      on: { START: { target: 'running', actions: 'startRun' } },
    },
    running: {
      initial: 'checking',
      states: {
        // Budgets are checked before every policy call, never after: a step is never taken
        // that the budget does not allow (invariant 3).
        checking: {
          always: [
            { guard: 'stepsExhausted', target: '#agent.budget_exhausted', actions: 'markStepsExhausted' },
            { guard: 'tokensExhausted', target: '#agent.budget_exhausted', actions: 'markTokensExhausted' },
            { guard: 'timeExhausted', target: '#agent.budget_exhausted', actions: 'markTimeExhausted' },
            { target: 'deciding' },
          ],
        },
        deciding: {
          invoke: {
            id: 'policy',
            src: 'policy',
            input: ({ context }) => ({ runId: context.runId, step: context.steps + 1 }),
            onDone: [
              { guard: 'isFinal', target: '#agent.done', actions: ['countDecision', 'recordFinal'] },
              {
                guard: 'needsApproval',
                target: '#agent.awaiting_approval',
                actions: ['countDecision', 'requestApproval'],
              },
              { guard: 'isCall', target: 'executing', actions: ['countDecision', 'startCall'] },
              { guard: 'isUnknownTool', target: 'checking', actions: ['countDecision', 'recordUnknownTool'] },
              { target: 'checking', actions: ['countDecision', 'recordMalformed'] },
            ],
            onError: [
              {
                guard: 'activeTimeSpent',
                target: '#agent.budget_exhausted',
                actions: ['countPolicyTime', 'markTimeExhausted'],
              },
              { target: '#agent.failed', actions: 'recordPolicyFailure' },
            ],
          },
        },
        // Entering here is the write-ahead record: the checkpoint says key K is in flight.
        executing: {
          invoke: {
            id: 'tool',
            src: 'tool',
            input: ({ context }) => context.inflight as InflightCall,
            onDone: [
              { guard: 'outcomeUnknown', target: '#agent.awaiting_approval', actions: 'requestAgain' },
              { guard: 'toolSucceeded', target: 'checking', actions: 'recordResult' },
              { target: 'checking', actions: 'recordToolError' },
            ],
            onError: { target: 'checking', actions: 'recordToolFault' },
          },
        },
      },
    },
    awaiting_approval: {
      on: {
        APPROVE: [
          { guard: 'callMatchesAndExpired', target: 'running', actions: 'recordExpiry' },
          { guard: 'callMatches', target: 'running.executing', actions: 'approvePending' },
        ],
        DENY: [
          { guard: 'callMatchesAndExpired', target: 'running', actions: 'recordExpiry' },
          { guard: 'callMatches', target: 'running', actions: 'recordDenial' },
        ],
        EXPIRE: { guard: 'isExpired', target: 'running', actions: 'recordExpiry' },
      },
    },
    budget_exhausted: {
      on: {
        RUN: [{ guard: 'hasBudget', target: 'running', actions: 'clearStop' }, { actions: 'markExhausted' }],
        EXTEND_BUDGET: { actions: ['assignLimits', 'markExhausted'] },
      },
    },
    failed: {
      on: { RUN: { target: 'running', actions: 'clearStop' } },
    },
    done: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

export type AgentMachine = typeof agentMachine;
