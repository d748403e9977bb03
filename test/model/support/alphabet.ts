/**
 * The test alphabet: the moves a test can make on a run. A move is performed on the real Agent
 * by the `World` (world.ts) and turned into machine events by model-events.ts; the two halves
 * never share code, so the model stays an independent oracle for the runtime's classification
 * (src/runtime/classify.ts) and its tool and decision handling (src/runtime/).
 */
import type { AgentContext, CallCost, JsonObject, Limits, Usage } from '../../../machines/types.js';
import { argsOf, type CallTool, type EditRefusal, toolNameOf, type VerifyAnswer } from './tools.js';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const RUN_ID = 'run-m';
export const GOAL = 'settle the refund';
/** The user's next message: `send` goes on from a run that answered (or that a budget stopped). */
export const MESSAGE = 'and refund the shipping too';
/** Approvals expire this long after they are requested. */
export const TTL_MS = 60_000;
/** Every tool aborts after this many ms (the `timeout` outcome). */
export const TOOL_TIMEOUT_MS = 50;
/** What the model says beside its calls, when it says something. */
export const TEXT = 'checking two things first';
export const iso = (ms: number): string => new Date(ms).toISOString();

/** The id the model gives the i-th (0-based) call of a step, when it gives one. */
export const modelCallId = (i: number): string => `tc_${i + 1}`;

/** One call a policy asks for: the tool, its arguments' variant, and whether the model names it. */
export interface CallSpec {
  tool: CallTool;
  variant: number;
  id: boolean;
}

/**
 * `call`: one call in the seed's form `{ tool, args, id?, text? }`; `calls`: the form
 * `{ calls: [...], text? }` (one or more calls); `final`, `malformed`, `throws`.
 */
export type PolicyKind = 'final' | 'call' | 'calls' | 'malformed' | 'throws';

/** What the policy does on one call. */
export interface PolicySpec {
  kind: PolicyKind;
  /** The calls of a `call` (exactly one) or `calls` action. */
  calls: CallSpec[];
  /** The model says `TEXT` beside its calls. */
  text: boolean;
  /** Clock time the call takes (advanced by the world while the call is in flight). */
  elapsedMs: number;
  usage: Usage | null;
  /** Varies answers, the kind of malformation and unreadable usage. */
  variant: number;
}

export type ToolKind = 'result' | 'throw' | 'timeout' | 'nonjson';

/** What a tool does on one call. */
export interface ToolSpec {
  kind: ToolKind;
  elapsedMs: number;
  /** Which non-JSON value a `nonjson` result is (NON_JSON). */
  variant?: number;
  /** What a tool with `verify` answers when this call times out. @default 'unknown' */
  verify?: VerifyAnswer;
}

/** One decision of a `decide({ [callId]: … })` map, naming a pending call by position. */
export interface Pick {
  /** Which of the open (unexpired) pending calls, modulo their number. */
  at: number;
  approve: boolean;
  /** Approve with edited arguments (this variant), where the tool allows edits. */
  edit?: number;
  /** Approve every later call of this tool in the run (a standing approval). */
  always?: boolean;
}

