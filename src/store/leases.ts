/**
 * The lease rules every Tollgate store shares: one live owner per run, and a fencing token that
 * only grows. The memory, file and SQLite stores decide with these functions (inside their lock
 * or transaction); the Postgres store says the same rules in SQL and builds the same errors
 * here. A custom store can use them too (`tollgate/store-kit` exports them).
 *
 * A run's lease record is `{ token, owner, expiresAt, process }`:
 * - **live** while `owner` is set and the store's now is before `expiresAt`;
 * - **current** (for the `Lease` whose token it holds) while `owner` is set, lapsed or not:
 *   a lease whose time ran out but that nobody claimed since still writes and renews. That is
 *   standard fencing: what protects the run is that a claim by anyone else changes the token.
 * - **released**: `owner` and `expiresAt` null, `token` kept, so the next claim makes a larger one.
 *
 * `process` is the holder's process as its claim gave it (`ClaimOptions.process`), kept while the
 * lease is held and shown on `RunBusyError`, so that a claimer on the same machine can prove the
 * holder dead and release its lease by token (runtime/lease.ts).
 */
import { LeaseLostError, OptionsError, RunBusyError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import type { ProcessIdentity } from '../process-identity.js';
import { checkDuration, checkRunId, unstorableText } from './arguments.js';
import type { ClaimOptions, Lease } from './contract.js';
import { checkProcess } from './holder-process.js';

/** A run's lease as a store keeps it; times in ms since the epoch, on the store's clock. */
export interface LeaseRecord {
  /** The fencing token of the last claim (≥ 1). */
  token: number;
  /** The holder, or null once released. */
  owner: string | null;
  /** When the holder's lease ends, or null once released. */
  expiresAt: number | null;
  /** The holder's process, as its claim gave it; null (or absent, in a record written before) when unknown or released. */
  process?: ProcessIdentity | null;
}

/** The longest owner id a store keeps: it is shown in every `RunBusyError`. */
export const MAX_OWNER_LENGTH = 256;

const LEASE_KEYS = ['runId', 'owner', 'token', 'expiresAt', 'leaseMs'];

const iso = (ms: number) => new Date(ms).toISOString();

/** Whether someone holds the run at `now`: an owner, and time left. */
export function isLive(record: LeaseRecord | null, now: number): boolean {
  return record !== null && record.owner !== null && record.expiresAt !== null && now < record.expiresAt;
}

/** Throws `OptionsError` unless `owner` is a non-empty id of at most 256 characters that every store can keep. */
export function checkOwner(call: string, owner: unknown): asserts owner is string {
  if (typeof owner !== 'string' || owner === '' || owner.length > MAX_OWNER_LENGTH) {
    throw new OptionsError(
      `${call}: owner must be a non-empty string of at most ${MAX_OWNER_LENGTH} characters, got ${showValue(owner)}`,
    );
  }
  const why = unstorableText(owner);
  if (why) throw new OptionsError(`${call}: owner ${showValue(owner)} holds ${why}; no store can keep it`);
}

/** `claim`'s (or `open`'s) run id and options, checked alike in every store; `wait` defaults to 0, `process` to null. */
export function checkClaim(
  runId: unknown,
  options: ClaimOptions,
  call = 'claim',
): Required<Omit<ClaimOptions, 'process' | 'signal'>> & {
  process: ProcessIdentity | null;
  signal: AbortSignal | null;
} {
  checkRunId(call, runId);
  checkKeys(call, options, ['owner', 'leaseMs', 'wait', 'process', 'signal']);
  checkOwner(call, options.owner);
  if (options.leaseMs === undefined) throw new OptionsError(`${call}: leaseMs is required (1 to 2^31−1 ms)`);
  const leaseMs = checkDuration(call, 'leaseMs', options.leaseMs, 0);
  const wait = checkDuration(call, 'wait', options.wait, 0, 0);
  const { signal } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new OptionsError(`${call}: signal must be an AbortSignal, got ${showValue(signal)}`);
  }
  return { owner: options.owner, leaseMs, wait, process: checkProcess(call, options.process), signal: signal ?? null };
}

/**
 * Throws `OptionsError` unless `lease` is a `Lease` as `claim` returns it (for `runId`, when
 * given: a lease of another run cannot fence this one).
 */
