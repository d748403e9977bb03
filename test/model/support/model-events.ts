/**
 * The machine events a move stands for, written out by hand from the contract: the `Decision`
 * the runtime must hand the machine for a policy output, the `ToolOutcome` for a tool's
 * behaviour (deadlines included), the `DECIDE` event for a human's decisions, and the events
 * the runtime sends on its own (a queued call that the spent active-time budget never starts).
 * `applyMove` steps a machine snapshot through them with the pure `transition()`: the model.
 */
import { type AnyMachineSnapshot, transition } from 'xstate';
import type { agentMachine, MachineEvent } from '../../../machines/index.js';
import type {
  AgentContext,
  CallDecision,
  Decision,
  JsonObject,
  StepCall,
  ToolOutcome,
} from '../../../machines/types.js';
import {
  APPROVE_NOTE,
  APPROVER,
  CANCEL_REASON,
  DECIDER,
  DENIER,
  DENY_NOTE,
  GOAL,
  isDeciding,
  isExecuting,
  iso,
  MESSAGE,
  type ModelState,
  type Move,
  malformedOf,
  nonJson,
  type Pick,
  type PolicySpec,
  requestedCalls,
  specCost,
  specUsage,
  statusOf,
  TEXT,
  TOOL_TIMEOUT_MS,
  type ToolSpec,
  TTL_MS,
  usagePresent,
} from './alphabet.js';
import { answerEstimate, chargeOf, noRoomWhy, spentOf, viewOf } from './budget-spec.js';
import { asksAgainAfterCrash, editedArgs, hasVerify, mayEdit, verdictOf, verifiedResult } from './tools.js';

/** Whether a call's approval may still be acted on at `at`: younger than the run's approval TTL (or none needed). */
export function approvalHolds(call: StepCall, c: AgentContext, at: number): boolean {
  return call.approval === null || c.approvalTtlMs === null || at < Date.parse(call.approval.at) + c.approvalTtlMs;
}

/** Active time left in context `c` for a call that has spent `spent` ms so far; null: no time budget. */
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
export function toolDeadline(left: number | null): { ms: number; budget: boolean } {
  return left !== null && left < TOOL_TIMEOUT_MS ? { ms: left, budget: true } : { ms: TOOL_TIMEOUT_MS, budget: false };
}

/** Where a tool call is cut by its deadline (a `timeout` tool never answers), or null. */
export function toolCut(spec: ToolSpec, left: number | null): number | null {
  const { ms } = toolDeadline(left);
  return spec.kind === 'timeout' || spec.elapsedMs >= ms ? ms : null;
}

/** The observation of a tool call: a result, or the exact error the runtime must record. */
export function toolObservation(
  tool: string,
  spec: ToolSpec,
  left: number | null,
): { result: unknown } | { error: string } {
  if (toolCut(spec, left) !== null) {
    const { ms, budget } = toolDeadline(left);
    return {
      error: budget
        ? `TimeoutError: tool ${tool} stopped after ${ms} ms: the active-time budget (maxActiveMs) ran out`
        : `TimeoutError: tool ${tool} timed out after ${ms} ms`,
    };
  }
  switch (spec.kind) {
    case 'result':
      return { result: { ok: true, tool, ms: spec.elapsedMs } };
    case 'throw':
      return { error: 'Error: boom' };
    case 'nonjson':
      return { error: `TypeError: tool result is not JSON: ${nonJson(spec)[1]}` };
    case 'timeout':
      throw new Error('a timeout is always cut by its deadline');
  }
}

/** The observation of a queued call that the spent active-time budget never starts. */
export const notRunError = (tool: string) =>
  `not run: the active-time budget (maxActiveMs) was spent before ${tool} started`;

