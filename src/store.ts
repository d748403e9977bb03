/**
 * The `CheckpointStore` contract, and the journal form runs are stored in.
 *
 * A run is stored as a small *head* (the checkpoint with an empty history: status, counters,
 * pending call, call in flight) plus its history as an append-only list of *entries*. Each
 * save replaces the head and appends only the new entries, so a step costs O(new data), not
 * O(history), and a 10,000-step run writes O(N) bytes in all. Loading joins head and entries
 * and validates the result like any checkpoint.
 */
import type { PendingCall, Status } from '../machines/types.js';
import { ConflictError, OptionsError } from './errors.js';

/** What a store keeps for one run. */
export interface StoredRun {
  runId: string;
  /** Incremented by every save; the first save makes version 1. */
  version: number;
  status: Status;
  /** The checkpoint without its history (canonical JSON). */
  head: string;
  /** The history entries, each canonical JSON, in order. */
  entries: string[];
  /** The call awaiting approval, for the inbox. */
  pending: PendingCall | null;
  /** ISO-8601 time of the last save (the store's clock). */
  updatedAt: string;
}

/** One save: a new head and the entries appended since the last save. */
export interface RunWrite {
  status: Status;
  head: string;
  /** The number of entries already stored: the first appended entry's index. */
  from: number;
  append: string[];
  pending: PendingCall | null;
}

/** A run as `list` returns it: everything but its head and history. */
export type RunSummary = Omit<StoredRun, 'head' | 'entries'>;

export interface ListOptions {
  /** Only runs in this status; `'awaiting_approval'` is the approval inbox. */
  status?: Status;
  /** At most this many, oldest update first. @default all */
  limit?: number;
}

/**
 * Durable storage for runs, with optimistic concurrency: every write names the version it
 * expects, and a stale writer gets a `ConflictError`, never a silent overwrite.
 * `tollgate/testing` exports `checkpointStoreConformance` to check an implementation.
 */
export interface CheckpointStore {
  /** The run, or null if the store does not have it. */
  load(runId: string): Promise<StoredRun | null>;
  /**
   * Writes a run if its current version is `expectedVersion` (0: the run must not exist yet),
   * atomically: the head is replaced and entries `from…` appended, or nothing changes.
   * @returns the new version, `expectedVersion + 1`.
   * @throws ConflictError if the stored version (or entry count) is not the expected one.
   */
  save(runId: string, write: RunWrite, expectedVersion: number): Promise<number>;
  /** Runs, optionally by status. */
  list(options?: ListOptions): Promise<RunSummary[]>;
  /** Deletes a run (at `expectedVersion`, when given). @returns whether a run was deleted. */
  delete(runId: string, expectedVersion?: number): Promise<boolean>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}

/** The `ConflictError` of a stale save, worded alike by every store. */
export function saveConflict(
  runId: string,
  current: { version: number; entries: number } | null,
  from: number,
  expectedVersion: number,
): ConflictError {
  const version = current?.version ?? 0;
  return new ConflictError(
    `save: run ${JSON.stringify(runId)} is at version ${version} with ${current?.entries ?? 0} entries; the writer expected version ${expectedVersion} with ${from}`,
    expectedVersion,
    current ? version : null,
    { runId },
  );
}

/** Throws `saveConflict` unless the run is at `expectedVersion` (0: absent) with `from` entries. */
export function checkSave(
  runId: string,
  current: { version: number; entries: number } | null,
  from: number,
  expectedVersion: number,
): void {
  if ((current?.version ?? 0) !== expectedVersion || (current?.entries ?? 0) !== from) {
    throw saveConflict(runId, current, from, expectedVersion);
  }
}

/** The `ConflictError` of a delete at a version that is no longer current. */
export function deleteConflict(runId: string, actual: number, expectedVersion: number): ConflictError {
  return new ConflictError(
    `delete: run ${JSON.stringify(runId)} is at version ${actual}, not ${expectedVersion}`,
    expectedVersion,
    actual,
    { runId },
  );
}

/** `list`'s `limit` must be a whole number ≥ 0 in every store; throws `OptionsError` otherwise. */
export function checkLimit(limit: number | undefined): void {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
    throw new OptionsError(`list: limit must be a non-negative integer, got ${String(limit)}`);
  }
}

/** The journal form of a run (its head and entries), for stores and tools that write runs. */
export { entryOf, headOf, joinRun } from './checkpoint/index.js';
