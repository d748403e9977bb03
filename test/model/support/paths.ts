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
import {
  type CallSpec,
  isDeciding,
  isExecuting,
  type ModelState,
  type Move,
  type PolicySpec,
  RUN_ID,
  type Status,
  statusOf,
  T0,
  type ToolSpec,
  TTL_MS,
} from './alphabet.js';
import {
  activeLeft,
  applyMove,
  earliestExpiry,
  isOpen,
  modelEvent,
  pendingOf,
  runningOf,
  toolDeadline,
} from './model-events.js';
import { asksAgainAfterCrash, type CallTool, mayEdit } from './tools.js';

/** Small limits keep the graph finite and small; each budget can be hit in one or two steps. */
export const PATH_LIMITS: Limits = { maxSteps: 2, maxTokens: 100, maxActiveMs: 100 };
/** EXTEND_BUDGET is offered while maxSteps is below this: one extension per path. */
const MAX_STEPS_CAP = 3;
export const PATH_INPUT: AgentInput = { runId: RUN_ID, limits: PATH_LIMITS, approvalTtlMs: TTL_MS };
/** How long a call is in flight before the process dies, in a `crash(after)` move. */
const CRASH_AFTER_MS = 10;

const c = (tool: CallTool, variant = 0, id = false): CallSpec => ({ tool, variant, id });
const policy = (
  kind: PolicySpec['kind'],
  elapsedMs: number,
  tokens: [number, number] | null,
  calls: CallSpec[] = [],
  text = false,
): Move => ({
  kind: 'policy',
  spec: {
    kind,
    calls,
    text,
    elapsedMs,
    variant: 0,
    usage: tokens && { inputTokens: tokens[0], outputTokens: tokens[1] },
  },
});
const tool = (kind: ToolSpec['kind']): Move => ({ kind: 'tool', spec: { kind, elapsedMs: 2 } });

/**
 * One decision of each kind. `unknown` costs all but 1 ms of the time budget (the next call is
 * cut by the active-time deadline), `malformed` the tokens; `chain` leaves 40 ms, so a timeout on
 * its first call spends the rest and its other calls are never started.
 */
const POLICY_MOVES = {
  final: policy('final', 1, [2, 1]),
  lookup: policy('call', 1, [3, 2], [c('lookup')]),
  send: policy('call', 1, [3, 2], [c('send', 0, true)], true),
  charge: policy('call', 1, [3, 2], [c('charge')]),
  unknown: policy('call', 99, [3, 2], [c('unknown')]),
  /** wipe of scope `tmp`: a side effect that needs nobody (a crash mid-call asks a human). */
  wipeFree: policy('calls', 1, [3, 2], [c('wipe', 1)]),
  /** wipe of scope `all`: the approval rule denies it. */
  wipeDenied: policy('call', 1, [3, 2], [c('wipe', 2)]),
  malformed: policy('malformed', 1, [60, 40]),
  // Costs no time: failed → RUN → deciding returns to the same state, so the loop is finite.
  throws: policy('throws', 0, null),
  /** A pure call, an approval, a rule's denial and an unknown tool in one step, with text. */
  mixed: policy('calls', 1, [3, 2], [c('lookup'), c('send', 0, true), c('wipe', 2), c('unknown')], true),
  /** Two calls that need approval, named by the model. */
  pair: policy('calls', 1, [3, 2], [c('send', 1, true), c('charge', 1, true)]),
  /** Three calls that need nobody: pure, a side effect, pure. */
  chain: policy('calls', 60, [3, 2], [c('lookup', 1), c('wipe', 1), c('lookup', 2)]),
};
const TOOL_MOVES = { result: tool('result'), throw: tool('throw'), timeout: tool('timeout') };

/** Decisions on the open pending calls, by name; each needs that many open calls. */
type DecisionKind =
  | 'approve'
  | 'deny'
  | 'expire'
  | 'approveLate'
  | 'expireFirst'
  | 'all'
  | 'last'
  | 'split'
  | 'edit'
  | 'always';

function decisionMoves(kind: DecisionKind, s: ModelState, now: number): Move[] {
  const pending = pendingOf(s.context);
  const open = pending.filter((p) => isOpen(p, now));
  const n = open.length;
  const decide = (name: string, picks: Extract<Move, { kind: 'decide' }>['picks'], reverse = false): Move[] => [
    { kind: 'decide', name, picks, reverse },
  ];
  switch (kind) {
    case 'approve':
    case 'deny':
    case 'approveLate':
      return [{ kind }];
    case 'expire':
      return [{ kind: 'expire' }];
    case 'expireFirst': {
      const first = earliestExpiry(pending);
      const last = Math.max(...pending.map((p) => (p.expiresAt === null ? 0 : Date.parse(p.expiresAt))));
      return first !== null && first < last ? [{ kind: 'expire', first: true }] : [];
    }
    case 'all':
      return n > 1
        ? decide(
            'all',
            open.map((_, at) => ({ at, approve: true })),
            true,
          )
        : [];
    case 'last':
      return n > 1 ? decide('last', [{ at: n - 1, approve: true }]) : [];
    case 'split':
      return n > 1
        ? decide(
            'split',
            [
              { at: 0, approve: false },
              { at: n - 1, approve: true },
            ],
            true,
          )
        : [];
    case 'edit':
      return n > 0 && mayEdit(open[0]?.tool ?? '', open[0]?.outcome)
        ? decide('edit', [{ at: 0, approve: true, edit: 1 }])
        : [];
    case 'always':
      // One standing approval per path: the graph stays small, the grant's effect is the same.
      return n > 0 && Object.keys(s.context.standing).length === 0
        ? decide('always', [{ at: 0, approve: true, always: true }])
        : [];
  }
}

