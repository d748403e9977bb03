/**
 * The Postgres store's approval queue and worker claims, each decided by one statement
 * (sql.ts: `queue`, `claimNext`). When `queue` matches nothing, a second statement reads why,
 * and the shared rules (queue.ts, leases.ts) build the same typed errors as the other stores.
 */
import type { QueryResult, QueryResultRow } from 'pg';
import { ConflictError } from '../../errors.js';
import type { ClaimTurns } from '../../store/claim-order.js';
import type { ClaimNextOptions, Lease, RunSummary } from '../../store/contract.js';
import { leaseOf } from '../../store/leases.js';
import { checkQueue } from '../../store/queue.js';
import { fenceError, type LeaseRow, type RefusalRow, type RunRow, recordOf, summaryOf } from './rows.js';
import type { Statements } from './sql.js';

/** How the store runs a statement (`op` names the call in errors). */
export type Query = <R extends QueryResultRow = Record<string, unknown>>(
  op: string,
  text: string,
  values: unknown[],
) => Promise<QueryResult<R>>;

/** A statement that matched nothing, but whose cause is gone when read, is tried again this many times. */
const RETRIES = 3;
/**
 * `claimNext` tries again, passing that run by, when another worker took the run it chose (or
 * a writer held its lease row) between its choice and its claim; rows locked by others are
 * skipped at once, so each try is short. After this many, it reports nothing runnable: the
 * worker polls again.
 */
const CLAIM_TRIES = 8;

/** `queueDecision` after its arguments were checked (`text`: the decision as JSON; `at`: the store's now). */
export async function queueIn(
  query: Query,
  sql: Statements,
  runId: string,
  text: string,
  expectedVersion: number,
  at: string | null,
): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const { rows } = await query<{ version: number }>('queueDecision', sql.queue, [runId, text, expectedVersion, at]);
    if (rows[0]) return rows[0].version;
    const { rows: why } = await query<RefusalRow>('queueDecision', sql.refusal, [runId, at]);
    const found = why[0] as RefusalRow;
    const current =
      found.version === null
        ? null
        : { version: found.version, status: found.status ?? 'idle', decision: found.decided ? true : null };
    checkQueue(runId, current, expectedVersion);
    const refused = fenceError('queueDecision', runId, found, undefined);
    if (refused) throw refused;
    // Everything allows it now: the cause (a live lease) went in between. Again, a few times.
    if (attempt >= RETRIES) {
      throw new ConflictError(
        `queueDecision: run ${JSON.stringify(runId)} kept changing while the decision was recorded; read it again`,
        expectedVersion,
        found.version,
        { runId },
      );
    }
  }
}

/**
 * `claimNext` after its options were checked (`at`: the store's now, for each try), in claim
 * order: by class, or the oldest when `turns` says this store object's turn for it has come.
 */
export async function claimNextIn(
  query: Query,
  sql: Statements,
  { owner, leaseMs, agents, process = null }: ClaimNextOptions,
  at: () => string | null,
  turns: ClaimTurns,
): Promise<{ lease: Lease; run: RunSummary } | null> {
  const oldestFirst = turns.oldestFirst;
  const statement = oldestFirst ? sql.claimNext : sql.claimNextByClass;
  // Runs this call found taken (or their lease row held) since it chose them: passed by after.
  const passed: string[] = [];
  for (let attempt = 0; attempt < CLAIM_TRIES; attempt++) {
    const values = [owner, leaseMs, agents, at(), passed, process === null ? null : JSON.stringify(process)];
    const { rows } = await query<RunRow & Partial<LeaseRow>>('claimNext', statement, values);
    const row = rows[0];
    if (!row) return null;
    if (row.token) {
      turns.claimed(oldestFirst);
      return { lease: leaseOf(row.run_id, recordOf(row as LeaseRow), leaseMs), run: summaryOf(row) };
    }
    passed.push(row.run_id);
  }
  return null;
}
