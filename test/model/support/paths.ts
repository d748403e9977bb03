/**
 * Paths of the real agent machine (@xstate/graph 3): shortest and simple paths from `idle`, over
 * a bounded alphabet of moves. Each move becomes synthetic actor events (policy decisions, tool
 * outcomes, the runtime's own `not run`) or user events (`DECIDE`, `EXPIRE`, …), applied with the
 * pure `transition()`. `createTestModel` refuses machines that invoke actors, so the path
 * functions are used directly, on the machine wrapped with the test clock: a state is the
 * machine's snapshot and the clock, so that every decision and expiry has its exact time.
 */
import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { initialTransition } from 'xstate';
import { agentMachine } from '../../../machines/index.js';
import type { AgentInput, Limits } from '../../../machines/types.js';
import { type Move, RUN_ID, T0, TTL_MS } from './alphabet.js';
import { noRoomWhy, spentOf, viewOf } from './budget-spec.js';
import { applyMove, isOpen, modelEvent, pendingOf } from './model-events.js';
import {
  type Alphabet,
  eventsFor,
  FULL_ALPHABET,
  type PathEvent,
  type PathState,
  type PathStep,
  SIMPLE_ALPHABET,
  turnsOf,
  view,
} from './path-alphabet.js';

export type { PathStep };

/** Small limits keep the graph finite and small; each budget can be hit in one or two steps. */
export const PATH_LIMITS: Limits = { maxSteps: 2, maxTokens: 100, maxActiveMs: 100, maxCostUsd: 0.01 };
export const PATH_INPUT: AgentInput = { runId: RUN_ID, limits: PATH_LIMITS, approvalTtlMs: TTL_MS };

export interface MachinePath {
  /** `shortest` or `simple`, and the index within that set. */
  id: string;
  moves: Move[];
  /** The machine's state and the clock after each move. */
  states: PathStep[];
}

type Machine = typeof agentMachine;

/** The machine with the test clock, as actor logic for @xstate/graph. */
function clockedLogic(machine: Machine) {
  return {
    transition: (s: PathState, e: PathEvent): PathState => applyMove(machine, s.snapshot, e.move, s.now),
    getInitialSnapshot: (): PathState => ({ snapshot: initialTransition(machine, PATH_INPUT)[0], now: T0 }),
  };
}

/**
 * Replays moves on the machine with the pure `transition()`: the concrete state after each move.
 * (Graph steps are keyed by the control state, so a step's stored snapshot may come from another
 * run with the same control state; the states are rebuilt here from the path's own moves.)
 */
export function replay(machine: Machine, moves: Move[]): PathStep[] {
  const logic = clockedLogic(machine);
  let s = logic.getInitialSnapshot();
  const states: PathStep[] = [];
  for (const move of moves) {
    if (!modelEvent(move, view(s), s.now)) throw new Error(`path move ${JSON.stringify(move)} has no machine event`);
    const next = logic.transition(s, { type: move.kind, move });
    if (next.snapshot === s.snapshot) throw new Error(`path move ${JSON.stringify(move)} changes nothing`);
    s = next;
    states.push({ ...view(s), now: s.now });
  }
  return states;
}

function toPaths(machine: Machine, kind: string, paths: { steps: { event: unknown }[] }[]): MachinePath[] {
  return paths
    .map((p, i) => {
      // steps[0] holds the initial state; each event carries the move that stands for it.
      const moves = p.steps.flatMap((step) =>
        'move' in (step.event as object) ? [(step.event as PathEvent).move] : [],
      );
      return { id: `${kind}#${i}`, moves, states: replay(machine, moves) };
    })
    .filter((p) => p.moves.length > 0);
}

const options = (alphabet: Alphabet, key: (s: PathState, e?: PathEvent) => string) => ({
  events: (s: PathState) => eventsFor(s, alphabet),
  serializeState: (s: PathState, e?: PathEvent) => key(s, e),
});

/** Shortest paths to every (control state, last observation): so every kind of edge is taken. */
export function shortestPaths(machine: Machine = agentMachine, alphabet: Alphabet = FULL_ALPHABET): MachinePath[] {
  return toPaths(
    machine,
    'shortest',
    getShortestPaths(clockedLogic(machine) as never, options(alphabet, observedKey) as never),
  );
}

