/**
 * The `CheckpointStore` contract, and the journal form runs are stored in.
 *
 * A run is stored as a small *head* (the checkpoint with an empty history: status, counters,
 * pending calls, calls in flight) plus its history as an append-only list of *entries*. Each
 * save replaces the head and appends only the new entries, so a step costs O(new data), not
 * O(history), and a 10,000-step run writes O(N) bytes in all. Loading joins head and entries
 * and validates the result like any checkpoint.
 */
import type { PendingCall, Status } from '../../machines/types.js';
import type { LeaseLostError } from '../errors.js';
import type { ProcessIdentity } from '../process-identity.js';

/** What a store keeps for one run. */
export interface StoredRun {
  runId: string;
  /** Incremented by every save; the first save makes version 1. */
  version: number;
  status: Status;
  /**
   * The checkpoint without its history (canonical JSON), or, in a store that keeps bases
   * (`keepsBase`), possibly a small delta against `base` (checkpoint/head-delta.ts).
   */
  head: string;
  /**
   * The last `RunWrite.base` saved, or null when none was (a store that keeps no bases may leave
   * it out). `joinRun` and `Agent.load` join a delta head with it.
   */
  base?: string | null;
  /** The history entries, each canonical JSON, in order. */
  entries: string[];
  /** Every call awaiting a decision, in call order; `[]` when none. The approval inbox shows them. */
  pendingCalls: PendingCall[];
  /**
   * `pendingCalls[0] ?? null`: the oldest undecided call. Derived, never stored on its own; kept
   * for code written when a run had at most one pending call.
   */
  pending: PendingCall | null;
  /** ISO-8601 time of the last save (the store's clock). */
  updatedAt: string;
  /**
   * The name of the agent definition (`defineAgent`'s `name`) that works the run, as the first
   * save that gave one set it; null for runs saved without one. A `Worker` only takes runs of
   * the agents it was given.
   */
  agent: string | null;
  /**
   * A decision recorded for a worker to apply (`queueDecision`), or null. Every save clears it:
   * the worker that applies it saves the run.
   */
  decision: RecordedDecision | null;
}

/**
 * A human's decision on a run's pending calls, recorded for a worker to apply (the approval
 * queue). The store keeps it as opaque JSON; `recordDecision` checks it before it is recorded
 * and the worker checks it again (as `agent.decide` does) before it is applied.
 */
export interface RecordedDecision {
  /** `agent.decide`'s map form: call id → `{ approve: true, note?, args?, always? }` or `{ approve: false, note? }`. */
  decisions: Record<string, unknown>;
  /** Who decided. */
  by: string;
  /** ISO-8601 time it was recorded: a call is decided in time when this is before its `expiresAt`. */
  at: string;
}

/** One save: a new head and the entries appended since the last save. */
export interface RunWrite {
  status: Status;
  head: string;
  /** The number of entries already stored: the first appended entry's index. */
  from: number;
  append: string[];
  /**
   * Every undecided call after this save, in call order (`[]` when none); it replaces the
   * stored list. A store keeps each call as opaque JSON and reads one field: `expiresAt` (null,
   * or an ISO-8601 time), for `list({ expired })`.
   */
  pendingCalls: PendingCall[];
  /**
   * The agent definition's name, for workers. A save without it keeps the name stored (the
   * first save that gives one sets it; a different name later is refused with `OptionsError`).
   */
  agent?: string;
  /**
   * `true`: the store may answer before the write is on stable storage — it must survive this
   * process's crash, not a power cut (SQLite `synchronous = NORMAL`, Postgres
   * `synchronous_commit = off`). A later write that is not relaxed makes it durable too: writes
   * reach the disk in order. Agents with `durability: 'points'` relax every save but those that
   * guard an effect. A store may ignore it and write every save durably (the memory and file
   * stores do). @default false
   */
  relaxed?: boolean;
  /**
   * A new base for the run's head deltas, given only to a store whose `keepsBase` is true: the
   * store keeps it (replacing the one it has) in the same atomic write as the head, and returns
   * it as `StoredRun.base`. A write without one keeps the stored base (a new run's is null).
   * `head` may then be a delta against the base the run holds after this write.
   */
  base?: string;
}

/** A run as `list` returns it: everything but its head and history. */
export type RunSummary = Omit<StoredRun, 'head' | 'base' | 'entries'>;

