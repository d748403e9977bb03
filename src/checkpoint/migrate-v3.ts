/**
 * Version 3 → 4. Version 4 adds compaction: summary entries (`{ role: 'summary', text, covers }`)
 * in the history, the state `running.summarising`, and `context.compaction` (failures in a row,
 * the last error, when to try again). A version-3 run never summarised: `compaction` starts at
 * `{ failures: 0, error: null, retryAt: 0 }`. Nothing else changed.
 *
 * A blob labelled 3 that holds version-4 things already (the field, a summary entry, the state)
 * is refused with a version-3 path, not made valid by migrating it. The rest is validated as
 * version 4 after.
 */
import { CheckpointError } from '../errors.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function refuse(message: string, path: string): never {
  throw new CheckpointError(`invalid checkpoint: ${path}: ${message}`, path);
}

export function migrateV3(snapshot: unknown): unknown {
  if (!isObject(snapshot) || !isObject(snapshot.context)) return snapshot;
  const ctx = snapshot.context;
  if ('compaction' in ctx) refuse('not a version-3 field', 'snapshot.context.compaction');
  if (isObject(snapshot.value) && snapshot.value.running === 'summarising') {
    refuse('not a version-3 state', 'snapshot.value.running');
  }
  if (Array.isArray(ctx.history)) {
    const at = ctx.history.findIndex((e) => isObject(e) && e.role === 'summary');
    if (at >= 0) refuse('not a version-3 entry', `snapshot.context.history.${at}.role`);
  }
  return { ...snapshot, context: { ...ctx, compaction: { failures: 0, error: null, retryAt: 0 } } };
}