/** The answer of a spec, as the runtime classifies it (without what it cost). */
export function answerOf(spec: PolicySpec) {
  switch (spec.kind) {
    case 'final':
      return { type: 'final' as const, final: `answer-${spec.variant}` };
    case 'call':
    case 'calls': {
      const calls = requestedCalls(spec).map((c) => ({
        tool: c.tool,
        args: c.args,
        toolCallId: c.id,
        verdict: verdictOf(c.tool, c.args),
      }));
      return { type: 'calls' as const, calls, text: spec.text ? TEXT : null };
    }
    case 'malformed': {
      const [, tool, why] = malformedOf(spec);
      return { type: 'malformed' as const, tool, error: `malformed action: ${why}` };
    }
    case 'throws':
      throw new Error('a throwing policy has no decision');
  }
}

/**
 * The decision the runtime must hand the machine for a spec, answered in context `c`: written
 * out, not computed — charged the usage it reports, or the estimate, within the budget (budget-spec.ts).
 */
function expectedDecision(spec: PolicySpec, elapsedMs: number, at: string, c: AgentContext): Decision {
  const u = specUsage(spec);
  const reported = u && { inputTokens: u.inputTokens, outputTokens: u.outputTokens };
  const answer = answerOf(spec);
  const charged = chargeOf(
    spentOf(c),
    reported,
    usagePresent(spec),
    viewOf(c.history),
    answerEstimate(answer),
    specCost(spec),
  );
  return { ...answer, ...charged, elapsedMs, at } as Decision;
}

/** A pending call as a decision sees it (the machine's, or `agent.state.pendingCalls`). */
export interface PendingView {
  id: string;
  key: string;
  tool: string;
  args: JsonObject;
  attempt: number;
  expiresAt: string | null;
  outcome?: 'unknown' | null;
}

export const pendingOf = (c: AgentContext): StepCall[] => c.calls.filter((call) => call.state === 'pending');
export const runningOf = (c: AgentContext): StepCall | undefined => c.calls.find((call) => call.state === 'running');
export const isOpen = (p: { expiresAt: string | null }, now: number) =>
  p.expiresAt === null || now < Date.parse(p.expiresAt);

/** One decision a human makes, resolved against the pending calls. */
export interface Chosen extends CallDecision {
  key: string;
  tool: string;
}

/**
 * The decisions a `decide` move makes: each pick names an open (unexpired) pending call by
 * position; repeats are dropped, edits kept only where allowed, and the map's order is call
 * order or reversed. The world and the model each resolve the move against their own view.
 */
export function choose(
  picks: readonly Pick[],
  reverse: boolean,
  pending: readonly PendingView[],
  now: number,
): Chosen[] {
  const open = pending.filter((p) => isOpen(p, now));
  const out: Chosen[] = [];
  for (const pick of picks) {
    const call = open[pick.at % Math.max(1, open.length)];
    if (!call || out.some((d) => d.callId === call.id)) continue;
    const note = pick.approve ? APPROVE_NOTE : DENY_NOTE;
    const edit = pick.approve && pick.edit !== undefined && mayEdit(call.tool, call.outcome);
    out.push({
      callId: call.id,
      key: call.key,
      tool: call.tool,
      approve: pick.approve,
      note,
      ...(edit ? { args: editedArgs(call.tool, pick.edit as number) } : {}),
      ...(pick.approve && pick.always ? { always: true } : {}),
    });
  }
  return reverse ? out.reverse() : out;
}

/** The call a seed-form decision (`approve`, `deny`, `approveLate`) names. */
export function legacyTarget<P>(pick: number | undefined, pending: readonly P[]): P | undefined {
  return pending[(pick ?? 0) % Math.max(1, pending.length)];
}

/** The earliest expiry among the pending calls (ms), or null. */
export function earliestExpiry(pending: readonly { expiresAt: string | null }[]): number | null {
  const times = pending.flatMap((p) => (p.expiresAt === null ? [] : [Date.parse(p.expiresAt)]));
  return times.length === 0 ? null : Math.min(...times);
}

/**
 * How far the clock moves while a move is performed in state `s` at `now`: a call cut by its
 * deadline takes until the deadline.
 */
