/**
 * The test alphabet: the moves a test can make on a run, and for each the event the machine
 * would see. A move is performed on the real Agent by the `World` (world.ts) and turned into a
 * machine event here; the two halves never share code, so the model stays an independent oracle
 * for the runtime's classification (src/action.ts) and tool handling (src/actors.ts).
 */
import type { MachineEvent } from '../../../machines/index.js';
import type { AgentContext, Decision, JsonObject, Limits, ToolOutcome, Usage } from '../../../machines/types.js';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const RUN_ID = 'run-m';
export const GOAL = 'settle the refund';
/** Approvals expire this long after they are requested. */
export const TTL_MS = 60_000;
/** Every tool aborts after this many ms (the `timeout` outcome). */
export const TOOL_TIMEOUT_MS = 50;
export const iso = (ms: number): string => new Date(ms).toISOString();

/** The tools of the test world: one pure, one side effect, one deduplicating side effect. */
export const TOOLS = {
  lookup: { sideEffect: false, idempotent: false },
  send: { sideEffect: true, idempotent: false },
  charge: { sideEffect: true, idempotent: true },
} as const;
export type ToolName = keyof typeof TOOLS;
export const isToolName = (name: string): name is ToolName => Object.hasOwn(TOOLS, name);

export type PolicyKind = 'final' | 'lookup' | 'send' | 'charge' | 'unknown' | 'malformed' | 'throws';

/** What the policy does on one call. */
export interface PolicySpec {
  kind: PolicyKind;
  /** Clock time the call takes (advanced by the world while the call is in flight). */
  elapsedMs: number;
  usage: Usage | null;
  /** Varies arguments, answers and the kind of malformation. */
  variant: number;
}

export type ToolKind = 'result' | 'throw' | 'timeout' | 'nonjson';