/** One thing that can happen to a run. */
export type Move =
  | { kind: 'start' }
  | { kind: 'policy'; spec: PolicySpec }
  | { kind: 'tool'; spec: ToolSpec }
  /**
   * Checkpoint, lose the process, resume from the blob with fresh tool instances; `afterMs` of
   * clock time pass first (with a call in flight, short of its deadline).
   */
  /** The process dies; the run is resumed (with `maxSteps` / `maxCostUsd` replacing its limits, when given). */
  /** `verify`: what a tool with `verify` in flight answers at the resume. @default 'unknown' */
  | { kind: 'crash'; maxSteps?: number; maxCostUsd?: number; afterMs?: number; verify?: VerifyAnswer }
  /** The seed's `decide(approved, note, { callId })` on the `pick`-th pending call. */
  | { kind: 'approve' | 'deny'; pick?: number }
  /** Time passes beyond the call's expiry, then the human approves it anyway (seed's form). */
  | { kind: 'approveLate'; pick?: number }
  /** `decide(map)`: some of the pending calls at once, in call order or reversed. */
  | { kind: 'decide'; picks: Pick[]; reverse: boolean; name?: string }
  /** Time passes beyond every expiry (or, `first`, to the earliest one only), then `run()`. */
  | { kind: 'expire'; first?: boolean }
  | { kind: 'cancel' }
  | { kind: 'extend'; limits: Partial<Limits> }
  | { kind: 'run' }
  /** `send(MESSAGE)`: a new turn of the conversation. */
  | { kind: 'send' }
  /** Time passes while nothing runs (a human thinking): not active time. */
  | { kind: 'wait'; ms: number }
  /** Mistakes a caller can make; each must throw a typed error and change nothing. */
  | Mistake;

export type Mistake =
  /** A decision naming a call id that is not pending (superseded, or never issued). */
  | { kind: 'decideStale'; legacy: boolean }
  /** A decision map naming an expired call (beside a valid decision). */
  | { kind: 'decideExpired' }
  /**
   * A decision map approving an edit that must be refused (`why`: the tool forbids edits or the
   * call's outcome is unknown; send's schema refuses it; send's rule denies it), possibly as a
   * standing approval (`always`), which must not pass what a single approval may not.
   */
  | { kind: 'decideEditForbidden'; why?: EditRefusal; always?: boolean }
  /** The seed's `decide(true)` with several calls pending and no `callId`. */
  | { kind: 'decideUnnamed' }
  | { kind: 'decideNothing'; legacy: boolean }
  | { kind: 'startAgain' };

export type MistakeKind = Mistake['kind'];
export const MISTAKES: readonly MistakeKind[] = [
  'decideStale',
  'decideExpired',
  'decideEditForbidden',
  'decideUnnamed',
  'decideNothing',
  'startAgain',
];
export const isMistake = (move: Move): move is Mistake => (MISTAKES as readonly string[]).includes(move.kind);

function describeCalls(spec: PolicySpec): string {
  const calls = spec.calls.map((c) => `${c.tool}#${c.variant}${c.id ? '@' : ''}`).join(',');
  return `${calls}${spec.text ? '+text' : ''}`;
}

function describePick(p: Pick): string {
  const how = p.approve ? `ok${p.edit === undefined ? '' : `+edit${p.edit}`}${p.always ? '+always' : ''}` : 'no';
  return `${p.at}:${how}`;
}

export function describeMove(move: Move): string {
  switch (move.kind) {
    case 'policy': {
      const { kind, elapsedMs, usage, variant } = move.spec;
      const u = usage
        ? ` tokens=${usage.inputTokens + usage.outputTokens}${usage.costUsd === undefined ? '' : ` $${usage.costUsd}`}`
        : '';
      const what = kind === 'call' || kind === 'calls' ? `${kind}(${describeCalls(move.spec)})` : `${kind}#${variant}`;
      return `policy:${what}(${elapsedMs}ms${u})`;
    }
    case 'tool':
      return `tool:${move.spec.kind}${move.spec.kind === 'nonjson' ? `#${move.spec.variant ?? 0}` : ''}${move.spec.verify ? `[verify ${move.spec.verify}]` : ''}(${move.spec.elapsedMs}ms)`;
    case 'extend':
      return `extend${JSON.stringify(move.limits)}`;
    case 'crash': {
      const opts = [
        ...(move.maxSteps === undefined ? [] : [`maxSteps=${move.maxSteps}`]),
        ...(move.maxCostUsd === undefined ? [] : [`maxCostUsd=${move.maxCostUsd}`]),
        ...(move.afterMs === undefined ? [] : [`after ${move.afterMs}ms`]),
        ...(move.verify === undefined ? [] : [`verify ${move.verify}`]),
      ];
      return opts.length === 0 ? 'crash' : `crash(${opts.join(', ')})`;
    }
    case 'approve':
    case 'deny':
    case 'approveLate':
      return move.pick === undefined ? move.kind : `${move.kind}(#${move.pick})`;
    case 'decide': {
      const name = move.name === undefined ? '' : `:${move.name}`;
      return `decide${name}{${move.picks.map(describePick).join(' ')}}${move.reverse ? '(reversed)' : ''}`;
    }
    case 'expire':
      return move.first ? 'expire(first)' : 'expire';
    case 'wait':
      return `wait(${move.ms}ms)`;
    case 'decideEditForbidden':
      return `${move.kind}(${move.why ?? 'forbidden'}${move.always ? ', always' : ''})`;
    case 'decideStale':
    case 'decideNothing':
      return move.legacy ? `${move.kind}(seed form)` : move.kind;
    default:
      return move.kind;
  }
}

