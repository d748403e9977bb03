/**
 * What every crash-test run does, and the messages between the parent and its child.
 *
 * A run asks, in order: a pure lookup, a payment (non-idempotent, needs approval), a shipment
 * (idempotent, needs approval), another lookup, a second payment, then its final answer.
 * Six policy calls, and the budget is exactly six steps: a step counted twice across a crash
 * leaves the run `budget_exhausted`, which the test sees. Tokens: each call reports 15, and the
 * invariants hold the run to exactly 15 per answered call (a token budget must also leave room for
 * each call's estimated request before it is made, so it is not the exact sum).
 * Policy and tools pause for a random moment around their effects, so kills land between
 * an effect and its record as well as everywhere else.
 */
import type { Action, Policy, Tool } from '../../src/index.js';
import type { World, WorldSpec } from './ledger.js';

export const TOKENS_PER_CALL = { inputTokens: 10, outputTokens: 5 };

const SCRIPT: readonly Action[] = [
  { tool: 'lookup', args: { what: 'order' } },
  { tool: 'pay', args: { cents: 500 } },
  { tool: 'ship', args: { to: 'depot' } },
  { tool: 'lookup', args: { what: 'invoice' } },
  { tool: 'pay', args: { cents: 250 } },
  { final: 'paid and shipped' },
];

export const LIMITS = {
  maxSteps: SCRIPT.length,
  // The calls' own tokens, and room for the last call's estimated request (its whole history).
  maxTokens: SCRIPT.length * (TOKENS_PER_CALL.inputTokens + TOKENS_PER_CALL.outputTokens) + 400,
};

export const GOAL = 'pay the order and ship it';

/**
 * Workers' lease length: short, so a killed worker's runs are taken over within the test, yet
 * long enough that a live worker on a loaded machine renews in time (every third of it): the
 * invariants treat a live child losing its run as two owners at once, so an event-loop stall
 * of ~2 s would fail the test. (At 400 ms, stalls of ~270 ms were enough.)
 */
export const LEASE_MS = 3_000;

const pause = (ms = 3) => new Promise<void>((resolve) => setTimeout(resolve, Math.floor(Math.random() * ms)));

/** Chooses by the number of assistant turns so far, so it continues correctly after a resume. */
export const policy: Policy = async (history) => {
  await pause();
  const turn = history.filter((e) => e.role === 'assistant').length;
  return { ...(SCRIPT[turn] ?? { final: 'script ended' }), usage: TOKENS_PER_CALL } as Action;
};

/**
 * `onEffect` hears of each side effect as soon as it is made (the parent may kill right then);
 * `onPay` of each call of `pay` as it starts, before its effect (the call in flight).
 */
export function toolsFor(
  world: World,
  onEffect: (tool: string, key: string) => void = () => {},
  onPay: (callId: string) => void = () => {},
): Tool[] {
  return [
    {
      name: 'lookup',
      fn: async (args) => {
        await pause();
        return { found: args.what };
      },
    },
    {
      name: 'pay',
      sideEffect: true,
      fn: async (_args, key, ctx) => {
        onPay(ctx.approvedCallId ?? '');
        await pause();
        await world.pay(key, ctx.approvedCallId, ctx.runId);
        onEffect('pay', key);
        await pause(6); // the effect is done, its result not yet recorded
        return { paid: key };
      },
    },
    {
      name: 'ship',
      sideEffect: true,
      idempotent: true,
      fn: async (_args, key, ctx) => {
        await pause();
        await world.ship(key, ctx.approvedCallId, ctx.runId);
        onEffect('ship', key);
        await pause(6);
        return { shipped: key };
      },
    },
  ];
}

/** Parent → child: decide this pending call (sent once per child; again after a restart). */
export interface DecisionMessage {
  runId: string;
  callId: string;
  approved: boolean;
  note: string;
}