export function checkLease(call: string, lease: unknown, runId?: string): asserts lease is Lease {
  if (lease === null || typeof lease !== 'object' || Array.isArray(lease)) {
    throw new OptionsError(`${call}: the lease must be a Lease as claim returns it, got ${showValue(lease)}`);
  }
  checkKeys(call, lease, LEASE_KEYS, 'lease field');
  const l = lease as Partial<Lease>;
  const fail = (what: string, value: unknown) => {
    throw new OptionsError(`${call}: lease.${what}, got ${showValue(value)}`);
  };
  checkRunId(call, l.runId);
  checkOwner(call, l.owner);
  if (!Number.isSafeInteger(l.token) || (l.token as number) < 1) fail('token must be a whole number ≥ 1', l.token);
  if (typeof l.expiresAt !== 'string' || Number.isNaN(Date.parse(l.expiresAt))) {
    fail('expiresAt must be an ISO-8601 time', l.expiresAt);
  }
  if (l.leaseMs === undefined) fail('leaseMs must be a whole number of milliseconds', l.leaseMs);
  checkDuration(call, 'lease.leaseMs', l.leaseMs, 0);
  if (runId !== undefined && l.runId !== runId) {
    throw new OptionsError(
      `${call}: the lease is for run ${showValue(l.runId)}, not ${showValue(runId)}; claim this run for its own lease`,
    );
  }
}

/** `renew`'s arguments, checked alike in every store. @returns the new length: `leaseMs`, or the lease's own. */
export function checkRenew(lease: unknown, leaseMs: unknown, call = 'renew'): number {
  checkLease(call, lease);
  return checkDuration(call, 'leaseMs', leaseMs, lease.leaseMs);
}

/**
 * `renewMany`'s arguments, checked alike in every store before any lease is renewed.
 * @returns the length each lease is renewed to: `leaseMs`, or the lease's own.
 */
export function checkRenewMany(leases: unknown, leaseMs: unknown): number[] {
  if (!Array.isArray(leases)) {
    throw new OptionsError(`renewMany: leases must be an array of Lease, got ${showValue(leases)}`);
  }
  return leases.map((lease) => checkRenew(lease, leaseMs, 'renewMany'));
}

/** What `renewMany` gives for one lease: what `renew` returned, or the `LeaseLostError` it threw (other errors are thrown). */
export async function renewedOrLost(renewal: Promise<Lease>): Promise<Lease | LeaseLostError> {
  try {
    return await renewal;
  } catch (error) {
    if (error instanceof LeaseLostError) return error;
    throw error;
  }
}

/** The `Lease` a caller gets for a record. */
export function leaseOf(runId: string, record: LeaseRecord, leaseMs: number): Lease {
  if (record.owner === null || record.expiresAt === null) throw new Error('leaseOf: the record is released');
  return { runId, owner: record.owner, token: record.token, expiresAt: iso(record.expiresAt), leaseMs };
}

/**
 * The `RunBusyError` of a run held by `holder` until `until` (ms, a Date or ISO-8601); `waitedMs` when a
 * claim waited that long in vain; `held`: the holder's token and process, when the store read them.
 */
export function busyError(
  call: string,
  runId: string,
  holder: string,
  until: number | string | Date,
  waitedMs?: number,
  held: { token?: number | null; process?: ProcessIdentity | null } = {},
): RunBusyError {
  const end = typeof until === 'string' ? until : iso(typeof until === 'number' ? until : until.getTime());
  let next = call === 'claim' ? 'try again later, or claim with { wait }' : `${call} with its lease, or claim it first`;
  if (waitedMs !== undefined) next = `waited ${waitedMs} ms in vain`;
  return new RunBusyError(
    `${call}: run ${JSON.stringify(runId)} is held by ${JSON.stringify(holder)} until ${end}; ${next}`,
    holder,
    end,
    { runId },
    { token: held.token ?? null, holderProcess: held.process ?? null },
  );
}

/** The `RunBusyError` of a run whose live lease is `record`. */
function heldBy(call: string, runId: string, record: LeaseRecord): RunBusyError {
  const held = { token: record.token, process: record.process ?? null };
  return busyError(call, runId, record.owner as string, record.expiresAt as number, undefined, held);
}

/** The `LeaseLostError` of `lease` when the run's record is `current` (null: no record at all). */
export function leaseLost(call: string, lease: Lease, current: LeaseRecord | null): LeaseLostError {
  const mine = `the lease of run ${JSON.stringify(lease.runId)} held by ${JSON.stringify(lease.owner)} (token ${lease.token})`;
  let why: string;
  if (current === null) why = 'the run has no lease record (the lease is not from this store)';
  else if (current.token !== lease.token) {
    const by = current.owner === null ? 'and released since' : `by ${JSON.stringify(current.owner)}`;
    why = `the run was claimed again (token ${current.token}) ${by}`;
  } else why = 'it was released';
  return new LeaseLostError(
    `${call}: ${mine} is no longer current: ${why}; stop working on the run, and claim it again to go on`,
    lease.token,
    current?.token ?? null,
    current?.owner ?? null,
    { runId: lease.runId },
  );
}

