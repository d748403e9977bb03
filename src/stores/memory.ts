/**
 * An in-memory `CheckpointStore`: for tests, demos and single-process services that need
 * the store semantics (versions, conflicts, the approval inbox, leases) without durability.
 * Every operation decides synchronously, so the lease and version checks of a save are one
 * step that no other call can come between. Its arguments are checked by `CheckedStore`.
 */
import { agentAfterSave, checkClock, checkStoreOptions } from '../store/arguments.js';
import type { CheckedClaim, CheckedClaimNext } from '../store/checked.js';
import { CheckedGroupStore, type CheckedSettlement } from '../store/checked-groups.js';
import { ClaimTurns, claimClass, rankOf } from '../store/claim-order.js';
import { nowOf, timestampOf } from '../store/clock.js';
import { checkSave, deleteConflict } from '../store/conflicts.js';
import type {
  GroupBudget,
  GroupCharge,
  GroupHoldRequest,
  GroupHoldResult,
  GroupSpend,
  Lease,
  ListOptions,
  OpenedRun,
  RecordedDecision,
  RunSummary,
  RunWrite,
  StoredRun,
} from '../store/contract.js';
import {
  claimRecord,
  claimWithin,
  fenceRecord,
  isLive,
  type LeaseRecord,
  leaseOf,
  releaseRecord,
  renewRecord,
} from '../store/leases.js';
import { hasEnded } from '../store/open.js';
import { compareRuns } from '../store/order.js';
import { earliestExpiry, matchesExpired, pendingFields } from '../store/pending-calls.js';
import { checkQueue } from '../store/queue.js';
import { MemoryGroups } from './memory/groups.js';

export interface MemoryStoreOptions {
  /** The clock for `updatedAt`, leases and expiry, in ms since the epoch. @default Date.now */
  now?: () => number;
}

/** A run's summary as `list` gives it: a copy, without its head and entries. */
function summaryOf({ head: _h, base: _b, entries: _e, ...summary }: StoredRun): RunSummary {
  return structuredClone(summary);
}

/** Runs in a `Map`, with the same rules, conflicts, leases and list order as the durable stores. */
export class MemoryStore extends CheckedGroupStore {
  readonly #runs = new Map<string, StoredRun>();
  readonly keepsBase = true;
  /** Leases by run id: a run may be claimed before its first save, and its token outlives a delete. */
  readonly #leases = new Map<string, LeaseRecord>();
  readonly #now: () => number;
  readonly #watchers = new Set<() => void>();
  readonly #groups: MemoryGroups;
  readonly #turns = new ClaimTurns();

