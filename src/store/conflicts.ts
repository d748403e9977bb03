/** The `ConflictError`s of a stale write, worded alike by every store. */
import { ConflictError } from '../errors.js';

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
