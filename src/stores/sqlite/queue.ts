/**
 * The SQLite store's approval queue and worker claims, each one `BEGIN IMMEDIATE` transaction:
 * the write lock is taken before anything is read, so no other connection (in this process or
 * another) can claim, save or decide between the check and the write. The rules are the shared
 * ones (queue.ts, leases.ts); the SQL only narrows the rows they look at.
 */
import type { Database, Statement } from 'better-sqlite3';
import { ClaimTurns, claimClass } from '../../store/claim-order.js';
import { nowOf } from '../../store/clock.js';
import type { ClaimNextOptions, Lease, RunSummary } from '../../store/contract.js';
import { claimRecord, fenceRecord, isLive, type LeaseRecord, leaseOf } from '../../store/leases.js';
import { compareRuns } from '../../store/order.js';
import { checkQueue } from '../../store/queue.js';
import { type LeaseRow, type RunRow, recordOf, summary } from './rows.js';

/** A run's lease record, read and written inside the caller's transaction. */
export interface LeaseAccess {
  read(runId: string): LeaseRecord | null;
  write(runId: string, record: LeaseRecord): void;
  /**
   * Moves the lease's end only (a save with the lease): the statement sets no column of the
   * `leases_held` index, so SQLite leaves that index alone.
   */
  extend(runId: string, expiresAt: number): void;
}

/** The lease table's statements. */
export function leaseAccess(db: Database): LeaseAccess {
  const row = db.prepare('SELECT token, owner, expires_at, process FROM leases WHERE run_id = ?');
  const put = db.prepare(
    `INSERT INTO leases (run_id, token, owner, expires_at, process) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, owner = excluded.owner,
       expires_at = excluded.expires_at, process = excluded.process`,
  );
  const move = db.prepare('UPDATE leases SET expires_at = ? WHERE run_id = ?');
  return {
    extend: (runId, expiresAt) => move.run(expiresAt, runId),
    read: (runId) => recordOf(row.get(runId) as LeaseRow | undefined),
    write: (runId, r) => put.run(runId, r.token, r.owner, r.expiresAt, r.process ? JSON.stringify(r.process) : null),
  };
}

const COLUMNS = `r.run_id, r.version, r.status, r.pending, r.updated_at, r.agent, r.decision,
            l.token, l.owner, l.expires_at, l.process`;
const MINE = 'r.agent IN (SELECT value FROM json_each(@agents))';
const FREE = '(l.owner IS NULL OR l.expires_at <= @now)';

/**
 * `claimNext`'s reads (claim-order.ts says the order), each bound to `@agents` (a JSON array) and
 * `@now`, each in list order; `claimClass` and `isLive` decide on each row until one passes. Each
 * class through its own index (schema step 10), so that a backlog of one costs the others
 * nothing: `decided`, a recorded decision (runs_decided) or an expired approval (runs_expiring);
 * `lapsed`, a lease with an owner whose time ran out (leases_held); `running`, the running runs
 * (runs_running, sorted: they are the runs at work and the backlog, not every run kept).
 */
export const CLAIM_QUERIES = {
  decided: `SELECT ${COLUMNS} FROM runs r LEFT JOIN leases l ON l.run_id = r.run_id
      WHERE r.run_id IN (SELECT run_id FROM runs WHERE decision IS NOT NULL
                         UNION ALL
                         SELECT run_id FROM runs WHERE status = 'awaiting_approval'
                            AND pending_expires_at IS NOT NULL AND pending_expires_at <= @now)
        AND ${MINE} AND r.status = 'awaiting_approval' AND ${FREE}
      ORDER BY r.updated_at, r.run_id`,
  // Without statistics SQLite would rather walk every run of the agents than the few held leases.
  lapsed: `SELECT ${COLUMNS} FROM leases l INDEXED BY leases_held CROSS JOIN runs r ON r.run_id = l.run_id
      WHERE l.owner IS NOT NULL AND l.expires_at <= @now AND ${MINE} AND r.status = 'running'
      ORDER BY r.updated_at, r.run_id`,
  running: `SELECT ${COLUMNS} FROM runs r INDEXED BY runs_running LEFT JOIN leases l ON l.run_id = r.run_id
      WHERE r.status = 'running' AND ${MINE} AND ${FREE}
      ORDER BY r.updated_at, r.run_id`,
};

/** A run `claimNext` may take, and its lease record (null: never claimed). */
interface Found {
  run: RunSummary;
  lease: LeaseRecord | null;
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
  const decided = db.prepare(CLAIM_QUERIES.decided);
  const lapsed = db.prepare(CLAIM_QUERIES.lapsed);
  const running = db.prepare(CLAIM_QUERIES.running);
  const turns = new ClaimTurns();

  const queue = db.transaction((runId: string, text: string, expectedVersion: number) => {
    const now = nowOf(clock, 'queueDecision');
    const found = current.get(runId) as Pick<RunRow, 'version' | 'status' | 'decision'> | undefined;
    checkQueue(runId, found ?? null, expectedVersion);
    fenceRecord('queueDecision', runId, leases.read(runId), undefined, now);
    record.run(expectedVersion + 1, text, new Date(now).toISOString(), runId);
    return expectedVersion + 1;
  });

  /** The first run `statement` gives that is runnable, its lease free. */
  const first = (statement: Statement, agents: readonly string[], now: number): Found | null => {
    // Read lazily, in order; the write waits until the read is closed (one statement at a time).
    for (const row of statement.iterate({ agents: JSON.stringify(agents), now }) as Iterable<RunRow & LeaseRow>) {
      const run = summary(row);
      const lease = row.token === null ? null : recordOf(row);
      if (claimClass(run, lease, now) !== null && !isLive(lease, now)) return { run, lease };
    }
    return null;
  };

  const claimNext = db.transaction(({ owner, leaseMs, agents, process = null }: ClaimNextOptions) => {
    const now = nowOf(clock, 'claimNext');
    const oldestFirst = turns.oldestFirst;
    let next: Found | null = null;
    if (oldestFirst) {
      // The older of the first decided run and the first running one (a lapsed one is running).
      const found = [first(decided, agents, now), first(running, agents, now)].filter((f) => f !== null);
      next = found.sort((a, b) => compareRuns(a.run, b.run))[0] ?? null;
    } else {
      next = first(decided, agents, now) ?? first(lapsed, agents, now) ?? first(running, agents, now);
    }
    if (!next) return null;
    const claimed = claimRecord(next.run.runId, next.lease, owner, leaseMs, now, process);
    leases.write(next.run.runId, claimed);
    turns.claimed(oldestFirst);
    return { lease: leaseOf(next.run.runId, claimed, leaseMs), run: next.run };
  });

  return {
    queue: (...args) => queue.immediate(...args),
    claimNext: (options) => claimNext.immediate(options),
  };
}
