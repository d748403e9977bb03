/**
 * The checkpoint format's name and versions. A version this build can read but does not write
 * is migrated, one step per module (`migrate-v1.ts`: version 1 → 2, `migrate-v2.ts`: 2 → 3, `migrate-v3.ts`: 3 → 4,
 * `migrate-v4.ts`: 4 → 5), before it is validated.
 */
import { CheckpointError } from '../errors.js';
import { migrateV1 } from './migrate-v1.js';
import { migrateV2 } from './migrate-v2.js';
import { migrateV3 } from './migrate-v3.js';
import { migrateV4 } from './migrate-v4.js';

export const CHECKPOINT_FORMAT = 'tollgate.checkpoint';
/**
 * The version this build writes: 5 (conversations: `done` goes on with a new message, so its
 * status is `active`; `context.turn`, `limits.perTurn`, `stoppedBy: 'turn'`).
 */
export const CHECKPOINT_VERSION = 5;
/** Versions this build can read. */
export const READABLE_VERSIONS: readonly number[] = [1, 2, 3, 4, 5];

/** Each migration step: the snapshot of version n → version n + 1. Never throws for bad input. */
const STEPS: Record<number, (snapshot: unknown) => unknown> = {
  1: migrateV1,
  2: migrateV2,
  3: migrateV3,
  4: migrateV4,
};

/** The snapshot of a readable version brought to `CHECKPOINT_VERSION` (validation comes after). */
export function migrate(version: unknown, snapshot: unknown): unknown {
  if (typeof version !== 'number' || !READABLE_VERSIONS.includes(version)) {
    throw new CheckpointError(
      `invalid checkpoint: unsupported version ${JSON.stringify(version)}; this build reads ${READABLE_VERSIONS.join(', ')}`,
      'version',
    );
  }
  let migrated = snapshot;
  for (let v = version; v < CHECKPOINT_VERSION; v++) migrated = (STEPS[v] as (s: unknown) => unknown)(migrated);
  return migrated;
}
