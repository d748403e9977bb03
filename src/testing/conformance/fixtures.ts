/** Small builders the conformance cases share. */
import assert from 'node:assert/strict';
import type { PendingCall, Status } from '../../../machines/types.js';
import type { CheckpointStore, RunWrite, StoredRun } from '../../store.js';
import type { ConformanceContext } from './types.js';

/** A write with a small JSON head; `over` replaces any field. */
export function write(over: Partial<RunWrite> = {}): RunWrite {
  return { status: 'running', head: '{"format":"conformance","n":0}', from: 0, append: [], pending: null, ...over };
}

/** `count` distinct JSON entries, numbered from `start`. */
export function entries(count: number, start = 0, tag = 'e'): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify({ role: 'tool', tool: tag, result: start + i }));
}

/** A pending call as the inbox shows it. */
export function pendingCall(runId: string, step: number, args: PendingCall['args'] = { to: 'ops' }): PendingCall {
  return {
    id: `${runId}:${step}#1`,
    key: `${runId}:${step}`,
    step,
    tool: 'send_email',
    args,
    attempt: 1,
    requestedAt: '2026-01-02T03:04:05.006Z',
    expiresAt: null,
  };
}

/** Runs `fn` with a fresh store and closes it afterwards, whatever happens. */
export async function withStore<T>(ctx: ConformanceContext, fn: (store: CheckpointStore) => Promise<T>): Promise<T> {
  const store = await ctx.create();
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Saves a sequence of writes on one run from version 0; returns the last version. */
export async function saveAll(
  store: CheckpointStore,
  runId: string,
  writes: readonly { status?: Status; append?: string[]; pending?: PendingCall | null; head?: string }[],
): Promise<number> {
  let version = 0;
  let from = 0;
  for (const w of writes) {
    const append = w.append ?? [];
    version = await store.save(runId, write({ ...w, append, from }), version);
    from += append.length;
  }
  return version;
}

/** The run must be exactly this (its `updatedAt` a valid ISO-8601 time). */
export function assertRun(actual: StoredRun | null, expected: Omit<StoredRun, 'updatedAt'>): void {
  assert.ok(actual, `run ${JSON.stringify(expected.runId)} should exist`);
  const { updatedAt, ...rest } = actual;
  assert.deepEqual(rest, expected);
  assertIsoTime(updatedAt);
}

export function assertIsoTime(value: unknown): void {
  assert.equal(typeof value, 'string', 'updatedAt is an ISO-8601 string');
  assert.equal(new Date(value as string).toISOString(), value, 'updatedAt is ISO-8601 with milliseconds, in UTC');
}

/** Checks a rejection is the store's `ConflictError` with these fields. */
export function conflict(runId: string, expectedVersion: number, actualVersion: number | null) {
  return (error: unknown): true => {
    const e = error as { name?: unknown; runId?: unknown; expectedVersion?: unknown; actualVersion?: unknown };
    assert.equal(e?.name, 'ConflictError', `expected a ConflictError, got ${String(error)}`);
    assert.deepEqual(
      { runId: e.runId, expectedVersion: e.expectedVersion, actualVersion: e.actualVersion },
      { runId, expectedVersion, actualVersion },
    );
    return true;
  };
}

/** Waits until `Date.now()` has moved past `since`, so the store's next timestamp is later. */
export async function nextMillisecond(since = Date.now()): Promise<void> {
  // Not a deadline: list order is by update time, and two saves in one millisecond tie.
  while (Date.now() <= since + 1) await new Promise((resolve) => setTimeout(resolve, 2));
}