export function advanceOf(move: Move, s: ModelState, now: number, policyElapsedMs = 0): number {
  switch (move.kind) {
    case 'policy':
      return policyCut(move.spec, s.context, policyElapsedMs) ?? move.spec.elapsedMs;
    case 'tool':
      return toolCut(move.spec, activeLeft(s.context)) ?? move.spec.elapsedMs;
    case 'expire': {
      if (!move.first) return TTL_MS;
      const first = earliestExpiry(pendingOf(s.context));
      return first === null ? 0 : Math.max(0, first - now);
    }
    case 'approveLate':
      return TTL_MS;
    case 'crash':
      return move.afterMs ?? 0;
    case 'wait':
      return move.ms;
    default:
      return 0;
  }
}

function seedDecision(move: Extract<Move, { kind: 'approve' | 'deny' | 'approveLate' }>, c: AgentContext, at: number) {
  const call = legacyTarget(move.pick, pendingOf(c));
  const approve = move.kind !== 'deny';
  const decisions: CallDecision[] = [{ callId: call?.id ?? '?', approve, note: approve ? APPROVE_NOTE : DENY_NOTE }];
  return { type: 'DECIDE' as const, decisions, by: approve ? APPROVER : DENIER, at: iso(at) };
}

/**
 * The machine event a move stands for, in state `s` with the clock at `now` (before the move),
 * or null when the move changes nothing the machine sees (a crash that restarts a call).
 * `policyElapsedMs` is clock time already spent on this policy call (retries).
 */
export function modelEvent(move: Move, s: ModelState, now: number, policyElapsedMs = 0): MachineEvent | null {
  const after = now + advanceOf(move, s, now, policyElapsedMs);
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
      return { type: 'xstate.done.actor.policy', output: expectedDecision(move.spec, elapsedMs, iso(after), c) };
    }
    case 'tool': {
      const running = runningOf(c);
      const tool = running?.tool ?? '?';
      const left = activeLeft(c);
      const cut = toolCut(move.spec, left);
      const cost = { elapsedMs: cut ?? move.spec.elapsedMs, at: iso(after) };
      // A side effect that timed out (it may have happened): a tool with `verify` is asked.
      if (cut !== null && running && asksAgainAfterCrash(tool) && hasVerify(tool)) {
        const answer = move.spec.verify ?? 'unknown';
        if (answer === 'done') {
          const output: ToolOutcome = { type: 'result', result: verifiedResult(running.key), verified: true, ...cost };
          return { type: 'xstate.done.actor.tool', output };
        }
        if (answer === 'unknown') {
          const output: ToolOutcome = { type: 'outcome_unknown', at: iso(after), elapsedMs: cost.elapsedMs };
          return { type: 'xstate.done.actor.tool', output };
        }
      }
      const seen = toolObservation(tool, move.spec, left);
      const output: ToolOutcome =
        'error' in seen
          ? { type: 'error', error: seen.error, ...cost }
          : { type: 'result', result: seen.result as never, ...cost };
      return { type: 'xstate.done.actor.tool', output };
    }
    case 'crash': {
      // The write-ahead rule: a non-idempotent side effect in flight is not called again, unless
      // its tool's `verify` says it did not happen (then it runs again under its approval while
      // that is young) or that it did (then its result is recorded).
      const running = runningOf(c);
      if (isExecuting(s) && running && asksAgainAfterCrash(running.tool)) {
        const answer = hasVerify(running.tool) ? (move.verify ?? 'unknown') : 'unknown';
        if (answer === 'done') {
          const output: ToolOutcome = {
            type: 'result',
            result: verifiedResult(running.key),
            verified: true,
            elapsedMs: 0,
            at: iso(after),
          };
          return { type: 'xstate.done.actor.tool', output };
        }
        if (answer === 'notDone') {
          if (approvalHolds(running, c, after)) return null; // called again: still in flight
          return { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: iso(after), notDone: true } };
        }
        return { type: 'xstate.done.actor.tool', output: { type: 'outcome_unknown', at: iso(after) } };
      }
      return null;
    }
    case 'approve':
    case 'deny':
    case 'approveLate':
      return seedDecision(move, c, after);
    case 'decide': {
      const chosen = choose(move.picks, move.reverse, pendingOf(c), now);
      const decisions = chosen.map(({ key: _k, tool: _t, ...d }) => d);
      return { type: 'DECIDE', decisions, by: DECIDER, at: iso(now) };
    }
    case 'expire':
      // run() sends EXPIRE only when some call has expired.
      return pendingOf(c).some((p) => !isOpen(p, after)) ? { type: 'EXPIRE', at: iso(after) } : null;
    case 'cancel':
      return { type: 'CANCEL', reason: CANCEL_REASON };
    case 'send':
      return { type: 'SEND', message: MESSAGE };
    case 'extend':
      return { type: 'EXTEND_BUDGET', limits: move.limits };
    case 'run': {
      // Agent.run() on a run awaiting approval expires the calls whose time is up, else waits.
      if (statusOf(s.value) !== 'awaiting_approval') return { type: 'RUN' };
      return pendingOf(c).some((p) => !isOpen(p, now)) ? { type: 'EXPIRE', at: iso(now) } : null;
    }
    default:
      return null;
  }
}

