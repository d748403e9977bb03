/**
 * Paths of the real agent machine (@xstate/graph 3): shortest and simple paths from `idle`,
 * over a bounded alphabet of synthetic actor events (policy decisions, tool outcomes) and user
 * events. `createTestModel` refuses machines that invoke actors, so the path functions are used
 * directly; each event carries the `Move` that reproduces it on the real Agent.
 */
import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { initialTransition, transition } from 'xstate';
import type { MachineEvent } from '../../../machines/index.js';
import { agentMachine } from '../../../machines/index.js';
import type { AgentInput, Limits } from '../../../machines/types.js';
import {
  isDeciding,
  isExecuting,
  isToolName,
  type ModelState,
  type Move,
  modelEvent,
  type PolicySpec,
  RUN_ID,
  type Status,
  statusOf,
  T0,
  TOOLS,
  type ToolSpec,
  TTL_MS,
} from './alphabet.js';

/** Small limits keep the graph finite and small; each budget can be hit in one or two steps. */
export const PATH_LIMITS: Limits = { maxSteps: 2, maxTokens: 100, maxActiveMs: 100 };
/** EXTEND_BUDGET is offered while maxSteps is below this: one extension per path. */
const MAX_STEPS_CAP = 3;
export const PATH_INPUT: AgentInput = { runId: RUN_ID, limits: PATH_LIMITS, approvalTtlMs: TTL_MS };

const policy = (kind: PolicySpec['kind'], elapsedMs: number, tokens: [number, number] | null): Move => ({
  kind: 'policy',
  spec: { kind, elapsedMs, variant: 0, usage: tokens && { inputTokens: tokens[0], outputTokens: tokens[1] } },
});
const tool = (kind: ToolSpec['kind']): Move => ({ kind: 'tool', spec: { kind, elapsedMs: 2 } });

/** One decision of each kind. `unknown` costs all but 1 ms of the time budget (the next call is cut by
 * the active-time deadline), `malformed` the tokens. */
const POLICY_MOVES = {
  final: policy('final', 1, [2, 1]),
  lookup: policy('lookup', 1, [3, 2]),
  send: policy('send', 1, [3, 2]),
  charge: policy('charge', 1, [3, 2]),
  unknown: policy('unknown', 99, [3, 2]),
  malformed: policy('malformed', 1, [60, 40]),
  // Costs no time: failed → RUN → deciding returns to the same state, so the loop is finite.
  throws: policy('throws', 0, null),
};
const TOOL_MOVES = { result: tool('result'), throw: tool('throw'), timeout: tool('timeout') };
type ApprovalKind = 'approve' | 'deny' | 'expire' | 'approveLate';

/** Which moves a path set offers. */
export interface Alphabet {
  policy: (keyof typeof POLICY_MOVES)[];
  tool: (keyof typeof TOOL_MOVES)[];
  approval: ApprovalKind[];
  /** Offer CANCEL in these statuses. */
  cancelIn: Status[];
}

/** Everything: for the shortest paths (one per control state). */
export const FULL_ALPHABET: Alphabet = {
  policy: ['final', 'lookup', 'send', 'charge', 'unknown', 'malformed', 'throws'],
  tool: ['result', 'throw', 'timeout'],
  approval: ['approve', 'deny', 'expire', 'approveLate'],
  cancelIn: ['running', 'awaiting_approval', 'budget_exhausted', 'failed'],
};

/**
 * A smaller alphabet for simple paths, whose number grows fast with every extra move (each
 * letter dropped here is taken by the shortest paths and the command sequences).
 */
export const SIMPLE_ALPHABET: Alphabet = {
  policy: ['final', 'lookup', 'send', 'malformed', 'throws'],
  tool: ['result'],
  approval: ['approve', 'deny'],
  cancelIn: ['running', 'awaiting_approval'],
};

/**
 * The clock in state `s` under the path alphabet: time moves only by what policy and tool calls
 * take (counted in activeMs) and by waiting past an approval's expiry (one `approval expired`
 * observation each).
 */
export function clockAt(s: ModelState): number {
  const expiries = s.context.history.filter((e) => 'error' in e && e.error === 'approval expired').length;
  return T0 + s.context.activeMs + expiries * TTL_MS;
}