/** Which moves a path set offers. */
export interface Alphabet {
  policy: (keyof typeof POLICY_MOVES)[];
  tool: (keyof typeof TOOL_MOVES)[];
  approval: DecisionKind[];
  /** Crash with a side effect in flight: at once, and after time passed in the call. */
  crash: ('now' | 'after')[];
  /** Offer CANCEL in these statuses. */
  cancelIn: Status[];
}

/** Everything: for the shortest paths (one per control state and last observation). */
export const FULL_ALPHABET: Alphabet = {
  policy: Object.keys(POLICY_MOVES) as (keyof typeof POLICY_MOVES)[],
  tool: ['result', 'throw', 'timeout'],
  approval: ['approve', 'deny', 'expire', 'approveLate', 'expireFirst', 'all', 'last', 'split', 'edit', 'always'],
  crash: ['now', 'after'],
  cancelIn: ['running', 'awaiting_approval', 'budget_exhausted', 'failed'],
};

/**
 * A smaller alphabet for simple paths, whose number grows fast with every extra move (each
 * letter dropped here is taken by the shortest paths and the command sequences: a denial, a
 * crash or a failing tool here would multiply the simple paths by five to ten).
 */
export const SIMPLE_ALPHABET: Alphabet = {
  policy: ['final', 'lookup', 'send', 'pair', 'malformed', 'throws'],
  tool: ['result'],
  approval: ['approve', 'last'],
  crash: [],
  cancelIn: ['awaiting_approval'],
};

/** A state of the path graph: the machine's snapshot and the test clock. */
export interface PathState {
  snapshot: ReturnType<typeof initialTransition<typeof agentMachine>>[0];
  now: number;
}

/** A state of a path as the drivers compare it: value, context and clock. */
export type PathStep = ModelState & { now: number };

const view = (s: PathState): ModelState => ({ value: s.snapshot.value, context: s.snapshot.context });

/** The moves offered in a state. */
export function movesFor(s: PathState, alphabet: Alphabet = FULL_ALPHABET): Move[] {
  const m = view(s);
  const status = statusOf(m.value);
  const c = m.context;
  const cancel: Move[] = alphabet.cancelIn.includes(status) ? [{ kind: 'cancel' }] : [];
  switch (status) {
    case 'idle':
      return [{ kind: 'start' }];
    case 'running': {
      if (isDeciding(m)) return [...alphabet.policy.map((k) => POLICY_MOVES[k]), ...cancel];
      if (!isExecuting(m)) return [];
      const running = runningOf(c);
      // Once per call: a crash asks again with a new attempt, and attempts must not grow forever.
      const unsafe = running !== undefined && asksAgainAfterCrash(running.tool) && running.attempt === 1;
      const roomy = CRASH_AFTER_MS < toolDeadline(activeLeft(c)).ms;
      const crash: Move[] = unsafe
        ? alphabet.crash.flatMap((k): Move[] =>
            k === 'now' ? [{ kind: 'crash' }] : roomy ? [{ kind: 'crash', afterMs: CRASH_AFTER_MS }] : [],
          )
        : [];
      return [...alphabet.tool.map((k) => TOOL_MOVES[k]), ...crash, ...cancel];
    }
    case 'awaiting_approval':
      return [...alphabet.approval.flatMap((k) => decisionMoves(k, m, s.now)), ...cancel];
    case 'budget_exhausted': {
      const l = c.limits;
      const extend: Move[] =
        l.maxSteps < MAX_STEPS_CAP
          ? [
              {
                kind: 'extend',
                limits: {
                  maxSteps: l.maxSteps + 1,
                  maxTokens: (l.maxTokens ?? 0) + 100,
                  maxActiveMs: (l.maxActiveMs ?? 0) + 100,
                },
              },
            ]
          : [];
      return [...extend, { kind: 'run' }, ...cancel];
    }
    case 'failed':
      return [{ kind: 'run' }, ...cancel];
    default:
      return [];
  }
}

/** A path event: the move, named by its machine event's type. */
export type PathEvent = { type: string; move: Move };

export function eventsFor(s: PathState, alphabet: Alphabet = FULL_ALPHABET): PathEvent[] {
  const out: PathEvent[] = [];
  for (const move of movesFor(s, alphabet)) {
    const event = modelEvent(move, view(s), s.now);
    if (event) out.push({ type: `${event.type} ${JSON.stringify(move)}`, move });
  }
  return out;
}

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
  // A run that has ended can do nothing more: how it got there is in the last observation.
  if (s.snapshot.value === 'done' || s.snapshot.value === 'cancelled') return JSON.stringify({ v: s.snapshot.value });
  return JSON.stringify({
    v: s.snapshot.value,
    steps: c.steps,
    max: c.limits.maxSteps,
    tokensOut: c.limits.maxTokens !== null && tokens >= c.limits.maxTokens,
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