/**
 * The record after `owner` (in `process`, when known) claims the run at `now`: the next token,
 * `expiresAt = now + leaseMs`.
 * @throws RunBusyError while another owner's lease is live.
 */
export function claimRecord(
  runId: string,
  current: LeaseRecord | null,
  owner: string,
  leaseMs: number,
  now: number,
  process: ProcessIdentity | null = null,
): LeaseRecord {
  if (current && isLive(current, now) && current.owner !== owner) throw heldBy('claim', runId, current);
  return { token: (current?.token ?? 0) + 1, owner, expiresAt: now + leaseMs, process };
}

/** Whether `lease` is the run's current lease: its token, not released (lapsed or not). */
export function isCurrent(current: LeaseRecord | null, lease: Lease): boolean {
  return current !== null && current.token === lease.token && current.owner !== null;
}

/**
 * The record after renewing `lease` to `now + leaseMs`.
 * @throws LeaseLostError unless `lease` is current.
 */
export function renewRecord(current: LeaseRecord | null, lease: Lease, leaseMs: number, now: number): LeaseRecord {
  if (!isCurrent(current, lease)) throw leaseLost('renew', lease, current);
  const c = current as LeaseRecord;
  return { token: lease.token, owner: c.owner, expiresAt: now + leaseMs, process: c.process ?? null };
}

/** The record after releasing `lease`, or null when it is not current (nothing to do). */
export function releaseRecord(current: LeaseRecord | null, lease: Lease): LeaseRecord | null {
  return isCurrent(current, lease) ? { token: lease.token, owner: null, expiresAt: null, process: null } : null;
}

/**
 * The lease rule of a write (`save`, `delete`), checked before its version.
 * @returns the record to store with the write: with a lease, extended to `now + lease.leaseMs`
 *   (never shortened); without, `current` unchanged.
 * @throws LeaseLostError when `lease` is not current; RunBusyError when there is no lease and
 *   someone holds a live one.
 */
export function fenceRecord(
  call: string,
  runId: string,
  current: LeaseRecord | null,
  lease: Lease | undefined,
  now: number,
): LeaseRecord | null {
  if (lease === undefined) {
    if (current && isLive(current, now)) throw heldBy(call, runId, current);
    return current;
  }
  if (!isCurrent(current, lease)) throw leaseLost(call, lease, current);
  const c = current as LeaseRecord;
  return { ...c, expiresAt: Math.max(c.expiresAt ?? 0, now + lease.leaseMs) };
}

/** Resolves after `ms`, or rejects with `signal`'s reason as soon as it aborts. */
function pauseFor(ms: number, signal: AbortSignal | null): Promise<void> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}

/** The first pause between claim attempts, doubling up to the last: a release is seen within 100 ms. */
const FIRST_PAUSE_MS = 5;
const MAX_PAUSE_MS = 100;

/**
 * Calls `attempt` (one claim) until it returns, or until it has failed with `RunBusyError` for
 * `wait` ms — by the process's monotonic clock or by `storeNow` (the store's clock, when it has
 * one in this process), whichever passes first: a test that moves an injected store clock past
 * the wait ends it without sleeping, and a frozen one cannot stretch it. Pauses back off from
 * 5 ms to 100 ms, never past the holder's `until` or the deadline. Given the checked claim (its
 * `wait` and `signal`), an aborted signal stops it with the signal's reason.
 * @throws RunBusyError from the last attempt, saying how long it waited.
 */
export async function claimWithin<T = Lease>(
  within: number | { wait: number; signal?: AbortSignal | null },
  storeNow: (() => number) | undefined,
  attempt: () => Promise<T>,
): Promise<T> {
  // `within`: the claim's wait, or the checked claim itself, whose signal then stops the pauses.
  const { wait, signal = null } = typeof within === 'number' ? { wait: within } : within;
  signal?.throwIfAborted();
  const started = performance.now();
  const storeStarted = wait > 0 ? storeNow?.() : undefined;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RunBusyError) || wait === 0) throw error;
      const storeTime = storeNow?.();
      const waited = Math.max(
        performance.now() - started,
        storeTime === undefined || storeStarted === undefined ? 0 : storeTime - storeStarted,
      );
      const left = wait - waited;
      if (left <= 0) {
        const held = { token: error.token, process: error.holderProcess };
        throw busyError('claim', error.runId as string, error.holder, error.until, wait, held);
      }
      const untilIn = Date.parse(error.until) - (storeTime ?? Date.now());
      await pauseFor(Math.max(1, Math.min(pause, left, untilIn > 0 ? untilIn : pause)), signal);
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }
}
