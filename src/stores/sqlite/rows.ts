/** The rows the SQLite store reads, and what they become. */
import type { Status } from '../../../machines/types.js';
import type { RunSummary } from '../../store.js';
import type { LeaseRecord } from '../leases.js';
import { pendingCallsOf, pendingFields } from '../rules.js';

export interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  head: string;
  entry_count: number;
  pending: string | null;
  updated_at: string;
}

export interface LeaseRow {
  token: number;
  owner: string | null;
  expires_at: number | null;
}

/** A run row as `list` gives it. */
export const summary = (row: Omit<RunRow, 'head' | 'entry_count'>): RunSummary => ({
  runId: row.run_id,
  version: row.version,
  status: row.status,
  ...pendingFields(pendingCallsOf(row.pending === null ? null : JSON.parse(row.pending))),
  updatedAt: row.updated_at,
});

/** A lease row as the shared lease rules take it (null: no row). */
export const recordOf = (row: LeaseRow | undefined): LeaseRecord | null =>
  row ? { token: row.token, owner: row.owner, expiresAt: row.expires_at } : null;
