/** The rows the SQLite store reads, and what they become. */
import type { Status } from '../../../machines/types.js';
import { CheckpointError } from '../../errors.js';
import type { ProcessIdentity } from '../../process-identity.js';
import type { RunSummary, StoredRun } from '../../store/contract.js';
import type { LeaseRecord } from '../../store/leases.js';
import { pendingCallsOf, pendingFields } from '../../store/pending-calls.js';
import { decisionOf } from '../../store/queue.js';

export interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  head: string;
  base: string | null;
  entry_count: number;
  pending: string | null;
  updated_at: string;
  agent: string | null;
  decision: string | null;
}

export interface LeaseRow {
  token: number;
  owner: string | null;
  expires_at: number | null;
  /** The holder's `ProcessIdentity` as JSON text, or null. */
  process: string | null;
}

/** A run row as `list` gives it. */
export const summary = (row: Omit<RunRow, 'head' | 'base' | 'entry_count'>): RunSummary => ({
  runId: row.run_id,
  version: row.version,
  status: row.status,
  ...pendingFields(pendingCallsOf(row.pending === null ? null : JSON.parse(row.pending))),
  updatedAt: row.updated_at,
  agent: row.agent,
  decision: decisionOf(row.decision),
});

/** A lease row as the shared lease rules take it (null: no row). */
export const recordOf = (row: LeaseRow | undefined): LeaseRecord | null =>
  row
    ? {
        token: row.token,
        owner: row.owner,
        expiresAt: row.expires_at,
        process: row.process === null ? null : (JSON.parse(row.process) as ProcessIdentity),
      }
    : null;

/** A run row and its entries as `load` gives them. @throws CheckpointError when the row counts other entries than there are. */
export function storedRun(path: string, row: RunRow, bodies: string[]): StoredRun {
  if (bodies.length !== row.entry_count) {
    throw new CheckpointError(
      `sqlite: run ${JSON.stringify(row.run_id)} in ${path} is damaged: it has ${bodies.length} entries, not ${row.entry_count}`,
      undefined,
      { runId: row.run_id },
    );
  }
  return { ...summary(row), head: row.head, base: row.base, entries: bodies };
}