  /** @throws OptionsError on an unknown option or a `now` that is not a function. */
  constructor(options?: MemoryStoreOptions) {
    super();
    const o = checkStoreOptions('new MemoryStore', options, ['now']);
    this.#now = checkClock('new MemoryStore', o.now) ?? Date.now;
    this.#groups = new MemoryGroups(
      () => this.#now(),
      (runId) => this.#leases.get(runId) ?? null,
    );
  }

  protected async loadChecked(runId: string): Promise<StoredRun | null> {
    const run = this.#runs.get(runId);
    return run ? structuredClone(run) : null;
  }

  protected async saveChecked(runId: string, w: RunWrite, expectedVersion: number, lease?: Lease): Promise<number> {
    const now = nowOf(this.#now, 'save');
    const fenced = fenceRecord('save', runId, this.#leases.get(runId) ?? null, lease, now);
    const current = this.#runs.get(runId) ?? null;
    const version = current?.version ?? 0;
    checkSave(runId, current && { version, entries: current.entries.length }, w.from, expectedVersion);
    // The journal grows in place, O(new entries) a save (a stored run is only ever handed out
    // copied), once everything that may refuse the save has been checked.
    const entries = current?.entries ?? [];
    const next: StoredRun = {
      runId,
      version: version + 1,
      status: w.status,
      head: w.head,
      base: w.base ?? current?.base ?? null,
      entries,
      ...pendingFields(structuredClone(w.pendingCalls)),
      updatedAt: timestampOf(() => now),
      agent: agentAfterSave(runId, current?.agent ?? null, w.agent),
      decision: null,
    };
    for (const entry of w.append) entries.push(entry);
    this.#runs.set(runId, next);
    if (fenced) this.#leases.set(runId, fenced);
    if (!isLive(this.#leases.get(runId) ?? null, now)) this.#notify();
    return version + 1;
  }

  protected async listChecked({ status, expired, limit, agent }: ListOptions): Promise<RunSummary[]> {
    const now = expired === undefined ? 0 : nowOf(this.#now, 'list');
    const runs = [...this.#runs.values()]
      .filter((r) => status === undefined || r.status === status)
      .filter((r) => agent === undefined || r.agent === agent)
      .filter((r) => matchesExpired(expired, earliestExpiry(r.pendingCalls), now))
      .sort(compareRuns)
      .slice(0, limit ?? Number.POSITIVE_INFINITY);
    return runs.map(summaryOf);
  }

  protected async summaryChecked(runId: string): Promise<RunSummary | null> {
    const run = this.#runs.get(runId);
    return run ? summaryOf(run) : null;
  }

  protected async deleteChecked(runId: string, expectedVersion?: number, lease?: Lease): Promise<boolean> {
    const current = this.#runs.get(runId);
    if (!current) return false;
    // The lease rule only: a delete does not extend the lease, and the record stays.
    fenceRecord('delete', runId, this.#leases.get(runId) ?? null, lease, nowOf(this.#now, 'delete'));
    if (expectedVersion !== undefined && current.version !== expectedVersion) {
      throw deleteConflict(runId, current.version, expectedVersion);
    }
    return this.#runs.delete(runId);
  }

  protected async claimChecked(runId: string, { owner, leaseMs, wait, signal, process }: CheckedClaim): Promise<Lease> {
    return claimWithin({ wait, signal }, this.#now, async () => {
      const now = nowOf(this.#now, 'claim');
      const record = claimRecord(runId, this.#leases.get(runId) ?? null, owner, leaseMs, now, process);
      this.#leases.set(runId, record);
      return leaseOf(runId, record, leaseMs);
    });
  }

  /** One synchronous step: the run read, claimed, and (at rest) released, with nothing in between. */
  protected override async openChecked(
    runId: string,
    { owner, leaseMs, wait, signal, process }: CheckedClaim,
  ): Promise<OpenedRun | null> {
    return claimWithin({ wait, signal }, this.#now, async () => {
      const run = this.#runs.get(runId);
      if (!run) return null;
      if (hasEnded(run.status)) return { run: structuredClone(run), lease: null, group: null };
      const now = nowOf(this.#now, 'open');
      const record = claimRecord(runId, this.#leases.get(runId) ?? null, owner, leaseMs, now, process);
      const lease = leaseOf(runId, record, leaseMs);
      const kept = run.status === 'running';
      this.#leases.set(runId, kept ? record : (releaseRecord(record, lease) as LeaseRecord));
      return { run: structuredClone(run), lease: kept ? lease : null, group: this.#groups.groupOf(runId) };
    });
  }

  protected async renewChecked(lease: Lease, ms: number): Promise<Lease> {
    const record = renewRecord(this.#leases.get(lease.runId) ?? null, lease, ms, nowOf(this.#now, 'renew'));
    this.#leases.set(lease.runId, record);
    return leaseOf(lease.runId, record, ms);
  }

  protected async releaseChecked(lease: Lease): Promise<boolean> {
    const record = releaseRecord(this.#leases.get(lease.runId) ?? null, lease);
    if (record) this.#leases.set(lease.runId, record);
    if (record) this.#notify();
    return record !== null;
  }

  protected async queueDecisionChecked(runId: string, text: string, expectedVersion: number): Promise<number> {
    const now = nowOf(this.#now, 'queueDecision');
    const current = this.#runs.get(runId) ?? null;
    checkQueue(runId, current, expectedVersion);
    fenceRecord('queueDecision', runId, this.#leases.get(runId) ?? null, undefined, now);
    this.#runs.set(runId, {
      ...(current as StoredRun),
      version: expectedVersion + 1,
      decision: JSON.parse(text) as RecordedDecision,
      updatedAt: timestampOf(() => now, 'queueDecision'),
    });
    this.#notify();
    return expectedVersion + 1;
  }

  protected async claimNextChecked({
    owner,
    leaseMs,
    agents,
    process,
  }: CheckedClaimNext): Promise<{ lease: Lease; run: RunSummary } | null> {
    const now = nowOf(this.#now, 'claimNext');
    const oldestFirst = this.#turns.oldestFirst;
    const candidates: { run: StoredRun; rank: number }[] = [];
    for (const run of this.#runs.values()) {
      if (run.agent === null || !agents.includes(run.agent)) continue;
      const lease = this.#leases.get(run.runId) ?? null;
      const c = claimClass(run, lease, now);
      if (c !== null && !isLive(lease, now)) candidates.push({ run, rank: oldestFirst ? 0 : rankOf(c) });
    }
    const next = candidates.sort((a, b) => a.rank - b.rank || compareRuns(a.run, b.run))[0]?.run;
    if (!next) return null;
    const record = claimRecord(next.runId, this.#leases.get(next.runId) ?? null, owner, leaseMs, now, process);
    this.#leases.set(next.runId, record);
    this.#turns.claimed(oldestFirst);
    return { lease: leaseOf(next.runId, record, leaseMs), run: summaryOf(next) };
  }

  /** In-process only: a memory store is not shared with other processes. */
  async watch(listener: () => void): Promise<() => Promise<void>> {
    // A listener of its own per call, so one function watched twice is stopped twice.
    const own = () => listener();
    this.#watchers.add(own);
    return async () => {
      this.#watchers.delete(own);
    };
  }

  /** Tells the watchers, after the current operation, that a run may have become runnable. */
  #notify(): void {
    if (this.#watchers.size === 0) return;
    queueMicrotask(() => {
      for (const listener of this.#watchers) {
        try {
          listener();
        } catch {
          // A watcher's failure is its own.
        }
      }
    });
  }

  protected async setGroupBudgetChecked(group: string, budget: GroupBudget | null): Promise<void> {
    this.#groups.setBudget(group, budget);
  }

  protected async groupSpendChecked(group: string): Promise<GroupSpend> {
    return this.#groups.spend('groupSpend', group, null);
  }

  protected async spendGroupChecked(group: string, charge: Required<GroupCharge>): Promise<GroupSpend> {
    return this.#groups.spend('spendGroup', group, charge);
  }

  protected async holdGroupChecked(group: string, request: GroupHoldRequest): Promise<GroupHoldResult> {
    return this.#groups.hold(group, request);
  }

  protected async settleGroupChecked(group: string, settlement: CheckedSettlement): Promise<GroupSpend> {
    return this.#groups.settle(group, settlement);
  }

  protected async joinGroupChecked(runId: string, group: string): Promise<void> {
    this.#groups.join(runId, group);
  }

  protected async groupOfChecked(runId: string): Promise<string | null> {
    return this.#groups.groupOf(runId);
  }

  async close(): Promise<void> {}
}