/** The moves offered in a state. */
export function movesFor(s: ModelState, alphabet: Alphabet = FULL_ALPHABET): Move[] {
  const status = statusOf(s.value);
  const c = s.context;
  const cancel: Move[] = alphabet.cancelIn.includes(status) ? [{ kind: 'cancel' }] : [];
  switch (status) {
    case 'idle':
      return [{ kind: 'start' }];
    case 'running': {
      if (isDeciding(s)) return [...alphabet.policy.map((k) => POLICY_MOVES[k]), ...cancel];
      if (!isExecuting(s)) return [];
      const t = c.inflight?.tool ?? '';
      const unsafe = isToolName(t) && TOOLS[t].sideEffect && !TOOLS[t].idempotent;
      const crash: Move[] = unsafe ? [{ kind: 'crash' }] : [];
      return [...alphabet.tool.map((k) => TOOL_MOVES[k]), ...crash, ...cancel];
    }
    case 'awaiting_approval':
      return [...alphabet.approval.map((kind) => ({ kind }) as Move), ...cancel];
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

/** A path event: the machine event plus the move that reproduces it. */
export type PathEvent = MachineEvent & { move: Move };

export function eventsFor(s: ModelState, alphabet: Alphabet = FULL_ALPHABET): PathEvent[] {
  const now = clockAt(s);
  const out: PathEvent[] = [];
  for (const move of movesFor(s, alphabet)) {
    const event = modelEvent(move, s, now);
    if (event) out.push({ ...event, move } as PathEvent);
  }
  return out;
}

export interface MachinePath {
  /** `shortest` or `simple`, and the index within that set. */
  id: string;
  moves: Move[];
  /** The machine's state after each move. */
  states: ModelState[];
}

type Machine = typeof agentMachine;

/**
 * Replays moves on the machine with the pure `transition()`: the concrete state after each move.
 * (Graph steps are keyed by the control state, so a step's stored snapshot may come from another
 * run with the same control state; the events are rebuilt here from the run's own states.)
 */
export function replay(machine: Machine, moves: Move[]): ModelState[] {
  let [snapshot] = initialTransition(machine, PATH_INPUT);
  const states: ModelState[] = [];
  for (const move of moves) {
    const event = modelEvent(move, snapshot, clockAt(snapshot));
    if (!event) throw new Error(`path move ${JSON.stringify(move)} has no machine event`);
    const [next] = transition(machine, snapshot, event);
    if (next === snapshot) throw new Error(`path move ${JSON.stringify(move)} changes nothing`);
    snapshot = next;
    states.push({ value: snapshot.value, context: snapshot.context });
  }
  return states;
}

function toPaths(machine: Machine, kind: string, paths: ReturnType<typeof getShortestPaths<Machine>>): MachinePath[] {
  return paths
    .map((p, i) => {
      // steps[0] holds the initial state; each event carries the move that stands for it.
      const moves = p.steps.flatMap((step) =>
        'move' in (step.event as object) ? [(step.event as unknown as PathEvent).move] : [],
      );
      return { id: `${kind}#${i}`, moves, states: replay(machine, moves) };
    })
    .filter((p) => p.moves.length > 0);
}

// The default serialisation (value + full context) is kept: two paths meet only where the runs
// are identical, so every path is a distinct run.
const options = (alphabet: Alphabet, key: (s: ModelState) => string) => ({
  input: PATH_INPUT,
  events: (s: ReturnType<Machine['transition']>) => eventsFor(s, alphabet) as never,
  serializeState: (s: ReturnType<Machine['transition']>) => key(s),
});

/** Shortest paths to every (control state, last observation): so every kind of edge is taken. */
export function shortestPaths(machine: Machine = agentMachine, alphabet: Alphabet = FULL_ALPHABET): MachinePath[] {
  return toPaths(machine, 'shortest', getShortestPaths(machine, options(alphabet, observedKey)));
}

/** Simple paths between control states: every order in which the run can visit them. */
export function simplePaths(machine: Machine = agentMachine, alphabet: Alphabet = SIMPLE_ALPHABET): MachinePath[] {
  return toPaths(machine, 'simple', getSimplePaths(machine, options(alphabet, controlKey)));
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
 * The part of a state the machine's guards can see: status, counters against limits, the call
 * pending or in flight. History is left out, so paths that differ only in what was said meet.
 */
export function controlKey(s: ModelState): string {
  const c = s.context;
  const tokens = c.usage.inputTokens + c.usage.outputTokens;
  return JSON.stringify({
    v: s.value,
    steps: c.steps,
    max: c.limits.maxSteps,
    tokensOut: c.limits.maxTokens !== null && tokens >= c.limits.maxTokens,
    timeOut: c.limits.maxActiveMs !== null && c.activeMs >= c.limits.maxActiveMs,
    pending: c.pending && [c.pending.tool, c.pending.attempt, c.pending.outcome ?? null],
    inflight: c.inflight && [c.inflight.tool, c.inflight.approval !== null],
    stoppedBy: c.stoppedBy,
    failed: c.error !== null,
  });
}

/** The control state plus what the model saw last (its shape, not its timestamps). */
export function observedKey(s: ModelState): string {
  const last = s.context.history.at(-1);
  const seen = last && {
    role: last.role,
    tool: 'tool' in last ? last.tool : null,
    error: 'error' in last ? last.error.replace(/\d+/g, 'N') : null,
    approval: 'approval' in last && last.approval ? last.approval.approved : null,
  };
  return `${controlKey(s)}|${JSON.stringify(seen ?? null)}`;
}
