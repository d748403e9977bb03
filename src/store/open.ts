/**
 * `open` (contract.ts) made of a store's other calls: `summary`, `claim`, `load`, `groupOf` and
 * `release`, with the rules a one-step `open` keeps. `CheckedStore` uses it for a backend that does
 * not override `openChecked`, and `Agent.load` for a store without `open`.
 */
import type { Status } from '../../machines/types.js';
import { type CheckpointStore, type ClaimOptions, groupBudgetsOf, type OpenedRun } from './contract.js';

/**
 * The statuses a load reads without a claim: a cancelled run never changes again, and a run at
 * its answer changes only by a new message (`send`), which claims it before its first save.
 */
const ENDED: readonly Status[] = ['done', 'cancelled'];

/** Whether a run in `status` has ended (or rests at its answer): `open` reads it without a claim. */
export function hasEnded(status: Status): boolean {
  return ENDED.includes(status);
}

/**
 * The budget group of a run read in `status`: none for a run that has ended (it spends nothing
 * until a new message, and `send` reads its group again then).
 */
export async function groupOfRun(store: CheckpointStore, runId: string, status: Status): Promise<string | null> {
  return hasEnded(status) ? null : ((await groupBudgetsOf(store)?.groupOf(runId)) ?? null);
}

/**
 * `store.open(runId, claim)` in up to five calls. A run that has ended is read without a claim on a
 * store with `summary`; without it, every run is claimed before it is read.
 */
export async function openByParts(
  store: CheckpointStore,
  runId: string,
  claim: ClaimOptions,
): Promise<OpenedRun | null> {
  const peeked = store.summary ? await store.summary(runId) : undefined;
  if (peeked === null) return null; // an unknown run is not claimed
  if (peeked !== undefined && hasEnded(peeked.status)) {
    const run = await store.load(runId);
    if (run === null) return null;
    if (hasEnded(run.status)) return { run, lease: null, group: null };
    // Deleted and made again since its summary was read: claimed and read again, as any run.
  }
  const lease = await store.claim(runId, claim);
  let kept = false;
  try {
    const run = await store.load(runId);
    if (run === null) return null;
    const group = await groupOfRun(store, runId, run.status);
    kept = run.status === 'running';
    return { run, lease: kept ? lease : null, group };
  } finally {
    // A run at rest (or gone, or unreadable) is given up at once; a failed release lets it lapse.
    if (!kept) await store.release(lease).catch(() => false);
  }
}
