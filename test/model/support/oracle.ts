/**
 * The spec oracle: what the contract (issue 2, ARCHITECTURE.md) says must follow a move, from
 * what the world knows (the ledger, the gates, what the human saw), never from the machine.
 * The model is the machine, so a wrong guard or action is in the model too; comparing with the
 * model cannot catch it, the invariants catch only the unsafe ones, and this catches the rest:
 * a run that stops when it should go on, goes on when it should stop, asks the wrong question.
 */
import { isDeepStrictEqual } from 'node:util';
import type { HistoryEntry, PendingCall } from '../../../machines/types.js';
import {
  CANCEL_REASON,
  DENY_NOTE,
  isToolName,
  type Move,
  RUN_ID,
  rawAction,
  type Status,
  TOOL_TIMEOUT_MS,
  TOOLS,
} from './alphabet.js';
import type { World } from './world.js';

export interface Before {
  status: Status;
  pending: PendingCall | null;
  gate: { kind: 'policy' | 'tool'; tool: string; key: string; step: number; attempt: number } | null;
  inflight: { key: string; tool: string } | null;
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
    pending: state.pending,
    gate: g && { kind: g.kind, tool: g.tool, key: g.key, step: g.step, attempt: g.attempt },
    inflight: state.inflight && { key: state.inflight.key, tool: state.inflight.tool },
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
  if (l.maxTokens !== null && d.tokens >= l.maxTokens) out.push('tokens');
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

function lastIs(history: HistoryEntry[], expected: Partial<Record<string, unknown>>, out: string[], why: string): void {
  const last = history.at(-1) as Record<string, unknown> | undefined;
  const ok =
    last !== undefined &&
    Object.entries(expected).every(([k, v]) =>
      v instanceof RegExp ? v.test(String(last[k])) : isDeepStrictEqual(last[k], v),
    );
  if (!ok) out.push(`spec: ${why}: last history entry ${JSON.stringify(last)}`);
}

function sameStatus(b: Before, world: World, out: string[], why: string): void {
  if (world.status !== b.status) out.push(`spec: ${why} changed the status ${b.status} → ${world.status}`);
}

/** The approval decided by the last decide(), as the ledger has it. */
function lastDecisionInTime(world: World, pending: PendingCall): boolean {
  const d = world.ledger.data.decisions[pending.id];
  return d !== undefined && (d.expiresAt === null || d.at < d.expiresAt);
}

export function checkMove(move: Move, b: Before, world: World): string[] {
  const out: string[] = [];
  const state = world.state();
  const h = state.history;
  switch (move.kind) {
    case 'start':
      lastIs(h, { role: 'user' }, out, 'start records the goal');
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
        break;
      }
      const raw = rawAction(spec) as { tool?: string; args?: unknown; final?: unknown };
      if (spec.kind === 'final') {
        if (state.status !== 'done' || !isDeepStrictEqual(state.answer, raw.final))
          out.push(`spec: a final answer ends the run (${state.status})`);
        lastIs(h, { role: 'assistant', final: raw.final }, out, 'the answer is recorded');
      } else if (spec.kind === 'lookup') {
        if (world.gate?.kind !== 'tool' || world.gate.tool !== 'lookup')
          out.push('spec: a pure tool call runs without approval');
        lastIs(h, { role: 'assistant', tool: 'lookup', args: raw.args }, out, 'the call is recorded');
      } else if (spec.kind === 'send' || spec.kind === 'charge') {
        const p = state.pending;
        if (
          state.status !== 'awaiting_approval' ||
          p?.tool !== spec.kind ||
          !isDeepStrictEqual(p.args, raw.args) ||
          p.key !== `${RUN_ID}:${b.gate?.step}`
        ) {
          out.push(`spec: a side-effecting call waits for a human (${state.status}, pending ${JSON.stringify(p)})`);
        }
      } else if (spec.kind === 'unknown') {
        lastIs(
          h,
          { role: 'tool', tool: 'teleport', error: 'unknown tool teleport' },
          out,
          'an unknown tool is an observation',
        );
        decidingNext(world, out);
      } else {
        lastIs(h, { role: 'tool', error: /^malformed action: / }, out, 'a malformed action is an observation');
        decidingNext(world, out);
      }
      break;
    }
    case 'tool': {
      const tool = b.gate?.tool ?? '';
      // A tool's deadline: its timeout, or the active time left when that is sooner.
      const budgetFirst = b.activeLeft !== null && b.activeLeft < TOOL_TIMEOUT_MS;
      const deadline = budgetFirst ? (b.activeLeft as number) : TOOL_TIMEOUT_MS;
      const cut = move.spec.kind === 'timeout' || move.spec.elapsedMs >= deadline;
      const expected = cut
        ? {
            role: 'tool',
            tool,
            error: budgetFirst ? /^TimeoutError: .*active-time budget/ : /^TimeoutError: .*timed out/,
          }
        : move.spec.kind === 'result'
          ? { role: 'tool', tool, result: { ok: true, tool, ms: move.spec.elapsedMs } }
          : { role: 'tool', tool, error: /: / };
      lastIs(h, expected, out, `a tool's ${move.spec.kind} is an observation`);
      decidingNext(world, out);
      break;
    }
    case 'approve':
    case 'approveLate':
    case 'deny':
    case 'expire':
    case 'run': {
      if (move.kind === 'run' && b.status !== 'awaiting_approval') {
        if (b.status === 'budget_exhausted' || b.status === 'failed') decidingNext(world, out);
        else sameStatus(b, world, out, 'run()');
        break;
      }
      const p = b.pending;
      if (!p) break;
      const decided = move.kind === 'approve' || move.kind === 'approveLate' || move.kind === 'deny';
      const expired = decided
        ? !lastDecisionInTime(world, p)
        : p.expiresAt !== null && world.clock.now() >= Date.parse(p.expiresAt);
      if (!decided && !expired) {
        sameStatus(b, world, out, 'run() before the approval expires');
      } else if (expired) {
        lastIs(
          h,
          { role: 'tool', tool: p.tool, error: 'approval expired' },
          out,
          'an expired approval is an observation',
        );
        if (world.gate?.kind === 'tool') out.push('spec: an expired approval runs nothing');
        decidingNext(world, out);
      } else if (move.kind === 'deny') {
        lastIs(
          h,
          { role: 'tool', tool: p.tool, error: `denied by human: ${DENY_NOTE}` },
          out,
          'a denial is an observation',
        );
        decidingNext(world, out);
      } else if (world.gate?.kind !== 'tool' || world.gate.tool !== p.tool || world.gate.key !== p.key) {
        out.push(`spec: an approved call runs (${state.status}, ${world.gate?.kind ?? 'no'} call in flight)`);
      }
      break;
    }
    case 'cancel':
      if (state.status !== 'cancelled' || state.cancelReason !== CANCEL_REASON)
        out.push(`spec: cancel ends the run (${state.status}, ${state.cancelReason})`);
      break;
    case 'extend':
      if (!isDeepStrictEqual(state.limits, world.ledger.data.limits))
        out.push(`spec: limits ${JSON.stringify(state.limits)} after extendBudget`);
      sameStatus(b, world, out, 'extendBudget');
      break;
    case 'crash': {
      const t = b.inflight?.tool ?? '';
      if (b.inflight && isToolName(t) && TOOLS[t].sideEffect && !TOOLS[t].idempotent) {
        const p = state.pending;
        if (state.status !== 'awaiting_approval' || p?.key !== b.inflight.key || p.outcome !== 'unknown') {
          out.push(`spec: a side effect in flight at a crash goes back to a human, outcome unknown (${state.status})`);
        }
      } else if (b.gate?.kind === 'policy' && spent(world).length > 0) {
        // Resumed mid policy call with limits the run has reached: it stops, asks nothing.
        if (state.status !== 'budget_exhausted' || world.gate !== null)
          out.push(`spec: resumed with its budget spent, the run is ${state.status}`);
      } else {
        sameStatus(b, world, out, 'a crash');
        if (b.gate && world.gate?.kind !== b.gate.kind)
          out.push(`spec: the ${b.gate.kind} call in flight at a crash is made again`);
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
