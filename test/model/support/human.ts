/**
 * The human at the approval inbox: what they decide for a move, worked out from the pending calls
 * as `agent.state.pendingCalls` shows them, and the mistakes a caller can make (a stale or
 * expired call in a decision map, a forbidden edit, an unnamed call among several).
 */
import { callIdOf } from '../../../machines/index.js';
import type { PendingCall } from '../../../src/index.js';
import type { CallDecisionInput, Decisions } from '../../../src/types.js';
import { APPROVE_NOTE, DENY_NOTE, type Mistake, type Move, RUN_ID } from './alphabet.js';
import type { HumanDecision } from './ledger.js';
import { type Chosen, choose, isOpen, legacyTarget } from './model-events.js';
import { type EditRefusal, forbiddenEdit, mayEdit } from './tools.js';

/** A decision as the ledger and the world's step record take it. */
export interface Made {
  chosen: Chosen;
  record: HumanDecision;
}

function made(d: Chosen, call: PendingCall, now: number): Made {
  const record: HumanDecision = {
    callId: call.id,
    key: call.key,
    tool: call.tool,
    args: call.args,
    runArgs: d.args ?? call.args,
    approved: d.approve,
    always: d.always === true,
    at: now,
    expiresAt: call.expiresAt === null ? null : Date.parse(call.expiresAt),
  };
  return { chosen: d, record };
}

/** The seed's form: one call, named by id when several wait (or when the move says so). */
export function seedDecision(
  move: Extract<Move, { kind: 'approve' | 'deny' | 'approveLate' }>,
  pending: PendingCall[],
  now: number,
): { made: Made; callId: string | undefined } {
  const call = legacyTarget(move.pick, pending);
  if (!call) throw new Error('test error: nothing to decide');
  const approve = move.kind !== 'deny';
  const chosen: Chosen = {
    callId: call.id,
    key: call.key,
    tool: call.tool,
    approve,
    note: approve ? APPROVE_NOTE : DENY_NOTE,
  };
  const named = pending.length > 1 || move.pick !== undefined;
  return { made: made(chosen, call, now), callId: named ? call.id : undefined };
}

/** `decide(map)`: the decisions of a `decide` move, and the map that says them. */
export function mapDecision(
  move: Extract<Move, { kind: 'decide' }>,
  pending: PendingCall[],
  now: number,
): { made: Made[]; map: Decisions } {
  const chosen = choose(move.picks, move.reverse, pending, now);
  if (chosen.length === 0) throw new Error('test error: no open call to decide');
  const map: Decisions = {};
  const out: Made[] = [];
  for (const d of chosen) {
    map[d.callId] = d.approve
      ? { approve: true, note: d.note, ...(d.args ? { args: d.args } : {}), ...(d.always ? { always: true } : {}) }
      : { approve: false, note: d.note };
    out.push(made(d, pending.find((p) => p.id === d.callId) as PendingCall, now));
  }
  return { made: out, map };
}

/** An id that names no pending call: the superseded request for a key, or another step's call. */
function staleId(call: PendingCall): string {
  return call.attempt > 1
    ? callIdOf(call.key, call.attempt - 1, call.tool, call.args)
    : callIdOf(`${RUN_ID}:0`, 1, call.tool, call.args);
}

const approve: CallDecisionInput = { approve: true, note: 'yes' };

/**
 * Whether a pending call can carry a `decideEditForbidden` of this kind: one that forbids edits,
 * or a send whose outcome is known (so that the schema or the rule is what refuses the edit).
 */
export const refusesEdit = (call: { tool: string; outcome?: 'unknown' | null }, why: EditRefusal): boolean =>
  why === 'forbidden' ? !mayEdit(call.tool, call.outcome) : call.tool === 'send' && mayEdit(call.tool, call.outcome);

/** What a mistake calls: the seed's form or a map, always with something wrong in it. */
export type MistakeCall = { legacy: [boolean, string, { callId?: string }] } | { map: Decisions };

/**
 * The call a mistake makes, given the pending calls at `now`. A map puts a valid decision first,
 * so that refusing the whole map (not just the bad entry) is what is checked.
 */
export function mistakeCall(move: Mistake, pending: PendingCall[], now: number): MistakeCall {
  const open = pending.filter((p) => isOpen(p, now));
  const valid = (except: string): Decisions => {
    const first = open.find((p) => p.id !== except);
    return first ? { [first.id]: approve } : {};
  };
  switch (move.kind) {
    case 'decideStale': {
      const call = pending[0];
      const stale = call ? staleId(call) : `${RUN_ID}:1#1@0`;
      return move.legacy ? { legacy: [true, 'stale', { callId: stale }] } : { map: { ...valid(''), [stale]: approve } };
    }
    case 'decideExpired': {
      const late = pending.find((p) => !isOpen(p, now));
      if (!late) throw new Error('test error: no expired call');
      return { map: { ...valid(late.id), [late.id]: approve } };
    }
    case 'decideEditForbidden': {
      const why = move.why ?? 'forbidden';
      const call = open.find((p) => refusesEdit(p, why));
      if (!call) throw new Error(`test error: no call whose edit is refused (${why})`);
      const edit: CallDecisionInput = { approve: true, note: 'edited', args: forbiddenEdit(call.tool, why) };
      return { map: { ...valid(call.id), [call.id]: move.always ? { ...edit, always: true } : edit } };
    }
    case 'decideUnnamed':
      return { legacy: [true, 'ok', {}] };
    case 'decideNothing':
      return move.legacy ? { legacy: [true, '', {}] } : { map: { [`${RUN_ID}:1#1@0`]: approve } };
    case 'startAgain':
      throw new Error('test error: startAgain is no decision');
  }
}
