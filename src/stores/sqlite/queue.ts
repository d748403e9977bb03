/**
 * The SQLite store's approval queue and worker claims, each one `BEGIN IMMEDIATE` transaction:
 * the write lock is taken before anything is read, so no other connection (in this process or
 * another) can claim, save or decide between the check and the write. The rules are the shared
 * ones (queue.ts, leases.ts); the SQL only narrows the rows they look at.
 */
import type { Database } from 'better-sqlite3';
import type { ClaimNextOptions, Lease, RunSummary } from '../../store.js';
import { claimRecord, fenceRecord, isLive, type LeaseRecord, leaseOf } from '../leases.js';
import { checkQueue, isRunnable } from '../queue.js';
import { nowOf } from '../rules.js';
import { type LeaseRow, type RunRow, recordOf, summary } from './rows.js';

/** A run's lease record, read and written inside the caller's transaction. */
export interface LeaseAccess {
  read(runId: string): LeaseRecord | null;
  write(runId: string, record: LeaseRecord): void;
}

/** The lease table's statements. */
export function leaseAccess(db: Database): LeaseAccess {
  const row = db.prepare('SELECT token, owner, expires_at, process FROM leases WHERE run_id = ?');
  const put = db.prepare(
    `INSERT INTO leases (run_id, token, owner, expires_at, process) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, owner = excluded.owner,
       expires_at = excluded.expires_at, process = excluded.process`,
  );
  return {
    read: (runId) => recordOf(row.get(runId) as LeaseRow | undefined),
    write: (runId, r) => put.run(runId, r.token, r.owner, r.expiresAt, r.process ? JSON.stringify(r.process) : null),
  };
}

/** The two transactions of the queue, called by the store after it checked the arguments. */
export interface QueueTransactions {
  /** `queueDecision` after its arguments were checked (`text`: the decision as JSON). @returns the new version. */
  queue(runId: string, text: string, expectedVersion: number): number;
  /** `claimNext` after its options were checked. */
  claimNext(options: ClaimNextOptions): { lease: Lease; run: RunSummary } | null;
}

/** `queueDecision` and `claimNext` on `db`, on the store's `clock`, each one `BEGIN IMMEDIATE` transaction. */
export function queueTransactions(db: Database, clock: () => number, leases: LeaseAccess): QueueTransactions {
  const current = db.prepare('SELECT version, status, decision FROM runs WHERE run_id = ?');
  const record = db.prepare('UPDATE runs SET version = ?, decision = ?, updated_at = ? WHERE run_id = ?');
  // Runs of the agents that may be runnable and whose lease is not live, oldest first (the
  // runs_by_agent index); `isRunnable` and `isLive` decide on each, in order, until one passes.
  const candidates = db.prepare(
    `SELECT r.run_id, r.version, r.status, r.pending, r.updated_at, r.agent, r.decision,
            l.token, l.owner, l.expires_at, l.process
       FROM runs r LEFT JOIN leases l ON l.run_id = r.run_id
      WHERE r.agent IN (SELECT value FROM json_each(@agents))
        AND r.status IN ('running', 'awaiting_approval')
        AND (l.owner IS NULL OR l.expires_at <= @now)
      ORDER BY r.updated_at, r.run_id`,
  );

  const queue = db.transaction((runId: string, text: string, expectedVersion: number) => {
    const now = nowOf(clock, 'queueDecision');
    const found = current.get(runId) as Pick<RunRow, 'version' | 'status' | 'decision'> | undefined;
    checkQueue(runId, found ?? null, expectedVersion);
    fenceRecord('queueDecision', runId, leases.read(runId), undefined, now);
    record.run(expectedVersion + 1, text, new Date(now).toISOString(), runId);
    return expectedVersion + 1;
  });

  const claimNext = db.transaction(({ owner, leaseMs, agents, process = null }: ClaimNextOptions) => {
    const now = nowOf(clock, 'claimNext');
    let next: { run: RunSummary; lease: LeaseRecord | null } | null = null;
    // Read lazily, oldest first; the write waits until the read is closed (one statement at a time).
    for (const row of candidates.iterate({ agents: JSON.stringify(agents), now }) as Iterable<RunRow & LeaseRow>) {
      const run = summary(row);
      const lease = row.token === null ? null : recordOf(row);
      if (isRunnable(run, now) && !isLive(lease, now)) {
        next = { run, lease };
        break;
      }
    }
    if (!next) return null;
    const claimed = claimRecord(next.run.runId, next.lease, owner, leaseMs, now, process);
    leases.write(next.run.runId, claimed);
    return { lease: leaseOf(next.run.runId, claimed, leaseMs), run: next.run };
  });

  return {
    queue: (...args) => queue.immediate(...args),
    claimNext: (options) => claimNext.immediate(options),
  };
}
