/** What the chaos suite counts and finds, printed at the end (one per store). */
export interface ChaosReport {
  store: string;
  seed: number;
  durationMs: number;
  runs: number;
  /** Runs by final status, and the budget-stopped ones by what stopped them. */
  statuses: Record<string, number>;
  stoppedBy: Record<string, number>;
  workersStarted: number;
  kills: number;
  /** Of the kills, those timed right after a side effect took effect downstream, before its result was recorded. */
  killsAfterEffect: number;
  /** SIGSTOPs at a random moment, each longer than a lease, then SIGCONT. */
  pauses: number;
  /** Workers that stopped themselves (SIGSTOP) right after a save, woken as long after. */
  freezes: number;
  /** Postgres: every connection of a worker reset at once. */
  cuts: number;
  /** Postgres: a worker's every byte dropped for longer than a lease, then its connections reset. */
  partitions: number;
  decisions: {
    approved: number;
    denied: number;
    edited: number;
    /** Decisions on calls asked again after a crash (outcome unknown), looked up downstream first. */
    unknownOutcome: number;
    /** Decisions applied as recorded (a tool entry carries them). */
    applied: number;
    /** Decisions whose call was asked again after a crash (a later attempt of its key was decided). */
    superseded: number;
    /** Calls seen pending again after their decision was recorded (a worker dropped it), and decided again. */
    dropped: number;
    /** `recordDecision` refused for now (RunBusyError, ConflictError) and tried again. */
    retries: number;
  };
  attempts: { pay: number; ship: number; notify: number; accepted: number; refused: number };
  /** Refused attempts, by the fault of their process the call was in flight across. */
  refusals: { acrossPause: number; acrossPartition: number; acrossCut: number; noFault: number };
  /** Keys of a non-idempotent tool that took effect twice, each on an approval of its own. */
  twice: number;
  /** Approvals of a non-idempotent call attempted more than once (the later ones refused, or after verify said not done). */
  retriedOnOneApproval: number;
  /** Accepted calls of the idempotent `ship` beyond the first of their key (deduplicated downstream). */
  shipRepeats: number;
  /** What `verify` answered in the workers, and the tool entries recorded from a `done`. */
  verify: { done: number; notDone: number; recorded: number };
  /** Errors the workers reported (`error` events), by error name. */
  workerErrors: Record<string, number>;
  /**
   * Per group: its spending, its limit, what its runs recorded, and what owners that had lost
   * their run did (sent after another owner's claim of it): the holds they asked, what they
   * charged on those holds, and what they charged late for calls made before.
   */
  groups: Record<
    string,
    {
      spentUsd: number;
      limitUsd: number;
      runsUsd: number;
      exhausted: string | null;
      /** Holds asked by owners that had lost their run (refused by the store). */
      staleHolds: number;
      /** What those owners' settlements reported (added only for a hold not yet charged as spent). */
      staleChargesUsd: number;
    }
  >;
  violations: string[];
  notes: string[];
}

export function emptyReport(store: string, seed: number): ChaosReport {
  return {
    store,
    seed,
    durationMs: 0,
    runs: 0,
    statuses: {},
    stoppedBy: {},
    workersStarted: 0,
    kills: 0,
    killsAfterEffect: 0,
    pauses: 0,
    freezes: 0,
    cuts: 0,
    partitions: 0,
    decisions: {
      approved: 0,
      denied: 0,
      edited: 0,
      unknownOutcome: 0,
      applied: 0,
      superseded: 0,
      dropped: 0,
      retries: 0,
    },
    attempts: { pay: 0, ship: 0, notify: 0, accepted: 0, refused: 0 },
    refusals: { acrossPause: 0, acrossPartition: 0, acrossCut: 0, noFault: 0 },
    twice: 0,
    retriedOnOneApproval: 0,
    shipRepeats: 0,
    verify: { done: 0, notDone: 0, recorded: 0 },
    workerErrors: {},
    groups: {},
    violations: [],
    notes: [],
  };
}
