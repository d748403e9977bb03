/** The rows the Postgres store reads, and what they become. */
import type { Status } from '../../../machines/types.js';
import type { RunSummary } from '../../store.js';
import type { LeaseRecord } from '../leases.js';
import { pendingCallsOf, pendingFields } from '../rules.js';

export interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  pending: string | null;
  updated_at: Date;
}

/** A lease row; `token` as text (a bigint). */
export interface LeaseRow {
  token: string;
  owner: string | null;
  expires_at: Date | null;
}

/** What a refused write finds: the run (nulls when missing), its lease (nulls when none), now. */
export interface RefusalRow {
  version: number | null;
  entry_count: number | null;
  token: string | null;
  owner: string | null;
  expires_at: Date | null;
  now: Date;
}

/** A run row as `list` gives it. */
export function summaryOf(row: RunRow): RunSummary {
  return {
    runId: row.run_id,
    version: row.version,
    status: row.status,
    ...pendingFields(pendingCallsOf(row.pending === null ? null : JSON.parse(row.pending))),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A lease row as the shared lease rules take it. */
export function recordOf(row: LeaseRow): LeaseRecord {
  return { token: Number(row.token), owner: row.owner, expiresAt: row.expires_at?.getTime() ?? null };
}