/** The move's name in the per-move counts a run prints. */
export function moveLabel(move: Move): string {
  if (move.kind === 'policy') return `policy:${move.spec.kind}`;
  if (move.kind === 'crash' && move.afterMs !== undefined) return 'crash(after)';
  return move.kind;
}

/** Results a tool may return that are not JSON, and why the runtime must say they are not. */
const NON_JSON: [() => unknown, string][] = [
  [() => 10n, 'result is a bigint'],
  [() => Number.NaN, 'result is NaN'],
  [() => new Map(), 'result is an instance of Map, not a plain object'],
  [() => ({ [Symbol('s')]: 1 }), 'result has symbol keys'],
  [() => ({ '\uD800': 1 }), 'result has a key with a lone surrogate'],
  [() => ({ nested: [undefined] }), 'result.nested[0] is undefined'],
];
export const nonJson = (spec: ToolSpec) => NON_JSON[(spec.variant ?? 0) % NON_JSON.length] as [() => unknown, string];

/**
 * The malformed actions the contract names: the raw action (given the usage to carry, where it
 * can), and the tool and reason the observation must give.
 */
export const MALFORMED: [raw: (usage: object) => unknown, tool: string, why: string][] = [
  [(u) => ({ tool: 'lookup', final: 'both', ...u }), 'lookup', 'has both tool and final'],
  [(u) => ({ tool: 'lookup', args: ['not', 'an', 'object'], ...u }), 'lookup', 'args must be an object'],
  [() => 'not an action', '', 'expected an object, got string'],
  [(u) => ({ tool: '', args: {}, ...u }), '', 'tool must be a non-empty string'],
  [(u) => ({ tool: 7, ...u }), '', 'tool must be a non-empty string'],
  [(u) => ({ calls: [], ...u }), '', 'calls must be a non-empty array'],
  [
    (u) => ({
      calls: [
        { tool: 'lookup', id: 'x' },
        { tool: 'send', args: { to: 'a' }, id: 'x' },
      ],
      ...u,
    }),
    '',
    'calls[1].id repeats the id of an earlier call',
  ],
  [(u) => ({ tool: 'lookup', calls: [{ tool: 'lookup' }], ...u }), 'lookup', 'has both tool and calls'],
  [(u) => ({ calls: [{ tool: 'lookup' }], text: 5, ...u }), '', 'text must be a string (without lone surrogates)'],
];
/** The index of the malformed action that is a bare string. */
const STRING_ACTION = 2;
export const malformedOf = (spec: PolicySpec) => MALFORMED[spec.variant % MALFORMED.length] as (typeof MALFORMED)[0];

/** Variants 4 and 5 of an action that is not malformed report a usage the runtime must ignore. */
const badUsage = (spec: PolicySpec) => spec.kind !== 'malformed' && (spec.variant === 4 || spec.variant === 5);

/** The calls of a spec as the model writes them (`{ tool, args, id? }`). */
export function requestedCalls(spec: PolicySpec): { tool: string; args: JsonObject; id: string | null }[] {
  return spec.calls.map((c, i) => ({
    tool: toolNameOf(c.tool),
    args: argsOf(c.tool, c.variant),
    id: c.id ? modelCallId(i) : null,
  }));
}

