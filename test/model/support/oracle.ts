/**
 * The spec oracle: what the contract (issues 2 and 12, docs/architecture.md) says must follow a move,
 * from what the world knows (the ledger, its record of the step, the gates, what the human saw),
 * never from the machine. The model is the machine, so a wrong guard or action is in the model
 * too; comparing with the model cannot catch it, the invariants catch only the unsafe ones, and
 * this catches the rest: a run that stops when it should go on, goes on when it should stop, runs
 * the wrong call of a step or with the wrong arguments, asks the wrong question, records the
 * wrong observation.
 */
import { isDeepStrictEqual } from 'node:util';
import type { HistoryEntry, PendingCall } from '../../../machines/types.js';
import {
  CANCEL_REASON,
  GOAL,
  isMistake,
  MESSAGE,
  type Move,
  malformedOf,
  RUN_ID,
  rawAction,
  requestedCalls,
  type Status,
  TEXT,
} from './alphabet.js';
import { noRoomWhy } from './budget-spec.js';
import { expectation } from './spec-step.js';
import type { World } from './world.js';

export interface Before {
  status: Status;
  pendingCalls: PendingCall[];
  gate: { kind: 'policy' | 'tool'; tool: string; key: string; step: number; attempt: number } | null;
  entries: number;
  /** The active time the run had left before the move (less the policy call's time so far). */
  activeLeft: number | null;
}

export function before(world: World): Before {
  const state = world.state();
  const g = world.gate;
  const max = state.limits.maxActiveMs;
  return {
    status: state.status,
    pendingCalls: state.pendingCalls,
    gate: g && { kind: g.kind, tool: g.tool, key: g.key, step: g.step, attempt: g.attempt },
    entries: state.history.length,
    activeLeft: max === null ? null : max - state.activeMs - world.inCallMs,
  };
}

/** The contract for a call cut by the active-time deadline: the run stops for time, records nothing. */
function stoppedForTime(b: Before, world: World, out: string[], what: string): void {
  const state = world.state();
  if (state.status !== 'budget_exhausted' || state.stoppedBy !== 'time' || world.gate !== null)
    out.push(
      `spec: ${what} cut by the active-time deadline stops the run for time (${state.status}, ${state.stoppedBy})`,
    );
  if (state.history.length !== b.entries) out.push(`spec: ${what} cut by the deadline records nothing`);
}

/** The budgets the ledger says are spent. */
function spent(world: World): string[] {
  const d = world.ledger.data;
  const l = d.limits;
  const out: string[] = [];
  if (d.completedSteps.length >= l.maxSteps) out.push('steps');
  // Spent, or too little left for the next call's estimated request and one output token.
  const spentOrFull = { limits: l, tokens: d.tokens, costMicro: d.costMicro };
  if ((l.maxTokens !== null && d.tokens >= l.maxTokens) || noRoomWhy(spentOrFull, world.agent.view()) !== null)
    out.push('tokens');
  if (l.maxCostUsd !== null && d.costMicro >= Math.round(l.maxCostUsd * 1e6)) out.push('cost');
  if (l.maxActiveMs !== null && d.activeMs >= l.maxActiveMs) out.push('time');
  return out;
}

/** Back at a decision: the policy is asked, unless a budget is spent, and then the run says which. */
function decidingNext(world: World, out: string[]): void {
  const budgets = spent(world);
  const state = world.state();
  if (budgets.length > 0) {
    // stoppedBy names a budget that stops the run now, also after a refused run().
    const named = budgets.includes(state.stoppedBy ?? '');
    if (state.status !== 'budget_exhausted' || !named) {
      out.push(`spec: budget ${budgets.join('+')} spent, the run is ${state.status} (stoppedBy ${state.stoppedBy})`);
    }
  } else if (state.status !== 'running' || world.gate?.kind !== 'policy') {
    out.push(
      `spec: budget left, the policy should be asked; the run is ${state.status}, ${world.gate?.kind ?? 'no'} call in flight`,
    );
  }
}

function lastIs(history: HistoryEntry[], expected: Record<string, unknown>, out: string[], why: string): void {
  const last = history.at(-1);
  if (!isDeepStrictEqual(last, expected))
    out.push(`spec: ${why}: last history entry ${JSON.stringify(last)}, expected ${JSON.stringify(expected)}`);
}

