/**
 * The alphabet of the path suite: which moves each state of the machine offers (one decision of
 * each kind, tool outcomes, decisions on the pending calls, crashes with a side effect in flight,
 * budget changes, cancel), and the machine events they stand for. A full alphabet for the
 * shortest paths, a small one for the simple paths.
 */
import type { initialTransition } from 'xstate';
import type { agentMachine } from '../../../machines/index.js';
import {
  type CallSpec,
  isDeciding,
  isExecuting,
  type ModelState,
  type Move,
  type PolicySpec,
  type Status,
  statusOf,
  type ToolSpec,
} from './alphabet.js';
import { activeLeft, earliestExpiry, isOpen, modelEvent, pendingOf, runningOf, toolDeadline } from './model-events.js';
import { asksAgainAfterCrash, type CallTool, hasVerify, mayEdit, VERIFY_ANSWERS } from './tools.js';

/** EXTEND_BUDGET is offered while maxSteps is below this: one extension per path. */
const MAX_STEPS_CAP = 3;

/** How long a call is in flight before the process dies, in a `crash(after)` move. */
const CRASH_AFTER_MS = 10;

const c = (tool: CallTool, variant = 0, id = false): CallSpec => ({ tool, variant, id });
const policy = (
  kind: PolicySpec['kind'],
  elapsedMs: number,
  tokens: [number, number] | null,
  calls: CallSpec[] = [],
  text = false,
  costUsd: number | null = 0.001,
): Move => ({
  kind: 'policy',
  spec: {
    kind,
    calls,
    text,
    elapsedMs,
    variant: 0,
    usage: tokens && {
      inputTokens: tokens[0],
      outputTokens: tokens[1],
      ...(costUsd === null ? {} : { costUsd }),
    },
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
  /** Reports the whole cost budget (PATH_LIMITS): after its step the run stops for cost, exactly. */
  charge: policy('call', 1, [3, 2], [c('charge')], false, 0.01),
  unknown: policy('call', 99, [3, 2], [c('unknown')]),
  /**
   * wipe of scope `tmp`, a side effect that needs nobody (a crash mid-call asks a human), in the
   * `{ calls: [one] }` form: a one-call step all the same (the seed's key and entries).
   */
  wipeFree: policy('calls', 1, [3, 2], [c('wipe', 1)]),
  /** wipe of scope `all`: the approval rule denies it. */
  /** Its usage names no cost (and the world gives no price): the unknown cost fails closed. */
  wipeDenied: policy('call', 1, [3, 2], [c('wipe', 2)], false, null),
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
      // Given with an edit where the tool allows one: the later calls it covers run with their own
      // arguments, never the edit.
      return n > 0 && Object.keys(s.context.standing).length === 0
        ? decide('always', [
            {
              at: 0,
              approve: true,
              always: true,
              ...(mayEdit(open[0]?.tool ?? '', open[0]?.outcome) ? { edit: 2 } : {}),
            },
          ])
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
  /** Offer SEND (once a path) in these statuses. */
  sendIn: Status[];
}

/** Everything: for the shortest paths (one per control state and last observation). */
export const FULL_ALPHABET: Alphabet = {
  policy: Object.keys(POLICY_MOVES) as (keyof typeof POLICY_MOVES)[],
  tool: ['result', 'throw', 'timeout'],
  approval: ['approve', 'deny', 'expire', 'approveLate', 'expireFirst', 'all', 'last', 'split', 'edit', 'always'],
  crash: ['now', 'after'],
  cancelIn: ['running', 'awaiting_approval', 'budget_exhausted', 'failed', 'done'],
  sendIn: ['done', 'budget_exhausted'],
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
  sendIn: ['done'],
};

/** A state of the path graph: the machine's snapshot and the test clock. */
export interface PathState {
  snapshot: ReturnType<typeof initialTransition<typeof agentMachine>>[0];
  now: number;
}

/** A state of a path as the drivers compare it: value, context and clock. */
export type PathStep = ModelState & { now: number };

export const view = (s: PathState): ModelState => ({ value: s.snapshot.value, context: s.snapshot.context });

/** The moves offered in a state. */
export function movesFor(s: PathState, alphabet: Alphabet = FULL_ALPHABET): Move[] {
  const m = view(s);
  const status = statusOf(m.value);
  const c = m.context;
  const cancel: Move[] = alphabet.cancelIn.includes(status) ? [{ kind: 'cancel' }] : [];
  // One new message a path: a conversation of two turns walks every state again in its second.
  const send: Move[] = alphabet.sendIn.includes(status) && turnsOf(c) < 2 ? [{ kind: 'send' }] : [];
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
      // A tool with `verify` is asked, at the resume or after a timeout: each answer is a move. (A
      // crash whose answer runs the call again leaves the machine where it was: no path edge;
      // the command sequences take it.)
      const verifies = running !== undefined && hasVerify(running.tool);
      const answers = <T extends Move>(move: T): T[] =>
        verifies ? VERIFY_ANSWERS.map((verify) => ({ ...move, verify })) : [move];
      const crash: Move[] = unsafe
        ? alphabet.crash.flatMap((k): Move[] =>
            k === 'now' ? answers({ kind: 'crash' }) : roomy ? answers({ kind: 'crash', afterMs: CRASH_AFTER_MS }) : [],
          )
        : [];
      const tools = alphabet.tool.flatMap((k): Move[] => {
        const move = TOOL_MOVES[k];
        return k === 'timeout' && verifies && move.kind === 'tool'
          ? VERIFY_ANSWERS.map((verify) => ({ ...move, spec: { ...move.spec, verify } }))
          : [move];
      });
      return [...tools, ...crash, ...cancel];
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
                  // Enough for any request these paths make (a path's states meet by whether the
                  // next request fits, not by how much is left: the extension must make it fit).
                  maxTokens: (l.maxTokens ?? 0) + 1_000,
                  maxActiveMs: (l.maxActiveMs ?? 0) + 100,
                  maxCostUsd: (l.maxCostUsd ?? 0) + 0.01,
                },
              },
            ]
          : [];
      return [...extend, { kind: 'run' }, ...send, ...cancel];
    }
    case 'failed':
      return [{ kind: 'run' }, ...cancel];
    case 'done':
      return [...send, ...cancel];
    default:
      return [];
  }
}

/** The turns of the conversation so far: the user messages in the history. */
export function turnsOf(c: PathState['snapshot']['context']): number {
  return c.history.filter((e) => e.role === 'user').length;
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