/** What the policy returns (or throws) for a spec: the raw action, as a model would. */
export function rawAction(spec: PolicySpec): unknown {
  const v = spec.variant;
  const u = spec.usage;
  const usage = u ? { usage: badUsage(spec) ? { ...u, outputTokens: v === 4 ? 1.5 : -1 } : u } : {};
  const text = spec.text ? { text: TEXT } : {};
  switch (spec.kind) {
    case 'final':
      // An explicit `tool: undefined` is no tool: still a final answer.
      return v % 2 === 1 ? { final: `answer-${v}`, tool: undefined, ...usage } : { final: `answer-${v}`, ...usage };
    case 'call': {
      const [c] = requestedCalls(spec);
      if (!c) throw new Error('test error: a call action has one call');
      return { tool: c.tool, args: c.args, ...(c.id === null ? {} : { id: c.id }), ...text, ...usage };
    }
    case 'calls':
      return {
        calls: requestedCalls(spec).map((c) => ({
          tool: c.tool,
          args: c.args,
          ...(c.id === null ? {} : { id: c.id }),
        })),
        ...text,
        ...usage,
      };
    case 'malformed':
      return malformedOf(spec)[0](usage);
    case 'throws':
      // A policy may throw anything: an Error, or a plain object with a message (no name).
      if (v % 2 === 1) throw { message: 'policy down' };
      throw new Error('policy down');
  }
}

/** Whether the raw action carries a usage at all (readable or not): a bare string cannot. */
export function usagePresent(spec: PolicySpec): boolean {
  return !(spec.kind === 'malformed' && spec.variant % MALFORMED.length === STRING_ACTION) && spec.usage !== null;
}

/** The usage the runtime can read off the raw action. */
export function specUsage(spec: PolicySpec): Usage | null {
  // A bare string cannot carry usage.
  if (spec.kind === 'malformed' && spec.variant % MALFORMED.length === STRING_ACTION) return null;
  return badUsage(spec) ? null : spec.usage;
}

/**
 * What the runtime must say the call cost, written out (the world gives no `price`): the
 * reported `costUsd` (read even when the token counts are not), else unknown, for the reasons
 * src/runtime/cost.ts gives.
 */
export function specCost(spec: PolicySpec): CallCost {
  const carried = !(spec.kind === 'malformed' && spec.variant % MALFORMED.length === STRING_ACTION);
  if (!carried || spec.usage === null) return { unknown: 'the policy reported no usage' };
  if (spec.usage.costUsd !== undefined) return { usd: spec.usage.costUsd };
  return { unknown: 'no price option, and the usage reports no costUsd' };
}

/** The tool result for a spec (the world returns it from `fn`). */
export function toolResult(tool: string, spec: ToolSpec): unknown {
  return spec.kind === 'nonjson' ? nonJson(spec)[0]() : { ok: true, tool, ms: spec.elapsedMs };
}

/** The approvers and notes the world uses: they end up in history. */
export const APPROVER = 'alice';
export const APPROVE_NOTE = 'ok';
export const DENIER = 'bob';
export const DENY_NOTE = 'not today';
/** Who decides with a decision map. */
export const DECIDER = 'carol';
export const CANCEL_REASON = 'user stop';

/** A snapshot as far as the model needs it. */
export interface ModelState {
  value: unknown;
  context: AgentContext;
}

export type Status = 'idle' | 'running' | 'awaiting_approval' | 'budget_exhausted' | 'done' | 'failed' | 'cancelled';
export const statusOf = (value: unknown): Status => (typeof value === 'string' ? (value as Status) : 'running');
export const isDeciding = (s: { value: unknown }) => JSON.stringify(s.value) === '{"running":"deciding"}';
export const isExecuting = (s: { value: unknown }) => JSON.stringify(s.value) === '{"running":"executing"}';

export type { JsonObject };