function sameStatus(b: Before, world: World, out: string[], why: string): void {
  if (world.status !== b.status) out.push(`spec: ${why} changed the status ${b.status} → ${world.status}`);
}

/** The assistant entry a policy's calls must add (`step` names the keys of unnamed calls). */
function assistantEntry(move: Extract<Move, { kind: 'policy' }>, step: number): Record<string, unknown> {
  const calls = requestedCalls(move.spec);
  const text = move.spec.text ? { text: TEXT } : {};
  const [only] = calls;
  if (calls.length === 1 && only) {
    return {
      role: 'assistant',
      tool: only.tool,
      args: only.args,
      ...(only.id === null ? {} : { id: only.id }),
      ...text,
    };
  }
  const listed = calls.map((c, i) => ({ id: c.id ?? `${RUN_ID}:${step}.${i + 1}`, tool: c.tool, args: c.args }));
  return { role: 'assistant', calls: listed, ...text };
}

/**
 * Where the step stands after a move, against the world's record of it: the call the contract
 * runs next is in flight; or the calls that wait for a human are pending, exactly those, in call
 * order; or the step ended, its tool entries are the last in the history, in call order, and
 * the policy is asked next (unless a budget is spent).
 */
function checkStep(world: World, out: string[]): void {
  const d = world.ledger.data;
  const state = world.state();
  const finished = d.finished;
  d.finished = null;
  if (finished) {
    const tail = state.history.slice(state.history.length - finished.entries.length);
    for (const [i, expected] of finished.entries.entries()) {
      const actual = tail[i] as Record<string, unknown> | undefined;
      const approval = expected.approval as { callId: string | null } | undefined;
      const own = (actual?.approval as { callId?: unknown } | undefined)?.callId;
      // A call run under a standing approval carries its own id, which only the runtime names.
      const want =
        approval && approval.callId === null && typeof own === 'string'
          ? { ...expected, approval: { ...approval, callId: own } }
          : expected;
      if (!isDeepStrictEqual(actual, want))
        out.push(
          `spec: step ${finished.step}, call ${i + 1}: tool entry ${JSON.stringify(actual)}, expected ${JSON.stringify(want)}`,
        );
    }
    // The assistant entry before them still holds the model's own calls: an edit changes only
    // what ran (the approval's `args`), never what the model said.
    const said = state.history[state.history.length - finished.entries.length - 1] as Record<string, unknown>;
    const calls = Array.isArray(said?.calls)
      ? said.calls
      : [{ id: said?.id ?? finished.asked[0]?.id, tool: said?.tool, args: said?.args }];
    if (!isDeepStrictEqual(calls, finished.asked))
      out.push(
        `spec: step ${finished.step}'s calls are recorded as ${JSON.stringify(said)}, the model asked for ${JSON.stringify(finished.asked)}`,
      );
    if (!finished.cancelled) decidingNext(world, out);
  }
  // The seed's `state.pending` stays: the oldest undecided call, or null.
  if (!isDeepStrictEqual(state.pending, state.pendingCalls[0] ?? null))
    out.push(`spec: state.pending ${JSON.stringify(state.pending)} is not the first of state.pendingCalls`);
  const next = expectation(d);
  if (next.kind === 'run') {
    const g = world.gate;
    if (state.status !== 'running' || g?.kind !== 'tool' || g.key !== next.call.key || g.tool !== next.call.tool)
      out.push(
        `spec: ${next.call.tool} key ${next.call.key} should be in flight; the run is ${state.status}, ${g ? `${g.kind} ${g.tool} ${g.key}` : 'nothing'} in flight`,
      );
  } else if (next.kind === 'await') {
    const expected = next.waiting.map((c) => ({
      key: c.key,
      tool: c.tool,
      args: c.args,
      attempt: c.attempt,
      expiresAt: d.ttlMs === null ? null : new Date((c.requestedAt as number) + d.ttlMs).toISOString(),
      ...(c.unknown ? { outcome: 'unknown' } : {}),
    }));
    const actual = state.pendingCalls.map(({ key, tool, args, attempt, expiresAt, outcome }) => ({
      key,
      tool,
      args,
      attempt,
      expiresAt,
      ...(outcome ? { outcome } : {}),
    }));
    if (state.status !== 'awaiting_approval' || world.gate !== null || !isDeepStrictEqual(actual, expected))
      out.push(
        `spec: the run should await ${JSON.stringify(expected)}; it is ${state.status} with ${JSON.stringify(actual)} pending`,
      );
  }
}