/**
 * What the runtime does on its own in state `s`: a call that goes in flight with the active-time
 * budget already spent is never started (the tool actor says so at once), or null.
 */
export function followUp(s: ModelState, now: number): MachineEvent | null {
  const running = runningOf(s.context);
  const left = activeLeft(s.context);
  if (!isExecuting(s) || !running || left === null || left > 0) return null;
  return {
    type: 'xstate.done.actor.tool',
    output: { type: 'error', error: notRunError(running.tool), elapsedMs: 0, at: iso(now) },
  };
}

type Machine = typeof agentMachine;
type Snapshot = ReturnType<Machine['getInitialSnapshot']>;

/** Whether a policy call starts between `before` and `after`: deciding entered, or a new step in it. */
function startsCall(before: ModelState, after: ModelState): boolean {
  return isDeciding(after) && (!isDeciding(before) || after.context.steps !== before.context.steps);
}

/** A call that starts and whose estimated request does not fit the token budget: the runtime does not make it. */
function noRoom(s: ModelState, now: number): MachineEvent | null {
  const why = noRoomWhy(spentOf(s.context), viewOf(s.context.history));
  if (why === null) return null;
  return {
    type: 'xstate.done.actor.policy',
    output: { type: 'exhausted', budget: 'tokens', why, usage: null, elapsedMs: 0, at: iso(now) },
  };
}

/**
 * Applies `event` and then whatever the runtime does on its own. `restarts`: the policy call in
 * flight is made again (a resume), so it is held against the budget again.
 */
export function applyEvent<S extends AnyMachineSnapshot = Snapshot>(
  machine: Machine,
  snapshot: S,
  event: MachineEvent | null,
  now: number,
  restarts = false,
): S {
  const step = (from: S, e: MachineEvent) => transition(machine, from as never, e)[0] as unknown as S;
  const model = (x: S) => x as unknown as ModelState;
  let s = event ? step(snapshot, event) : snapshot;
  let fresh = event ? startsCall(model(snapshot), model(s)) : restarts && isDeciding(model(s));
  for (let i = 0; i < 100; i++) {
    const refused = fresh ? noRoom(model(s), now) : null;
    fresh = false;
    if (refused) {
      s = step(s, refused);
      continue;
    }
    const next = followUp(model(s), now);
    if (!next) return s;
    const after = step(s, next);
    fresh = startsCall(model(s), model(after));
    s = after;
  }
  throw new Error('test error: the runtime would not stop on its own');
}

/** The model's step for a move: its event, the runtime's own follow-ups, and the clock. */
export function applyMove<S extends AnyMachineSnapshot = Snapshot>(
  machine: Machine,
  snapshot: S,
  move: Move,
  now: number,
  policyElapsedMs = 0,
): { snapshot: S; now: number } {
  const s = snapshot as unknown as ModelState;
  const after = now + advanceOf(move, s, now, policyElapsedMs);
  const event = modelEvent(move, s, now, policyElapsedMs);
  const restarts = move.kind === 'crash' && isDeciding(s);
  return { snapshot: applyEvent(machine, snapshot, event, after, restarts), now: after };
}
