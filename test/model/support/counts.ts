/**
 * What the moves of the command sequences did to the steps' calls, the standing approvals and the
 * budgets, read off the model before and after each move: the counts a run prints and writes to
 * docs/testing.md, which show each contract was exercised, not just offered.
 */
import type { AgentContext } from '../../../machines/types.js';
import { isExecuting, type ModelState, type Move, statusOf } from './alphabet.js';
import { runningOf } from './model-events.js';
import { hasVerify } from './tools.js';

/** What the counts read: the model's state after the move, and where they are noted. */
export interface Counted {
  snapshot: { value: unknown; context: AgentContext };
  seen: string[];
}

/**
 * What a move did to the step's calls, read off the model before and after it: the counts that
 * show the new contract was exercised, not just offered.
 */
export function noteCalls(m: Counted, move: Move, was: ModelState): void {
  const c = m.snapshot.context;
  const pendingNow = c.calls.filter((call) => call.state === 'pending');
  const note = (what: string) => m.seen.push(what);
  // A tool with `verify` in flight: asked at the resume, or after its timeout, each answer.
  const inFlight = isExecuting(was) ? runningOf(was.context) : undefined;
  if (inFlight && hasVerify(inFlight.tool)) {
    if (move.kind === 'crash') note(`verify answers ${move.verify ?? 'unknown'} after a crash`);
    if (move.kind === 'tool' && move.spec.kind === 'timeout')
      note(`verify answers ${move.spec.verify ?? 'unknown'} after a timeout`);
  }
  if (move.kind === 'policy' && c.calls.length > 1) note('steps with several calls');
  const covered = move.kind === 'policy' ? c.calls.filter((call) => call.approval?.standing !== undefined) : [];
  if (covered.length > 0) note('calls covered by a standing approval');
  if (covered.some((call) => c.standing[call.tool]?.args !== undefined))
    note('calls covered by a standing approval given with an edit');
  if (covered.some((call, i) => covered.findIndex((other) => other.tool === call.tool) !== i))
    note('steps with several calls of one tool under a standing approval');
  noteGrants(m, was, note);
  if (move.kind === 'decide' || move.kind === 'approve' || move.kind === 'deny' || move.kind === 'approveLate') {
    const decided = was.context.calls.filter(
      (call) => call.state === 'pending' && c.calls.find((n) => n.key === call.key)?.state !== 'pending',
    );
    if (decided.length > 0 && pendingNow.length > 0) note('partial decisions (others left pending)');
    if (move.kind === 'decide' && decided.length > 1) note('decision maps of several calls');
    if (
      c.calls.some(
        (call) =>
          call.approval?.args !== undefined && was.context.calls.find((w) => w.key === call.key)?.state === 'pending',
      )
    )
      note('edited approvals');
  }
  const expiredNow = c.calls.filter(
    (call) => call.done && 'error' in call.done && call.done.error === 'approval expired' && !call.done.approval,
  );
  const expiredBefore = was.context.calls.filter(
    (call) => call.done && 'error' in call.done && call.done.error === 'approval expired' && !call.done.approval,
  );
  if (expiredNow.length > expiredBefore.length && pendingNow.length > 0)
    note('expiries of one call among several pending');
  // A step that ended with one call expired and another decided in time: each its own clock.
  if (was.context.calls.length > 1 && c.calls.length === 0) {
    const added = c.history.slice(was.context.history.length);
    const expired = added.some((e) => 'error' in e && e.error === 'approval expired');
    const inTime = added.some(
      (e) => 'approval' in e && e.approval && !('error' in e && e.error === 'approval expired'),
    );
    if (expired && inTime) note('steps with one call expired, another decided in time');
  }
  if (move.kind === 'crash' && isExecuting(was) && was.context.calls.length > 1)
    note('crashes between the calls of a step');
  noteCost(m, move, was, note);
}

/**
 * Standing approvals given by the move: with an edit (later calls run with their own arguments),
 * and beside another call of the same tool still pending in the step (which still waits: a
 * standing approval covers later steps only).
 */
function noteGrants(m: Counted, was: ModelState, note: (what: string) => void): void {
  const c = m.snapshot.context;
  for (const [tool, grant] of Object.entries(c.standing)) {
    if (was.context.standing[tool]?.callId === grant.callId) continue;
    if (grant.args !== undefined) note('standing approvals given with an edit');
    if (c.calls.some((call) => call.id !== grant.callId && call.tool === tool && call.state === 'pending'))
      note('standing approvals given beside a pending call of the same tool');
  }
}

/** What a move did to the cost budget: stops for cost (spent, or unknown), extensions and lowerings. */
function noteCost(m: Counted, move: Move, was: ModelState, note: (what: string) => void): void {
  const c = m.snapshot.context;
  const stoppedNow = statusOf(m.snapshot.value) === 'budget_exhausted' && c.stoppedBy === 'cost';
  const stoppedBefore = statusOf(was.value) === 'budget_exhausted' && was.context.stoppedBy === 'cost';
  if (stoppedNow && !stoppedBefore) {
    note(c.error?.startsWith('cost unknown: ') ? 'stops for an unknown cost' : 'stops for cost spent');
  }
  if (move.kind === 'extend' && stoppedBefore && move.limits.maxCostUsd !== undefined) {
    note('cost budgets raised after a stop for cost');
  }
  const tokensNow = statusOf(m.snapshot.value) === 'budget_exhausted' && c.stoppedBy === 'tokens';
  const tokensBefore = statusOf(was.value) === 'budget_exhausted' && was.context.stoppedBy === 'tokens';
  if (tokensNow && !tokensBefore && c.error?.startsWith('the next call does not fit')) {
    note('stops for a request the token budget cannot fit');
  }
  if (c.usage.estimatedTokens !== was.context.usage.estimatedTokens) note('calls charged at the estimate');
  if (c.error !== was.context.error && c.error?.includes('it could spend: charged'))
    note('calls charged at what was left');
}