export function checkMove(move: Move, b: Before, world: World): string[] {
  const out: string[] = [];
  const state = world.state();
  const h = state.history;
  if (isMistake(move)) {
    sameStatus(b, world, out, move.kind);
    if (h.length !== b.entries || !isDeepStrictEqual(state.pendingCalls, b.pendingCalls))
      out.push(`spec: a refused ${move.kind} changed the run`);
    return out;
  }
  switch (move.kind) {
    case 'start':
      lastIs(h, { role: 'user', content: GOAL }, out, 'start records the goal');
      decidingNext(world, out);
      break;
    case 'policy': {
      const { spec } = move;
      const attempt = b.gate?.attempt ?? 0;
      const left = b.activeLeft;
      const retry = spec.kind === 'throws' && attempt < world.options.policyRetries;
      const backoff = world.options.retryDelayMs * 2 ** attempt;
      if (left !== null && (spec.elapsedMs >= left || (retry && spec.elapsedMs + backoff >= left))) {
        stoppedForTime(b, world, out, 'a policy call');
        break;
      }
      if (spec.kind === 'throws') {
        if (retry) {
          if (world.gate?.kind !== 'policy' || world.gate.attempt !== attempt + 1)
            out.push('spec: a throwing policy is retried');
        } else if (state.status !== 'failed' || state.error !== 'Error: policy down') {
          out.push(`spec: a policy that keeps throwing fails the run with its error (${state.status}, ${state.error})`);
        }
      } else if (spec.kind === 'final') {
        const { final } = rawAction(spec) as { final: unknown };
        if (state.status !== 'done' || !isDeepStrictEqual(state.answer, final))
          out.push(`spec: a final answer ends the run (${state.status})`);
        lastIs(h, { role: 'assistant', final }, out, 'the answer is recorded');
      } else if (spec.kind === 'malformed') {
        const [, tool, why] = malformedOf(spec);
        lastIs(
          h,
          { role: 'tool', tool, error: `malformed action: ${why}` },
          out,
          'a malformed action is an observation',
        );
        decidingNext(world, out);
      } else {
        const entry = assistantEntry(move, b.gate?.step ?? 0);
        if (!isDeepStrictEqual(h[b.entries], entry))
          out.push(`spec: the calls are recorded as ${JSON.stringify(entry)}, not ${JSON.stringify(h[b.entries])}`);
        checkStep(world, out);
      }
      break;
    }
    case 'tool':
    case 'approve':
    case 'deny':
    case 'approveLate':
    case 'decide':
    case 'expire':
      checkStep(world, out);
      break;
    case 'run':
      if (b.status === 'budget_exhausted' || b.status === 'failed') decidingNext(world, out);
      else if (b.status === 'awaiting_approval') checkStep(world, out);
      else sameStatus(b, world, out, 'run()');
      break;
    case 'send':
      lastIs(h, { role: 'user', content: MESSAGE }, out, 'send records the message');
      decidingNext(world, out);
      break;
    case 'cancel':
      if (state.status !== 'cancelled' || state.cancelReason !== CANCEL_REASON)
        out.push(`spec: cancel ends the run (${state.status}, ${state.cancelReason})`);
      checkStep(world, out);
      break;
    case 'extend':
      if (!isDeepStrictEqual(state.limits, world.ledger.data.limits))
        out.push(`spec: limits ${JSON.stringify(state.limits)} after extendBudget`);
      sameStatus(b, world, out, 'extendBudget');
      break;
    case 'crash': {
      if (b.gate?.kind === 'policy' && spent(world).length > 0) {
        // Resumed mid policy call with limits the run has reached: it stops, asks nothing.
        if (state.status !== 'budget_exhausted' || world.gate !== null)
          out.push(`spec: resumed with its budget spent, the run is ${state.status}`);
      } else if (b.gate?.kind === 'policy') {
        if (world.gate?.kind !== 'policy') out.push('spec: the policy call in flight at a crash is made again');
      } else if (b.gate?.kind === 'tool') {
        checkStep(world, out);
      } else {
        sameStatus(b, world, out, 'a crash');
      }
      if (!isDeepStrictEqual(state.limits, world.ledger.data.limits))
        out.push(`spec: limits ${JSON.stringify(state.limits)} after resume`);
      break;
    }
    default:
      sameStatus(b, world, out, move.kind);
  }
  return out;
}
