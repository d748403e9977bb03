/** The shapes the conformance suite and a store under test agree on. */
import type { CheckpointStore } from '../../store/contract.js';

/**
 * What a store may be unable to do. A context that lacks one says why (`skip`), and every case
 * that needs it is reported as skipped with that reason: a skip is never silent.
 */
export type Capability =
  | 'crossProcess'
  | 'reopen'
  | 'clock'
  | 'groupBudgets'
  | 'summary'
  | 'bases'
  | 'renewMany'
  | 'open';

/** One writer process in the cross-process race: make `saves` successful saves on `runId`. */
export interface SaveRaceJob {
  kind?: 'saves';
  runId: string;
  /** A name, written into every entry and head it saves. */
  writer: string;
  saves: number;
  /**
   * Keep saving past `saves` until another writer's save has been seen, for up to this long, so
   * that a writer that started first cannot finish before the other begins. @default 0
   */
  meetWithinMs?: number;
  entriesPerSave: number;
  /** A pause after each won save, like an agent's work between steps, so neither writer hogs the store. */
  pauseMs: number;
}

/**
 * One process in the cross-process claim race: claim each of `runIds` in turn as owner
 * `writer`; on a win, create the run with the lease; on a loss, try a save without a lease
 * (which must be refused while the winner holds the run).
 */
export interface ClaimRaceJob {
  kind: 'claims';
  writer: string;
  runIds: string[];
  leaseMs: number;
}

/** One process in the cross-process `claimNext` race: take runs of `agents` until none is left. */
export interface ClaimNextRaceJob {
  kind: 'claimNext';
  writer: string;
  agents: string[];
  leaseMs: number;
}

/** What another process is asked to do: race saves (the default), claims, or `claimNext`. */
export type WriterJob = SaveRaceJob | ClaimRaceJob | ClaimNextRaceJob | GroupSpendRaceJob;

/** What a save racer reports: the versions it won (with the entries each appended) and its conflicts. */
export interface SaveRaceReport {
  writer: string;
  won: { version: number; entries: string[] }[];
  conflicts: number;
}

/** What a claim racer reports: the runs it won (token, and the version its save made), those it lost and to whom. */
export interface ClaimRaceReport {
  writer: string;
  claimed: { runId: string; token: number; version: number }[];
  busy: { runId: string; holder: string; until: string }[];
  /** Saves without a lease, on runs it lost, that were refused with `RunBusyError`. */
  refusedSaves: number;
}

/** What a `claimNext` racer reports: the runs it took, with their tokens, in the order it took them. */
export interface ClaimNextRaceReport {
  writer: string;
  taken: { runId: string; token: number }[];
}

/** One process in the cross-process group race: `spends` charges of `costMicroUsd` (and 1 token) to `group`, all at once. */
export interface GroupSpendRaceJob {
  kind: 'groupSpends';
  writer: string;
  group: string;
  spends: number;
  costMicroUsd: number;
}

/** What a group racer reports: the group's cost in micro-dollars after each of its spends. */
export interface GroupSpendRaceReport {
  writer: string;
  totals: number[];
}

/** What a writer process reports. */
export type WriterReport = SaveRaceReport | ClaimRaceReport | ClaimNextRaceReport | GroupSpendRaceReport;

/** A writer running in another process: opened its store (`ready`), waits for `go()`, then races. */
export interface WriterProcess {
  ready: Promise<void>;
  go(): void;
  result: Promise<WriterReport>;
  /** Ends the process if it is still running (cleanup after a failure). */
  kill(): void;
}

/**
 * How the suite gets stores.
 *
 * @example
 * const ctx: ConformanceContext = {
 *   create: async () => new MyStore(await freshDatabase()),
 *   skip: { crossProcess: 'MyStore lives in one process', reopen: 'MyStore keeps nothing' },
 * };
 */
export interface ConformanceContext {
  /** A new, empty store. Each case makes its own and closes it. */
  create(): Promise<CheckpointStore>;
  /**
   * A new, empty store whose clock is `now` (ms since the epoch) — for `updatedAt`, leases and
   * expiry — so a case can save several runs in the same millisecond and check how `list` breaks
   * the tie, and let leases and approvals lapse without waiting.
   */
  createWithClock?(now: () => number): Promise<CheckpointStore>;
  /** A new store on the same storage as `store`, which the case has closed. */
  reopen?(store: CheckpointStore): Promise<CheckpointStore>;
  /** Starts a writer in another OS process on the same storage as `store`, to race saves or claims. */
  spawnWriter?(store: CheckpointStore, job: WriterJob): WriterProcess;
  /**
   * The store has group budgets (`GroupBudgetStore`: setGroupBudget, groupSpend, spendGroup,
   * joinGroup, groupOf), an optional capability: its cases run. @default false (they are skipped, saying so)
   */
  groupBudgets?: boolean;
  /** The store has `summary(runId)`, an optional capability: its cases run. @default false (skipped, saying so) */
  summary?: boolean;
  /**
   * The store keeps head bases (`keepsBase: true`, `RunWrite.base`), an optional capability: its
   * cases run. @default false (skipped, saying so)
   */
  bases?: boolean;
  /**
   * The store renews many leases in one call (`renewMany`), an optional capability: its cases
   * run. @default false (skipped, saying so)
   */
  renewMany?: boolean;
  /**
   * The store opens a run for a load in one call (`open`), an optional capability: its cases run.
   * A store that extends `CheckedStore` has it. @default false (skipped, saying so)
   */
  open?: boolean;
  /** Why a capability this context does not provide is missing; shown on each skipped case. */
  skip?: Partial<Record<Capability, string>>;
}

/** One check every `CheckpointStore` must pass. Framework-agnostic: `run` throws on failure. */
export interface ConformanceCase {
  name: string;
  requires?: readonly Capability[];
  /** A timeout suggestion for the test runner. @default the runner's */
  timeoutMs?: number;
  run(ctx: ConformanceContext): Promise<void>;
}