export interface ListOptions {
  /** Only runs in this status; `'awaiting_approval'` is the approval inbox. */
  status?: Status;
  /**
   * `true`: only runs with at least one pending call whose `expiresAt` is at or before the
   * store's now (a decision would execute nothing: the approval expired). `false`: only runs
   * with no such call — including runs with no pending call, and calls without an expiry
   * (`expiresAt: null`), which never expire. @default both
   */
  expired?: boolean;
  /** At most this many, oldest update first. @default all */
  limit?: number;
  /** Only runs of this agent (`StoredRun.agent`). @default any */
  agent?: string;
  /** Aborting it makes `list` reject with the signal's reason at once (it changes nothing). @default none */
  signal?: AbortSignal;
}

export interface ClaimNextOptions {
  /** Who claims, as `claim`'s `owner`. */
  owner: string;
  /** The lease's length, as `claim`'s `leaseMs`. */
  leaseMs: number;
  /** Only runs of these agents (`StoredRun.agent`); a non-empty list of names. */
  agents: readonly string[];
  /** The claiming process, as `claim`'s `process`. @default null */
  process?: ProcessIdentity | null;
}

/**
 * The right to work on one run, from `claim`: at most one owner holds a live lease on a run.
 * Hand it to every `save` and `delete` of the run (they are refused once it is lost), `renew` it
 * before `expiresAt`, and `release` it when the run settles.
 */
export interface Lease {
  runId: string;
  /** Who holds it: the `owner` given to `claim`. */
  owner: string;
  /**
   * The fencing token: every claim of the run makes a larger one (also after a lapse, a release
   * or a delete of the run). A write with a token that is no longer the run's current one is
   * refused with `LeaseLostError`, in the same statement that checks the version.
   */
  token: number;
  /**
   * ISO-8601 time the lease ends unless renewed, on the store's clock (Postgres: the database's).
   * Schedule renewals by duration (`leaseMs`), not by comparing this to a local clock.
   */
  expiresAt: string;
  /** The lease's length in ms: a save with the lease extends it to the store's now + `leaseMs`. */
  leaseMs: number;
}

export interface ClaimOptions {
  /** Who claims: a non-empty id, unique per holder (a worker's id plus a random part). At most 256 characters. */
  owner: string;
  /** How long the lease lasts unless renewed: 1 to 2^31−1 ms. */
  leaseMs: number;
  /**
   * While another owner holds a live lease, keep trying this long (polling with backoff) before
   * throwing `RunBusyError`: 0 to 2^31−1 ms. The wait ends once this much time has passed on the
   * process's clock or on the store's, whichever comes first. @default 0 (fail at once)
   */
  wait?: number;
  /**
   * The claiming process (`thisProcess()`), kept with the lease while it is held and shown on the
   * `RunBusyError` of anyone refused meanwhile (`holderProcess`), so that a claimer on the same
   * machine can prove the holder dead and release its lease at once. Agents and workers give it.
   * @default null (unknown: the lease is only ever left to lapse)
   */
  process?: ProcessIdentity | null;
  /**
   * Aborting it stops a claim that waits (`wait`): it rejects with the signal's reason, and a
   * lease it took meanwhile is released. An already aborted signal claims nothing. @default none
   */
  signal?: AbortSignal;
}

/**
 * What `open` found: the run, and what a load needs beside it. A run found `running` (its owner
 * died mid-run) stays claimed for the caller to continue it; any other run is left unclaimed.
 */
export interface OpenedRun {
  /** The run as `load` returns it, read under the claim (nothing written since is missed). */
  run: StoredRun;
  /**
   * The lease the run stays claimed under, as `claim` would return it: only for a run found
   * `running`. null for a run at rest (claimed and released again in the same step: the token grew
   * by one, and anyone may claim it at once) and for a run that has ended (not claimed at all).
   */
  lease: Lease | null;
  /**
   * The run's budget group (`groupOf`), or null: none, a store without group budgets, or a run
   * that has ended (it spends nothing again, so its group is not read).
   */
  group: string | null;
}

/**
 * Durable storage for runs, with optimistic concurrency: every write names the version it
 * expects, and a stale writer gets a `ConflictError`, never a silent overwrite. And leases: at
 * most one live owner per run, whose fencing token every write carries, so an owner that lost
 * the run can never write to it again. `tollgate/testing` exports `checkpointStoreConformance`
 * to check an implementation.
 *
 * @example
 * const lease = await store.claim('run-1', { owner: 'worker-7:3f2a', leaseMs: 30_000 });
 * const version = await store.save('run-1', write, 0, lease); // refused once the lease is lost
 * await store.release(lease);
 *
 * Group budgets (`GroupBudgetStore`, below) are an optional capability: a store has all of its
 * methods or none (`groupBudgetsOf`; the rules they share are in store/groups.ts).
 */
