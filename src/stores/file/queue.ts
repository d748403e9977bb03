/**
 * The file store's approval queue and worker claims. `queueDecision` rewrites the run's head
 * under its lock, like a save without entries. `claimNext` reads every head (as `list` does),
 * then tries the runnable runs in claim order (claim-order.ts), each under its own lock, checking again there that
 * it is still runnable and its lease free: two processes that pick the same run take turns on
 * its lock, and the second finds it held and moves on to the next. No lock is held while
 * scanning, so claims never wait on each other except for the one run they both want.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type ClaimTurns, claimClass, rankOf } from '../../store/claim-order.js';
import { nowOf } from '../../store/clock.js';
import type { ClaimNextOptions, Lease, RecordedDecision, RunSummary } from '../../store/contract.js';
import { claimRecord, fenceRecord, isLive, leaseOf } from '../../store/leases.js';
import { compareRuns } from '../../store/order.js';
import { checkQueue, isRunnable } from '../../store/queue.js';
import { encodeHead, type HeadMeta, replaceFile, runDirName, summaryOf } from './format.js';
import { type DamagedRun, HEAD, readAllHeads, readHead } from './heads.js';
import { withLock } from './lock.js';

/** What the queue needs of a file store: where its runs are, how long to wait for a lock, its clock. */
export interface QueueRoom {
  runs: string;
  lock: string;
  lockTimeoutMs: number;
  now: () => number;
  onDamaged: (damage: DamagedRun) => void;
  /** When this store object next takes the oldest run whatever its class (claim-order.ts). */
  turns: ClaimTurns;
}

/** Whether a worker of `agents` may take the run of `meta` at `now`: runnable, its lease not live. */
const takable = (meta: HeadMeta, agents: readonly string[], now: number) =>
  meta.agent !== null && agents.includes(meta.agent) && isRunnable(meta, now) && !isLive(meta.lease ?? null, now);

/** `queueDecision` after its arguments were checked (`text`: the decision as JSON). @returns the new version. */
export async function queueIn(room: QueueRoom, runId: string, text: string, expectedVersion: number): Promise<number> {
  const call = 'queueDecision';
  const dir = join(room.runs, runDirName(runId));
  // No run: say so without making its directory (the lock would).
  if (!(await readHead(call, dir, runId))) checkQueue(runId, null, expectedVersion);
  return withLock(join(dir, room.lock), room.lockTimeoutMs, async () => {
    const found = await readHead(call, dir, runId);
    const now = nowOf(room.now, call);
    checkQueue(runId, found?.meta ?? null, expectedVersion);
    const { meta, head } = found as NonNullable<typeof found>;
    fenceRecord(call, runId, meta.lease ?? null, undefined, now);
    const next: HeadMeta = {
      ...meta,
      version: expectedVersion + 1,
      decision: JSON.parse(text) as RecordedDecision,
      updatedAt: new Date(now).toISOString(),
    };
    await replaceFile(join(dir, HEAD), dir, encodeHead(next, head), randomUUID());
    return expectedVersion + 1;
  });
}

/** `claimNext` after its options were checked. */
export async function claimNextIn(
  room: QueueRoom,
  { owner, leaseMs, agents, process = null }: ClaimNextOptions,
): Promise<{ lease: Lease; run: RunSummary } | null> {
  const call = 'claimNext';
  const seen = nowOf(room.now, call);
  const oldestFirst = room.turns.oldestFirst;
  const heads = await readAllHeads(room.runs, room.onDamaged);
  const rank = (meta: HeadMeta) =>
    oldestFirst ? 0 : rankOf(claimClass(meta, meta.lease ?? null, seen) as NonNullable<ReturnType<typeof claimClass>>);
  const candidates = heads
    .map((h) => h.meta)
    .filter((meta) => takable(meta, agents, seen))
    .map((meta) => ({ meta, rank: rank(meta) }))
    .sort((a, b) => a.rank - b.rank || compareRuns(a.meta, b.meta))
    .map((c) => c.meta);
  for (const candidate of candidates) {
    const dir = join(room.runs, runDirName(candidate.runId));
    const taken = await withLock(join(dir, room.lock), room.lockTimeoutMs, async () => {
      const found = await readHead(call, dir, candidate.runId);
      const now = nowOf(room.now, call);
      // Changed since the scan (claimed, saved, deleted by another process): not this one.
      if (!found || !takable(found.meta, agents, now)) return null;
      const record = claimRecord(candidate.runId, found.meta.lease ?? null, owner, leaseMs, now, process);
      await replaceFile(join(dir, HEAD), dir, encodeHead({ ...found.meta, lease: record }, found.head), randomUUID());
      return { lease: leaseOf(candidate.runId, record, leaseMs), run: summaryOf(found.meta) };
    });
    if (taken) {
      room.turns.claimed(oldestFirst);
      return taken;
    }
  }
  return null;
}
