/**
 * Version 4 → 5. Version 5 makes a run a conversation: `done` is no longer final (a new message
 * goes on from it), so a done run's snapshot status is `active`; the context may hold `turn` (what
 * the run had spent when its current turn began), `limits.perTurn`, and `stoppedBy: 'turn'`. A
 * version-4 run had one turn and no limits on it: only the done run's status changes.
 *
 * A blob labelled 4 that holds version-5 things already (the fields, the stop, a done run that is
 * `active`) is refused with a version-4 path, not made valid by migrating it. The rest is
 * validated as version 5 after.
 */
import { CheckpointError } from '../errors.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function refuse(message: string, path: string): never {
  throw new CheckpointError(`invalid checkpoint: ${path}: ${message}`, path);
}

export function migrateV4(snapshot: unknown): unknown {
  if (!isObject(snapshot) || !isObject(snapshot.context)) return snapshot;
  const ctx = snapshot.context;
  if ('turn' in ctx) refuse('not a version-4 field', 'snapshot.context.turn');
  if (isObject(ctx.limits) && 'perTurn' in ctx.limits)
    refuse('not a version-4 field', 'snapshot.context.limits.perTurn');
  if (ctx.stoppedBy === 'turn') refuse('not a version-4 budget', 'snapshot.context.stoppedBy');
  if (snapshot.value !== 'done') return snapshot;
  // Version 4's final state: its status was `done` (any other is left for validation to refuse).
  if (snapshot.status !== 'done')
    refuse(`a version-4 done run is done, not ${String(snapshot.status)}`, 'snapshot.status');
  return { ...snapshot, status: 'active' };
}
