/** Small builders the conformance cases share. */
import assert from 'node:assert/strict';
import type { PendingCall, Status } from '../../../machines/types.js';
import type { CheckpointStore, RunWrite, StoredRun } from '../../store/contract.js';
import type { ConformanceContext } from './types.js';

/** A write with a small JSON head; `over` replaces any field. */
export function write(over: Partial<RunWrite> = {}): RunWrite {
  return { status: 'running', head: '{"format":"conformance","n":0}', from: 0, append: [], pendingCalls: [], ...over };
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

/**
 * The `index`-th call (1-based) of a step with several, expiring at `expiresAt`. It carries a
 * field a store does not know (`index`): stores keep pending calls as opaque JSON.
 */
export function stepCall(runId: string, step: number, index: number, expiresAt: string | null = null): PendingCall {
  const call = { ...pendingCall(runId, step, { to: `ops-${index}` }), index, expiresAt };
  return { ...call, id: `${runId}:${step}.${index}#1`, key: `${runId}:${step}.${index}` };
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
  writes: readonly { status?: Status; append?: string[]; pendingCalls?: PendingCall[]; head?: string }[],
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

/** The run must be exactly this (its `updatedAt` a valid ISO-8601 time, its `pending` the first pending call). */
export function assertRun(actual: StoredRun | null, expected: Omit<StoredRun, 'updatedAt' | 'pending'>): void {
  assert.ok(actual, `run ${JSON.stringify(expected.runId)} should exist`);
  const { updatedAt, base, ...rest } = actual;
  const { base: wanted, ...others } = expected;
  assert.deepEqual(rest, { ...others, pending: expected.pendingCalls[0] ?? null });
  // A store that keeps no bases may leave `base` out.
  assert.equal(base ?? null, wanted ?? null, 'the stored base');
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

/** Checks a rejection is the store's `RunBusyError` naming `holder` (and `until`, when given). */
export function busy(runId: string, holder: string, until?: number) {
  return (error: unknown): true => {
    const e = error as { name?: unknown; runId?: unknown; holder?: unknown; until?: unknown };
    assert.equal(e?.name, 'RunBusyError', `expected a RunBusyError, got ${String(error)}`);
    assert.deepEqual({ runId: e.runId, holder: e.holder }, { runId, holder });
    if (until !== undefined) assert.equal(e.until, new Date(until).toISOString());
    return true;
  };
}

/** Checks a rejection is the store's `LeaseLostError` for `token`, the run now at `currentToken` held by `holder`. */
export function lost(runId: string, token: number, currentToken: number | null, holder: string | null) {
  return (error: unknown): true => {
    const e = error as { name?: unknown; runId?: unknown; token?: unknown; currentToken?: unknown; holder?: unknown };
    assert.equal(e?.name, 'LeaseLostError', `expected a LeaseLostError, got ${String(error)}`);
    assert.deepEqual(
      { runId: e.runId, token: e.token, currentToken: e.currentToken, holder: e.holder },
      { runId, token, currentToken, holder },
    );
    return true;
  };
}

/** Checks a rejection is an `OptionsError` whose message matches `pattern`. */
export function optionsError(pattern: RegExp) {
  return (error: unknown): true => {
    const e = error as { name?: unknown; message?: unknown } | null;
    assert.equal(e?.name, 'OptionsError', `expected an OptionsError, got ${String(error)}`);
    assert.match(String(e?.message), pattern);
    return true;
  };
}

/** A store on a clock the case moves by hand (`clock.now += ms`), closed afterwards whatever happens. */
export async function withClock<T>(
  ctx: ConformanceContext,
  fn: (store: CheckpointStore, clock: { now: number }) => Promise<T>,
): Promise<T> {
  const clock = { now: Date.parse('2026-05-06T07:08:09.010Z') };
  const store = await (ctx.createWithClock as NonNullable<ConformanceContext['createWithClock']>)(() => clock.now);
  try {
    return await fn(store, clock);
  } finally {
    await store.close();
  }
}

/** The ISO-8601 form of `ms`. */
export const iso = (ms: number) => new Date(ms).toISOString();