/** Simple paths between control states: every order in which the run can visit them. */
export function simplePaths(machine: Machine = agentMachine, alphabet: Alphabet = SIMPLE_ALPHABET): MachinePath[] {
  return toPaths(
    machine,
    'simple',
    getSimplePaths(clockedLogic(machine) as never, options(alphabet, controlKey) as never),
  );
}

/**
 * Paths that are a prefix of another path need no run of their own: the longer run is checked
 * after every step, so it checks the prefix too.
 */
export function maximalPaths(paths: MachinePath[]): MachinePath[] {
  const keyed = paths.map((p) => ({ p, key: p.moves.map((m) => JSON.stringify(m)).join('\n') }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed
    .filter((k, i) => !(keyed[i + 1]?.key.startsWith(`${k.key}\n`) ?? false) && keyed[i + 1]?.key !== k.key)
    .map((k) => k.p);
}

/**
 * The part of a state the machine's guards can see: status, counters against limits, each call of
 * the step (tool, where it stands, attempt, outcome, its approval's kind, whether it has expired),
 * the standing approvals. History and times are left out, so paths that differ only in what was
 * said or when meet.
 */
export function controlKey(s: PathState): string {
  const c = s.snapshot.context;
  const tokens = c.usage.inputTokens + c.usage.outputTokens;
  const turns = turnsOf(c);
  // A cancelled run can do nothing more, nor can one that answered in its last turn (one new
  // message a path): how it got there is in the last observation.
  if (s.snapshot.value === 'cancelled') return JSON.stringify({ v: s.snapshot.value });
  if (s.snapshot.value === 'done' && turns >= 2) return JSON.stringify({ v: s.snapshot.value, turns });
  return JSON.stringify({
    v: s.snapshot.value,
    turns,
    steps: c.steps,
    max: c.limits.maxSteps,
    tokensOut: c.limits.maxTokens !== null && tokens >= c.limits.maxTokens,
    // Whether the next policy call's estimated request fits what the token budget leaves.
    tokensFull: noRoomWhy(spentOf(c), viewOf(c.history)) !== null,
    costOut: c.limits.maxCostUsd !== null && c.usage.costUsd >= c.limits.maxCostUsd,
    timeOut: c.limits.maxActiveMs !== null && c.activeMs >= c.limits.maxActiveMs,
    calls: c.calls.map((call) => [
      call.tool,
      call.state,
      call.attempt,
      call.outcome,
      call.approval && [call.approval.approved, call.approval.args !== undefined, call.approval.standing !== undefined],
      isOpen(call, s.now),
    ]),
    expiries: new Set(pendingOf(c).map((p) => p.expiresAt)).size,
    standing: Object.keys(c.standing).length,
    stoppedBy: c.stoppedBy,
    failed: c.error !== null,
  });
}

/**
 * A human's decision or an expiry: the kind of move is part of the vertex it leads to, so that
 * every kind is taken even where two kinds happen to lead to the same state (as a fault that
 * drops an edit, or expires every call at once, would make them).
 */
const decisionKind = (e?: PathEvent): string => {
  const m = e?.move;
  if (!m) return '';
  if (m.kind === 'decide') return `decide:${m.name}`;
  return m.kind === 'approve' || m.kind === 'deny' || m.kind === 'approveLate' || m.kind === 'expire'
    ? `${m.kind}${m.kind === 'expire' && m.first ? '(first)' : ''}`
    : '';
};

/** The control state plus what the model saw last (its shape, not its timestamps) and how it got there. */
export function observedKey(s: PathState, e?: PathEvent): string {
  const last = s.snapshot.context.history.at(-1);
  const seen = last && {
    role: last.role,
    tool: 'tool' in last ? last.tool : null,
    calls: 'calls' in last ? last.calls.length : null,
    error: 'error' in last ? last.error.replace(/\d+/g, 'N') : null,
    approval: 'approval' in last && last.approval ? last.approval.approved : null,
  };
  return `${controlKey(s)}|${JSON.stringify(seen ?? null)}|${decisionKind(e)}`;
}