export interface CheckpointStore extends Partial<GroupBudgetStore> {
  /**
   * `true`: the store keeps each run's `RunWrite.base` (and `queueDecision` keeps it as it
   * keeps the head), and `load` returns it as `StoredRun.base`. Agents then write most heads as
   * small deltas against a base they write now and then (checkpoint/head-delta.ts): fewer bytes
   * a save. Without it every head is written whole. The memory, SQLite and Postgres stores keep
   * bases; the file store, which writes its head file whole on every save, does not.
   */
  readonly keepsBase?: boolean;
  /** The run, or null if the store does not have it (a run claimed but never saved has none). */
  load(runId: string): Promise<StoredRun | null>;
  /**
   * Writes a run if its current version is `expectedVersion` (0: the run must not exist yet),
   * atomically: the head and pending calls are replaced and entries `from…` appended, or
   * nothing changes. The lease is checked first, in the same atomic step as the version:
   * - with `lease`: only if `lease.token` is the run's current token and the lease was not
   *   released (a lease whose time lapsed but that nobody claimed since still writes); the
   *   save then extends the lease to the store's now + `lease.leaseMs` (never shortens it);
   * - without: only while no owner holds a live lease on the run.
   * @returns the new version, `expectedVersion + 1`.
   * @throws LeaseLostError if `lease` is not the run's current lease.
   * @throws RunBusyError if no lease is given while another owner holds a live one.
   * @throws ConflictError if the stored version (or entry count) is not the expected one.
   */
  save(runId: string, write: RunWrite, expectedVersion: number, lease?: Lease): Promise<number>;
  /** Runs, optionally by status and expiry, oldest update first. */
  list(options?: ListOptions): Promise<RunSummary[]>;
  /**
   * One run's summary, as `list` gives it (no head, no entries), or null if the store does not
   * have it. Optional: with it, `Agent.load` on a store without `open` reads a run that has ended
   * (`done`, `cancelled`) without claiming it — it writes nothing, and is never busy — and pays
   * one small read more for every other run; without either, every run is claimed before it is read.
   */
  summary?(runId: string): Promise<RunSummary | null>;
  /**
   * Everything a load needs of one run, in one call: where the backend can, one atomic step and
   * one round trip (one transaction on the memory and SQLite stores). It does what a load would do
   * with `summary`, `claim`, `load`, `groupOf` and `release`, with the same rules:
   * - no such run: null, and nothing is claimed or written;
   * - a run that has ended (`cancelled`) or rests at its answer (`done`: only a `send`, which claims
   *   it first, changes it): read without a claim (never busy), `lease` null;
   * - any other run is claimed by `claim`'s rule (another owner's live lease: `RunBusyError` with
   *   `holder`, `until`, the holder's token and process, after waiting up to `claim.wait` ms), then
   *   read; a run found `running` stays claimed (`lease`), one at rest is released at once (its
   *   token grew by one, as a claim and a release would leave it).
   * Optional: `CheckedStore` composes it of the other calls for a backend that does not override
   * `openChecked`, and `Agent.load` does the same for a store without it.
   * @throws RunBusyError while another owner holds a live lease on a run that has not ended.
   * @throws OptionsError, as `claim` does, for a bad run id or claim option.
   */
  open?(runId: string, claim: ClaimOptions): Promise<OpenedRun | null>;
  /**
   * Deletes a run (at `expectedVersion`, when given), under the same lease rule as `save`.
   * The run's lease record stays (its token keeps growing if the id is used again).
   * @returns whether a run was deleted: false when there is none (whatever the lease).
   * @throws LeaseLostError, RunBusyError, ConflictError as `save` does.
   */
  delete(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean>;
  /**
   * Takes the run for `owner` for `leaseMs`: possible when no live lease is held by another
   * owner (never claimed, released, or lapsed: its `expiresAt` at or before the store's now). A
   * run need not exist yet: claim before the first save. Every claim makes a new, larger token,
   * also an owner's claim of its own live lease (which fences its earlier `Lease` objects).
   * @throws RunBusyError (`holder`, `until`) while another owner's lease is live, after
   *   waiting up to `wait` ms for it to end.
   */
  claim(runId: string, options: ClaimOptions): Promise<Lease>;
  /**
   * Extends a lease to the store's now + `leaseMs` (default: `lease.leaseMs`), keeping its
   * token. Works as long as the token is current, even after the time lapsed if nobody claimed.
   * @returns the renewed lease.
   * @throws LeaseLostError if the run was claimed since, or the lease released.
   */
  renew(lease: Lease, leaseMs?: number): Promise<Lease>;
  /**
   * Renews many leases at once, each exactly as `renew(lease, leaseMs)` would (`leaseMs` default:
   * each lease's own), in one round trip where the store can: one statement on Postgres, one
   * transaction on SQLite. Optional: an agent renews the leases this process holds on a store in
   * one call per interval when the store has it, one call per lease otherwise.
   * @returns for each lease, in order, the renewed lease or the `LeaseLostError` that `renew`
   *   would have thrown for it (it changed nothing); one lost lease never stops the others.
   * @throws OptionsError (renewing none) when a lease or `leaseMs` is malformed; the store's own
   *   error (renewing some, all or none) when it fails.
   */
  renewMany?(leases: readonly Lease[], leaseMs?: number): Promise<(Lease | LeaseLostError)[]>;
  /**
   * Frees the run now: anyone may claim it at once. The token stays (the next claim makes a
   * larger one), and the released lease can no longer write or renew.
   * @returns true if it was released; false (and nothing changes) if it was already lost.
   */
  release(lease: Lease): Promise<boolean>;
  /**
   * Records a human's decision on a run at rest for a worker to apply: the run must be
   * `awaiting_approval` at `expectedVersion`, hold no decision yet (the first decider wins) and
   * have no live lease. Makes version `expectedVersion + 1` with the same head, entries and
   * pending calls, so an agent holding the run in memory can no longer save over it unseen.
   * @returns the new version.
   * @throws RunNotFoundError if there is no such run.
   * @throws ConflictError if the version is not `expectedVersion`, or a decision is already recorded.
   * @throws RunStateError if the run is not awaiting approval.
   * @throws RunBusyError while an owner holds a live lease on the run.
   */
  queueDecision(runId: string, decision: RecordedDecision, expectedVersion: number): Promise<number>;
  /**
   * Claims the oldest *runnable* run of one of `agents` (oldest `updatedAt` first) whose lease
   * is free (never claimed, released, or lapsed), in one atomic step: on Postgres with
   * `FOR UPDATE SKIP LOCKED`, so workers racing for runs never take the same one. Runnable:
   * status `running` (submitted and not started, or its owner died mid-run), or
   * `awaiting_approval` with a recorded decision or a pending call whose `expiresAt` is at or
   * before the store's now.
   * @returns the lease and the run's summary, or null when nothing is runnable.
   */
  claimNext(options: ClaimNextOptions): Promise<{ lease: Lease; run: RunSummary } | null>;
  /**
   * Calls `listener` (with no argument) soon after a run may have become runnable in this
   * store — from any process when the store can tell (Postgres: `LISTEN`/`NOTIFY`), else from
   * this process only — so a worker need not wait for its next poll. Optional: a worker polls
   * a store without it. A listener that throws is ignored.
   * @returns a function that stops the calls.
   */
  watch?(listener: () => void): Promise<() => Promise<void>>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}

// Group budgets: an optional capability of a store (docs/group-budgets.md).

/** The window a group budget counts spending in: a UTC calendar day, or all time. */
export type GroupPeriod = 'day' | 'total';

/** What a group's runs may spend together in one window. `null`: no limit. */
export interface GroupBudget {
  /** US dollars, from 0.000001 to 10^9. */
  maxCostUsd: number | null;
  /** Input + output tokens. */
  maxTokens: number | null;
  /** `'day'`: spending counts from 00:00 UTC and starts again at zero each UTC day; `'total'`: never resets. */
  period: GroupPeriod;
}

/** What a group has spent in its current window, and whether a limit is reached. */
export interface GroupSpend {
  group: string;
  /** The window: `'YYYY-MM-DD'` (a UTC day, on the store's clock) for a daily budget, `'total'` otherwise. */
  window: string;
  /** Input + output tokens spent in the window. */
  tokens: number;
  /** US dollars spent in the window, a whole number of micro-dollars. */
  costUsd: number;
  /** The group's budget; the default (no limits, daily) when none was set. */
  budget: GroupBudget;
  /** The limit reached (spent ≥ limit), cost first; null while the group may spend. */
  exhausted: 'cost' | 'tokens' | null;
}

/** One policy call's spending, as the runtime adds it to its run's group. */
export interface GroupCharge {
  /** Input + output tokens: a whole number ≥ 0. */
  tokens: number;
  /** The call's cost in whole micro-dollars ≥ 0. */
  costMicroUsd: number;
  /**
   * The call's cost could not be known (no price for its model…): under a cost limit the group
   * is counted as having spent at least its whole limit (fail closed), else nothing is added.
   */
  costUnknown?: boolean;
}

/**
 * What a run asks to hold of its group's budget before a model call (reserve, then settle): the
 * most the call may spend. A hold counts against the group while the run's lease `token` is its
 * live lease — a holder that died frees its hold when its lease lapses — and until it is settled.
 */
export interface GroupHoldRequest {
  runId: string;
  /** The lease the run holds (`Lease.token`): the hold lives as long as this lease does. */
  token: number;
  /** Tokens to hold. */
  tokens: number;
  /** Micro-dollars to hold; null: all the group has left under its cost limit (a call that cannot be priced in advance). */
  costMicroUsd: number | null;
  /** A hold smaller than this is worthless (the call's estimated input and one output token). */
  minTokens: number;
  /** Likewise in micro-dollars. */
  minCostMicroUsd: number;
}

/** What `holdGroup` gave. */
export interface GroupHoldResult {
  /** What is held now (at most what was asked, at least the minimum), or null: nothing held. */
  held: { tokens: number; costMicroUsd: number } | null;
  /**
   * Why nothing is held: the group's spending alone leaves less than the minimum under this limit
   * (it is spent: the call must not be made), or null — when `held` is null too, other runs' holds
   * fill the room for now (ask again once they settle).
   */
  exhausted: 'cost' | 'tokens' | null;
  /** The group's spending in its current window (without any hold). */
  spend: GroupSpend;
}

/** The end of a hold: what the call spent, added to the group as the hold is dropped. */
export interface GroupSettlement {
  runId: string;
  token: number;
  charge: GroupCharge;
}

/**
 * Group budgets in a store: an optional capability of a `CheckpointStore` (memory, SQLite and
 * Postgres have it; the file store does not). A run in a group holds what each model call may
 * spend before the call, atomically against the group's limits and the other runs' holds, and
 * settles to what it spent after it (docs/group-budgets.md).
 */
export interface GroupBudgetStore {
  /** Sets (replaces) a group's budget; `null` removes it (no limits, daily). Missing fields: no limit, daily. */
  setGroupBudget(group: string, budget: Partial<GroupBudget> | null): Promise<void>;
  /** What the group has spent in its current window (a group never charged has spent 0). */
  groupSpend(group: string): Promise<GroupSpend>;
  /** Adds one call's spending to the group's current window, atomically; returns the totals after it. */
  spendGroup(group: string, charge: GroupCharge): Promise<GroupSpend>;
  /**
   * Holds room in the group's current window for run `request.runId`, atomically: what fits under
   * each limit beside the spending and the live holds of other runs, up to what was asked, if at
   * least the minimum fits (`groupHold` says how). Replaces the run's own earlier hold; charges the
   * group's holds whose lease is no longer live as spent first (`lapsedHold`).
   * @throws LeaseLostError unless `request.token` is the run's live lease (`holdLeaseLost`): nothing changes.
   */
  holdGroup(group: string, request: GroupHoldRequest): Promise<GroupHoldResult>;
  /**
   * Drops run `runId`'s hold (when its token is `token`) and adds `charge` to the current window,
   * in one atomic step. Without such a hold the charge is added only under the run's live lease of
   * that token: else the hold was charged as spent already (`settledByLapse`). Returns the totals after it.
   */
  settleGroup(group: string, settlement: GroupSettlement): Promise<GroupSpend>;
  /**
   * Puts run `runId` in `group` for good (the run need not exist yet, and the record outlives a
   * delete of the run). Joining the group it is in does nothing.
   * @throws OptionsError when the run is in another group: a run never changes group.
   */
  joinGroup(runId: string, group: string): Promise<void>;
  /** The group run `runId` is in, or null. */
  groupOf(runId: string): Promise<string | null>;
}

/** The store's group methods, or null when it has not got all of them. */
export function groupBudgetsOf(store: object): GroupBudgetStore | null {
  const s = store as Partial<GroupBudgetStore>;
  const methods = [
    'setGroupBudget',
    'groupSpend',
    'spendGroup',
    'holdGroup',
    'settleGroup',
    'joinGroup',
    'groupOf',
  ] as const;
  return methods.every((m) => typeof s[m] === 'function') ? (s as GroupBudgetStore) : null;
}

/** The journal form of a run (its head and entries), for stores and tools that write runs. */
export { entryOf, headOf, joinRun } from '../checkpoint/index.js';
