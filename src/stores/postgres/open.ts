/**
 * The Postgres store's `open` (contract.ts): four statements sent at once, in one round trip
 * (the simple query protocol: they run as one transaction, each with a snapshot of its own, so
 * each sees what the one before it did and everything committed before it began).
 *
 * 1. The claim, by `claim`'s rule, of a run that exists and has not ended; it records the token
 *    it made (or '') in a setting of the transaction, which the statements after it read.
 * 2. The run's lease row and the store's now: who holds the run, when the claim was refused.
 * 3. The run, as `load` reads it, only once claimed — its lease row is then locked until the
 *    commit, so every save, delete and decision of the run waits: the run read is the latest, and
 *    stays so — or when it has ended (read without a claim).
 * 4. The lease released again unless the run is `running`, watchers told (as `release` does),
 *    and the run's group read unless it has ended.
 *
 * A statement with literals instead of parameters: the simple protocol takes none. Every value
 * is made a literal by pg's escaping (connections.ts `literal`).
 */

import type { Status } from '../../../machines/types.js';
import type { CheckedClaim } from '../../store/checked.js';
import type { Lease, OpenedRun, StoredRun } from '../../store/contract.js';
import { busyError, leaseOf } from '../../store/leases.js';
import { hasEnded } from '../../store/open.js';
import { literal } from './connections.js';
import { type LeaseRow, recordOf, storedRunOfRows } from './rows.js';
import { loadOf, ms, notifyOf, nowOf } from './sql.js';

const ENDED = `('done', 'cancelled')`;
const OPENED = `COALESCE(current_setting('tollgate.opened', true), '')`;

/** The four statements of `open` for run `runId` (`s`: the quoted schema; `at`: the store's now, or null). */
export function openText(s: string, schema: string, runId: string, claim: CheckedClaim, at: string | null): string {
  const id = literal(runId);
  const now = nowOf(literal(at));
  const process = literal(claim.process && JSON.stringify(claim.process));
  return `WITH r AS (SELECT status FROM ${s}.runs WHERE run_id = ${id}), k AS (
        INSERT INTO ${s}.leases AS l (run_id, token, owner, expires_at, process)
        SELECT ${id}, 1, ${literal(claim.owner)}, ${now} + ${ms(literal(claim.leaseMs))}, ${process}::text
          FROM r WHERE r.status NOT IN ${ENDED}
        ON CONFLICT (run_id) DO UPDATE
           SET token = l.token + 1, owner = excluded.owner, expires_at = excluded.expires_at, process = excluded.process
         WHERE l.owner IS NULL OR l.expires_at <= ${now} OR l.owner = excluded.owner
        RETURNING token::text AS token, expires_at
      )
      SELECT (SELECT status FROM r) AS status, k.token, k.expires_at,
             set_config('tollgate.opened', COALESCE(k.token, ''), true) AS opened
        FROM (SELECT 1) AS one LEFT JOIN k ON true;
    SELECT token::text AS token, owner, expires_at, process, ${now} AS now FROM ${s}.leases WHERE run_id = ${id};
    ${loadOf(s, id, `(${OPENED} <> '' OR EXISTS (SELECT 1 FROM ${s}.runs x WHERE x.run_id = ${id} AND x.status IN ${ENDED}))`)};
    WITH r AS (SELECT status FROM ${s}.runs WHERE run_id = ${id}), u AS (
        UPDATE ${s}.leases SET owner = NULL, expires_at = NULL, process = NULL
         WHERE run_id = ${id} AND token::text = ${OPENED} AND owner IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM r WHERE status = 'running')
        RETURNING 1
      )
      SELECT CASE WHEN EXISTS (SELECT 1 FROM r WHERE status NOT IN ${ENDED})
               THEN (SELECT grp FROM ${s}.run_groups WHERE run_id = ${id}) END AS grp,
             EXISTS (SELECT 1 FROM u) AS released,
             (SELECT ${notifyOf(schema)} WHERE EXISTS (SELECT 1 FROM u)) AS notified`;
}

/**
 * What one `open` batch found: the answer; `again` when the run changed between its statements
 * (try again, or throw `busy` after a few tries); or `failed`, a run that could not be read, with
 * the lease the batch kept on it (release it, then throw).
 */
export type OpenOutcome =
  | { opened: OpenedRun | null }
  | { again: true; busy: Error }
  | { failed: unknown; lease: Lease | null };

/**
 * What the four statements' rows mean (`results[i]`: statement i+1's rows, as arrays).
 * @throws RunBusyError when another owner's lease is live; CheckpointError for a damaged run.
 */
export function openedOf(runId: string, claim: CheckedClaim, results: readonly unknown[][][]): OpenOutcome {
  const [claimed, leases, loaded, rest] = results as unknown[][][];
  const [status, token, expiresAt] = (claimed?.[0] ?? []) as [string | null, string | null, Date | null];
  if (status === null || status === undefined) return { opened: null };
  if (!hasEnded(status as Status) && token === null) {
    // Refused: another owner's lease was live when the claim ran; statement 2 read who holds it.
    const [held, owner, until, process, at] = (leases?.[0] ?? []) as [string, string | null, Date | null, string, Date];
    if (owner && until && at < until) {
      const record = recordOf({ token: held, owner, expires_at: until, process } as LeaseRow);
      throw busyError('claim', runId, owner, until.getTime(), undefined, record);
    }
    // Freed between the two statements: tried again.
    return { again: true, busy: busyError('claim', runId, owner ?? 'another owner', until ?? at ?? new Date(0)) };
  }
  const [group, released] = (rest?.[0] ?? [null, true]) as [string | null, boolean];
  const record = { token: Number(token), owner: claim.owner, expiresAt: (expiresAt as Date | null)?.getTime() ?? 0 };
  const lease = token !== null && !released ? leaseOf(runId, record, claim.leaseMs) : null;
  let run: StoredRun | null;
  try {
    run = storedRunOfRows(runId, loaded ?? []);
  } catch (error) {
    return { failed: error, lease };
  }
  // Deleted (and made again) since the first statement read it: tried again.
  if (run === null || (token === null && !hasEnded(run.status))) {
    return { again: true, busy: busyError('claim', runId, 'another owner', new Date(0)) };
  }
  return { opened: { run, lease, group: hasEnded(run.status) ? null : group } };
}