/** Child → parent, one JSON object per stdout line. */
export type WorkerEvent =
  | { type: 'ready' }
  | { type: 'effect'; tool: string; key: string }
  | { type: 'saved' }
  /** A call of `pay` started (approved as `callId`): the child holds it in flight until it reports the result saved. */
  | { type: 'paying'; callId: string }
  /** About to ask the policy for the run's next step (counted against its budget). */
  | { type: 'policy'; runId: string }
  /** A decision applied; `stillPending`: the call was still pending afterwards (the decision did nothing). */
  | { type: 'decided'; runId: string; callId: string; approved: boolean; status: string; stillPending: boolean }
  | { type: 'stale'; runId: string; callId: string; reason: string }
  /** A save refused on its version: `detail` is the error's message and where it was thrown. */
  | { type: 'conflict'; runId: string; detail: string }
  /** Another live worker holds the run (its lease): left to it. */
  | { type: 'busy'; runId: string }
  /**
   * This child's lease on the run lapsed while it lived (its event loop stalled for most of
   * LEASE_MS, as on an overloaded machine) and another took the run over: the one overlap a lease
   * cannot rule out (docs/stores.md, "Leases: one live owner per run"). Its saves were refused
   * from then on.
   */
  | { type: 'lost'; runId: string }
  | { type: 'stuck'; runId: string; status: string }
  /** The child's answer to `{ type: 'dump' }` on stdin: what it is doing, for a hang's report. */
  | { type: 'state'; busy: string[]; decisions: string[]; lastSeen: Record<string, string> }
  | { type: 'done' };

/** The configuration a child gets as its one argument (JSON). */
export interface WorkerConfig {
  world: WorldSpec;
  runIds: string[];
  /** The agents' `durability` (a SIGKILL is a process crash: relaxed saves must survive it too). */
  durability: 'full' | 'points';
}

/** What the parent counts and finds, printed at the end (one per store). */
export interface CrashReport {
  store: string;
  seed: number;
  kills: number;
  restarts: number;
  rounds: number;
  runsDone: number;
  approvals: number;
  denials: number;
  /** Decisions handed to children (each to every live child; again to a restarted one). */
  sent: number;
  /** Saves a child lost to the other child: its agent stopped with a ConflictError. */
  conflicts: number;
  /** Runs left to another live worker: its lease was live (RunBusyError) or it took over (LeaseLostError). */
  busy: number;
  /** Leases a live child lost to a stall (`lost` events); their runs' overlap checks become notes. */
  leasesLost: number;
  /** Pending calls re-asked with outcome 'unknown' after a crash mid-call. */
  unknownOutcomes: number;
  /** Policy calls the children made, over all runs (at most one more per run per killed child than its steps). */
  policyCalls: number;
  /** Decisions the child applied and reported. */
  applied: number;
  /** Decisions a child found already applied (by the other child, or one that died before reporting). */
  stale: number;
  payRows: number;
  /** Keys paid more than once (each on its own approval: a human approved again). */
  payTwice: number;
  /** Of those, keys where a human checked the ledger, saw no payment, and approved again. */
  payTwiceAfterCheck: number;
  shipRows: number;
  /** Idempotent calls made again with the same key after a crash (deduplicated by the ledger). */
  shipRepeats: number;
  durationMs: number;
  violations: string[];
  /** Things within the rules worth reading (how a human was misled, say). */
  notes: string[];
}

/** A report with nothing counted yet. */
export function emptyReport(store: string, seed: number): CrashReport {
  return {
    store,
    seed,
    kills: 0,
    restarts: 0,
    rounds: 0,
    runsDone: 0,
    approvals: 0,
    denials: 0,
    sent: 0,
    conflicts: 0,
    busy: 0,
    leasesLost: 0,
    unknownOutcomes: 0,
    policyCalls: 0,
    applied: 0,
    stale: 0,
    payRows: 0,
    payTwice: 0,
    payTwiceAfterCheck: 0,
    shipRows: 0,
    shipRepeats: 0,
    durationMs: 0,
    violations: [],
    notes: [],
  };
}
