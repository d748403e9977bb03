/** The rows the Postgres store reads, and what they become. */
import type { Status } from '../../../machines/types.js';
import { CheckpointError } from '../../errors.js';
import type { ProcessIdentity } from '../../process-identity.js';
import type { Lease, RunSummary, StoredRun } from '../../store/contract.js';
import { fenceRecord, type LeaseRecord } from '../../store/leases.js';
import { pendingCallsOf, pendingFields } from '../../store/pending-calls.js';
import { decisionOf } from '../../store/queue.js';

export interface RunRow {
  run_id: string;
  version: number;
  status: Status;
  pending: string | null;
  updated_at: Date;
  agent: string | null;
  decision: string | null;
}

/** A lease row; `token` as text (a bigint). */
export interface LeaseRow {
  token: string;
  owner: string | null;
  expires_at: Date | null;
  /** The holder's `ProcessIdentity` as JSON text, or null (absent where a statement does not read it). */
  process?: string | null;
}

/** What a refused write finds: the run (nulls when missing), its lease (nulls when none), now. */
export interface RefusalRow {
  version: number | null;
  entry_count: number | null;
  status: Status | null;
  agent: string | null;
  /** Whether a decision is recorded. */
  decided: boolean | null;
  token: string | null;
  owner: string | null;
  expires_at: Date | null;
  process: string | null;
  now: Date;
}

/** A lease as `renewMany` finds it (sql.ts `renewRuns`): renewed (token, owner, expiry), or lost (nulls) to the current record. */
export interface RenewedRow extends Omit<LeaseRow, 'token'> {
  ord: number;
  token: string | null;
  current_token: string | null;
  current_owner: string | null;
}

/** A run row as `list` gives it. */
export function summaryOf(row: RunRow): RunSummary {
  return {
    runId: row.run_id,
    version: row.version,
    status: row.status,
    ...pendingFields(pendingCallsOf(row.pending === null ? null : JSON.parse(row.pending))),
    updatedAt: row.updated_at.toISOString(),
    agent: row.agent,
    decision: decisionOf(row.decision),
  };
}

/**
 * The columns of the `load` statement's rows, by position (sql.ts): the run's row (idx -1: its
 * head in body, its other columns in meta, its update time), and one row per entry (its index and
 * body; meta and updatedAt null). In no particular order.
 */
export const LOAD = { idx: 0, body: 1, meta: 2, updatedAt: 3 } as const;

/** The run's columns in `meta`, a JSON array, by position. */
const LOAD_META = {
  runId: 0,
  version: 1,
  status: 2,
  entryCount: 3,
  pending: 4,
  agent: 5,
  decision: 6,
  base: 7,
} as const;

/** The run's row of `load`, as a `RunRow` with its entry count and base. */
export function loadedRunOf(row: readonly unknown[]): RunRow & { entry_count: number; base: string | null } {
  const meta = JSON.parse(row[LOAD.meta] as string) as unknown[];
  return {
    run_id: meta[LOAD_META.runId] as string,
    version: meta[LOAD_META.version] as number,
    status: meta[LOAD_META.status] as Status,
    entry_count: meta[LOAD_META.entryCount] as number,
    pending: meta[LOAD_META.pending] as string | null,
    updated_at: row[LOAD.updatedAt] as Date,
    agent: meta[LOAD_META.agent] as string | null,
    decision: meta[LOAD_META.decision] as string | null,
    base: meta[LOAD_META.base] as string | null,
  };
}

/** The run the `load` statement's rows make (sql.ts), or null when it found none. */
export function storedRunOfRows(runId: string, rows: readonly unknown[][]): StoredRun | null {
  const at = rows.findIndex((r) => r[LOAD.idx] === -1);
  if (at === -1) return null;
  const first = rows[at] as unknown[];
  const run = loadedRunOf(first);
  const damaged = (what: string) =>
    new CheckpointError(`postgres: run ${JSON.stringify(runId)} is damaged: ${what}`, undefined, { runId });
  const count = rows.length - 1;
  if (count !== run.entry_count) throw damaged(`it should have ${run.entry_count} entries but has ${count}`);
  // Each entry in its place: the rows come in no order (the key makes each index one row).
  const entries = new Array<string>(count);
  for (let i = 0; i < rows.length; i++) {
    if (i === at) continue;
    const row = rows[i] as unknown[];
    const idx = row[LOAD.idx] as number;
    if (!(idx >= 0 && idx < count) || entries[idx] !== undefined) throw damaged(`an entry has index ${idx}`);
    entries[idx] = row[LOAD.body] as string;
  }
  return { ...summaryOf(run), head: first[LOAD.body] as string, base: run.base, entries };
}

/** A lease row as the shared lease rules take it. */
export function recordOf(row: LeaseRow): LeaseRecord {
  const process = row.process ? (JSON.parse(row.process) as ProcessIdentity) : null;
  return { token: Number(row.token), owner: row.owner, expiresAt: row.expires_at?.getTime() ?? null, process };
}

/** The lease error a refused write gets (the rules of leases.ts, on what the store holds now), or null. */
export function fenceError(call: string, runId: string, why: RefusalRow, lease: Lease | undefined): Error | null {
  const current = why.token === null ? null : recordOf(why as LeaseRow);
  try {
    fenceRecord(call, runId, current, lease, why.now.getTime());
    return null;
  } catch (error) {
    return error as Error;
  }
}