/** What a tool does on one call. */
export interface ToolSpec {
  kind: ToolKind;
  elapsedMs: number;
  /** Which non-JSON value a `nonjson` result is (NON_JSON). */
  variant?: number;
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
const nonJson = (spec: ToolSpec) => NON_JSON[(spec.variant ?? 0) % NON_JSON.length] as [() => unknown, string];

/** One thing that can happen to a run. */
export type Move =
  | { kind: 'start' }
  | { kind: 'policy'; spec: PolicySpec }
  | { kind: 'tool'; spec: ToolSpec }
  /** Checkpoint now, lose the process, resume from the blob with fresh tool instances. */
  | { kind: 'crash'; maxSteps?: number }
  | { kind: 'approve' }
  | { kind: 'deny' }
  /** Time passes beyond the approval's expiry, then `run()`. */
  | { kind: 'expire' }
  /** Time passes beyond the approval's expiry, then the human approves anyway. */
  | { kind: 'approveLate' }
  | { kind: 'cancel' }
  | { kind: 'extend'; limits: Partial<Limits> }
  | { kind: 'run' }
  /** Time passes while nothing runs (a human thinking): not active time. */
  | { kind: 'wait'; ms: number }
  /** Mistakes a caller can make; each must throw a typed error and change nothing. */
  | { kind: 'decideStale' }
  | { kind: 'decideNothing' }
  | { kind: 'startAgain' };

export function describeMove(move: Move): string {
  switch (move.kind) {
    case 'policy': {
      const { kind, elapsedMs, usage, variant } = move.spec;
      const u = usage ? ` tokens=${usage.inputTokens + usage.outputTokens}` : '';
      return `policy:${kind}#${variant}(${elapsedMs}ms${u})`;
    }
    case 'tool':
      return `tool:${move.spec.kind}${move.spec.kind === 'nonjson' ? `#${move.spec.variant ?? 0}` : ''}(${move.spec.elapsedMs}ms)`;
    case 'extend':
      return `extend${JSON.stringify(move.limits)}`;
    case 'crash':
      return move.maxSteps === undefined ? 'crash' : `crash(maxSteps=${move.maxSteps})`;
    case 'wait':
      return `wait(${move.ms}ms)`;
    default:
      return move.kind;
  }
}

/**
 * Variants 4 and 5 report a usage the runtime must ignore (not a non-negative integer);
 * malformed actions come in five kinds.
 */
const MALFORMED_KINDS = 5;
const badUsage = (spec: PolicySpec) => spec.kind !== 'malformed' && spec.variant >= 4;

/** What the policy returns (or throws) for a spec: the raw action, as a model would. */
export function rawAction(spec: PolicySpec): unknown {
  const v = spec.variant;
  const u = spec.usage;
  const usage = u ? { usage: badUsage(spec) ? { ...u, outputTokens: v === 4 ? 1.5 : -1 } : u } : {};
  switch (spec.kind) {
    case 'final':
      // An explicit `tool: undefined` is no tool: still a final answer.
      return v % 2 === 1 ? { final: `answer-${v}`, tool: undefined, ...usage } : { final: `answer-${v}`, ...usage };
    case 'lookup':
      return { tool: 'lookup', args: { q: `q${v}` }, ...usage };
    case 'send':
      return { tool: 'send', args: { to: `ops${v}@example.com` }, ...usage };
    case 'charge':
      return { tool: 'charge', args: { amount: v + 1 }, ...usage };
    case 'unknown':
      return { tool: 'teleport', args: { to: 'mars' }, ...usage };
    case 'malformed':
      // The malformations the contract names; a bare string cannot carry usage.
      switch (v % MALFORMED_KINDS) {
        case 0:
          return { tool: 'lookup', final: 'both', ...usage };
        case 1:
          return { tool: 'lookup', args: ['not', 'an', 'object'], ...usage };
        case 2:
          return 'not an action';
        case 3:
          return { tool: '', args: {}, ...usage };
        default:
          return { tool: 7, ...usage };
      }
    case 'throws':
      // A policy may throw anything: an Error, or a plain object with a message (no name).
      if (v % 2 === 1) throw { message: 'policy down' };
      throw new Error('policy down');
  }
}

/** The usage the runtime can read off the raw action. */
export function specUsage(spec: PolicySpec): Usage | null {
  if (spec.kind === 'malformed' && spec.variant % MALFORMED_KINDS === 2) return null;
  return badUsage(spec) ? null : spec.usage;
}

/** The decision the runtime must hand the machine for a spec: written out, not computed. */
function expectedDecision(spec: PolicySpec, elapsedMs: number, at: string): Decision {
  const cost = { usage: specUsage(spec), elapsedMs, at };
  const v = spec.variant;
  switch (spec.kind) {
    case 'final':
      return { type: 'final', final: `answer-${v}`, ...cost };
    case 'lookup':
      return { type: 'call', tool: 'lookup', args: { q: `q${v}` }, needsApproval: false, ...cost };
    case 'send':
      return { type: 'call', tool: 'send', args: { to: `ops${v}@example.com` }, needsApproval: true, ...cost };
    case 'charge':
      return { type: 'call', tool: 'charge', args: { amount: v + 1 }, needsApproval: true, ...cost };
    case 'unknown':
      return { type: 'unknown_tool', tool: 'teleport', args: { to: 'mars' }, ...cost };
    case 'malformed': {
      const m = (tool: string, why: string): Decision => ({
        type: 'malformed',
        tool,
        error: `malformed action: ${why}`,
        ...cost,
      });
      switch (v % MALFORMED_KINDS) {
        case 0:
          return m('lookup', 'has both tool and final');
        case 1:
          return m('lookup', 'args must be an object');
        case 2:
          return m('', 'expected an object, got string');
        case 3:
          return m('', 'tool must be a non-empty string');
        default:
          return m('', 'tool must be a non-empty string');
      }
    }
    case 'throws':
      throw new Error('a throwing policy has no decision');
  }
}

/** The tool result for a spec (the world returns it from `fn`). */
export function toolResult(tool: string, spec: ToolSpec): unknown {
  return spec.kind === 'nonjson' ? nonJson(spec)[0]() : { ok: true, tool, ms: spec.elapsedMs };
}

/** Active time left in state `s` for a call that has spent `spent` ms so far; null: no time budget. */
export function activeLeft(c: AgentContext, spent = 0): number | null {
  return c.limits.maxActiveMs === null ? null : c.limits.maxActiveMs - c.activeMs - spent;
}

/**
 * Where the run's active-time deadline cuts a policy call short (the rest of the budget, which the
 * deadline reaches at or before the call would end: a tie goes to the deadline), or null.
 */
export function policyCut(spec: PolicySpec, c: AgentContext, policyElapsedMs = 0): number | null {
  const left = activeLeft(c, policyElapsedMs);
  return left !== null && spec.elapsedMs >= left ? left : null;
}

/** A tool call's deadline: the tool's timeout or, when sooner, the active time left. */
export function toolDeadline(c: AgentContext): { ms: number; budget: boolean } {
  const left = activeLeft(c);
  return left !== null && left < TOOL_TIMEOUT_MS ? { ms: left, budget: true } : { ms: TOOL_TIMEOUT_MS, budget: false };
}

/** Where a tool call is cut by its deadline (a `timeout` tool never answers), or null. */
export function toolCut(spec: ToolSpec, c: AgentContext): number | null {
  const { ms } = toolDeadline(c);
  return spec.kind === 'timeout' || spec.elapsedMs >= ms ? ms : null;
}

function expectedOutcome(tool: string, spec: ToolSpec, at: string, c: AgentContext): ToolOutcome {
  if (toolCut(spec, c) !== null) {
    const { ms, budget } = toolDeadline(c);
    const error = budget
      ? `TimeoutError: tool ${tool} stopped after ${ms} ms: the active-time budget (maxActiveMs) ran out`
      : `TimeoutError: tool ${tool} timed out after ${ms} ms`;
    return { type: 'error', error, elapsedMs: ms, at };
  }
  switch (spec.kind) {
    case 'result':
      return { type: 'result', result: { ok: true, tool, ms: spec.elapsedMs }, elapsedMs: spec.elapsedMs, at };
    case 'throw':
      return { type: 'error', error: 'Error: boom', elapsedMs: spec.elapsedMs, at };
    case 'nonjson':
      return {
        type: 'error',
        error: `TypeError: tool result is not JSON: ${nonJson(spec)[1]}`,
        elapsedMs: spec.elapsedMs,
        at,
      };
    case 'timeout':
      throw new Error('a timeout is always cut by its deadline');
  }
}

/**
 * How far the world moves the clock while performing a move in state `s`: a call cut by its
 * deadline takes until the deadline.
 */
export function advanceOf(move: Move, s: ModelState, policyElapsedMs = 0): number {
  switch (move.kind) {
    case 'policy':
      return policyCut(move.spec, s.context, policyElapsedMs) ?? move.spec.elapsedMs;
    case 'tool':
      return toolCut(move.spec, s.context) ?? move.spec.elapsedMs;
    case 'expire':
    case 'approveLate':
      return TTL_MS;
    default:
      return 0;
  }
}

/** The approver and notes the world uses: they end up in history. */
export const APPROVER = 'alice';
export const APPROVE_NOTE = 'ok';
export const DENIER = 'bob';
export const DENY_NOTE = 'not today';
export const CANCEL_REASON = 'user stop';

/** A snapshot as far as the model needs it. */
export interface ModelState {
  value: unknown;
  context: AgentContext;
}

export type Status = 'idle' | 'running' | 'awaiting_approval' | 'budget_exhausted' | 'done' | 'failed' | 'cancelled';
export const statusOf = (value: unknown): Status => (typeof value === 'string' ? (value as Status) : 'running');
export const isDeciding = (s: ModelState) => JSON.stringify(s.value) === '{"running":"deciding"}';
export const isExecuting = (s: ModelState) => JSON.stringify(s.value) === '{"running":"executing"}';

/**
 * The machine event a move stands for, in state `s` with the clock at `now` (before the move),
 * or null when the move changes nothing the machine sees (a crash that restarts a call).
 * `policyElapsedMs` is clock time already spent on this policy call (retries).
 */
export function modelEvent(move: Move, s: ModelState, now: number, policyElapsedMs = 0): MachineEvent | null {
  const after = now + advanceOf(move, s, policyElapsedMs);
  const c = s.context;
  switch (move.kind) {
    case 'start':
      return { type: 'START', goal: GOAL };
    case 'policy': {
      const cut = policyCut(move.spec, c, policyElapsedMs);
      if (cut !== null) {
        // The deadline aborted the call: an error whose time spends the budget.
        const error = { name: 'TimeoutError', message: 'active-time budget', elapsedMs: policyElapsedMs + cut };
        return { type: 'xstate.error.actor.policy', error };
      }
      const elapsedMs = policyElapsedMs + move.spec.elapsedMs;
      if (move.spec.kind === 'throws') {
        return { type: 'xstate.error.actor.policy', error: { name: 'Error', message: 'policy down', elapsedMs } };
      }
      return { type: 'xstate.done.actor.policy', output: expectedDecision(move.spec, elapsedMs, iso(after)) };
    }
    case 'tool': {
      const tool = c.inflight?.tool ?? '?';
      return { type: 'xstate.done.actor.tool', output: expectedOutcome(tool, move.spec, iso(after), c) };
    }
    case 'crash': {
      // The write-ahead rule: a non-idempotent side effect in flight is not called again.
      const t = c.inflight?.tool;
      if (isExecuting(s) && t !== undefined && isToolName(t) && TOOLS[t].sideEffect && !TOOLS[t].idempotent) {
        return { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: iso(now) } };
      }
      return null;
    }
    case 'approve':
    case 'approveLate':
      return { type: 'APPROVE', callId: c.pending?.id ?? '?', by: APPROVER, note: APPROVE_NOTE, at: iso(after) };
    case 'deny':
      return { type: 'DENY', callId: c.pending?.id ?? '?', by: DENIER, note: DENY_NOTE, at: iso(after) };
    case 'expire':
      return { type: 'EXPIRE', at: iso(after) };
    case 'cancel':
      return { type: 'CANCEL', reason: CANCEL_REASON };
    case 'extend':
      return { type: 'EXTEND_BUDGET', limits: move.limits };
    case 'run': {
      // Agent.run() on a run awaiting approval expires the call if its time is up, else waits.
      if (statusOf(s.value) !== 'awaiting_approval') return { type: 'RUN' };
      const expiresAt = c.pending?.expiresAt;
      return expiresAt && now >= Date.parse(expiresAt) ? { type: 'EXPIRE', at: iso(now) } : null;
    }
    case 'wait':
    case 'decideStale':
    case 'decideNothing':
    case 'startAgain':
      return null;
  }
}

export type { JsonObject };
