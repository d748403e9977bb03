/**
 * `SqliteStore.list`'s query, and which index serves it. The listing indexes (migration 8,
 * sqlite/migrations.ts) are partial so that a save of a running run, which changes its
 * `updated_at`, rewrites one of them and not three:
 *
 * - `runs_by_update (updated_at, run_id)`: every run; the list with no status.
 * - `runs_by_status (status, updated_at, run_id) WHERE status <> 'running'`: runs paused or
 *   ended (the approval inbox). SQLite uses a partial index only for a query whose terms contain
 *   its condition, so such a list says `status <> 'running'` too.
 * - `runs_running (run_id) WHERE status = 'running'`: keyed by nothing a save changes (a save
 *   that keeps the status does not set it: sqlite.ts), so the running runs are found there and
 *   sorted; they are the runs working now, few next to those kept.
 * - `runs_by_agent (agent, updated_at, run_id) WHERE agent IS NOT NULL`: a worker's runs
 *   (`claimNext`, `list({ agent })`); a run saved without an agent is not in it.
 */
import { STATUSES, type Status } from '../../../machines/types.js';

export const SUMMARY_COLUMNS = 'run_id, version, status, pending, updated_at, agent, decision';

/** `list`'s options once checked (rules.ts `checkListOptions`). */
export interface ListFilter {
  status?: Status | undefined;
  agent?: string | undefined;
  expired?: boolean | undefined;
  limit?: number | undefined;
}

/**
 * The SQL of a `list` with `filter`, its values bound by name (`@agent`, `@now`, `@limit`), in
 * list order: `updated_at`, then `run_id`, in BINARY collation (UTF-8 byte order, i.e. code
 * points: compareCodePoints in rules.ts).
 */
export function listQuery(filter: ListFilter): string {
  const { status, agent, expired, limit } = filter;
  const where: string[] = [];
  // The status as a literal (one of the known statuses, checked before and here again): SQLite
  // uses a partial index only when it can prove the query keeps to its condition, which a bound
  // value does not show; so a list of paused or ended runs says `status <> 'running'` too.
  if (status !== undefined) {
    if (!STATUSES.includes(status)) throw new TypeError(`listQuery: not a status: ${String(status)}`);
    where.push(`status = '${status}'`);
    if (status !== 'running') where.push("status <> 'running'");
  }
  if (agent !== undefined) where.push('agent = @agent');
  if (expired === true) where.push('pending_expires_at <= @now');
  if (expired === false) where.push('(pending_expires_at IS NULL OR pending_expires_at > @now)');
  // Without statistics SQLite would rather walk every run in list order than sort the few running.
  const from = status === 'running' && agent === undefined ? 'runs INDEXED BY runs_running' : 'runs';
  const filterText = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
  const limitText = limit === undefined ? '' : ' LIMIT @limit';
  return `SELECT ${SUMMARY_COLUMNS} FROM ${from}${filterText} ORDER BY updated_at, run_id${limitText}`;
}
