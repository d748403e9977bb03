/**
 * The argument rules every Tollgate store shares, so that all four behave alike: what a run id,
 * a write, an agent name and `list`'s options may hold, and how store options are checked (the
 * order `list` returns runs in: order.ts; the store's clock: clock.ts).
 * A custom store can use them too (`tollgate/store-kit` exports them).
 */
import { type PendingCall, STATUSES, type Status } from '../../machines/types.js';
import { MAX_TIMER_MS } from '../clock.js';
import { OptionsError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import type { ListOptions, RunWrite } from './contract.js';

export { MAX_TIMER_MS };

// A UTF-16 code unit that is half of a surrogate pair, alone.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `text` cannot be kept by a store, or null if it can. Stores keep text as UTF-8 (file
 * names, SQLite, Postgres): a lone surrogate has no UTF-8 form and would come back as U+FFFD —
 * two different run ids would become one — and Postgres's `text` cannot hold NUL at all.
 */
export function unstorableText(text: string): string | null {
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return `a NUL character at index ${nul}`;
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16);
    return `a lone surrogate (\\u${unit}) at index ${lone.index}, which UTF-8 cannot encode`;
  }
  return null;
}

/**
 * Throws `OptionsError` unless `runId` is a string every store can keep: no NUL, no lone
 * surrogate. Every store calls it first in `load`, `save` and `delete`, so they all refuse the same ids.
 */
export function checkRunId(call: string, runId: unknown): asserts runId is string {
  if (typeof runId !== 'string') throw new OptionsError(`${call}: run id must be a string, got ${showValue(runId)}`);
  const why = unstorableText(runId);
  if (why) throw new OptionsError(`${call}: run id ${showValue(runId)} holds ${why}; no store can keep it`);
}

/**
 * Checks `write` and returns it with its pending calls normalised: throws `OptionsError` unless
 * it is a well-formed `RunWrite` whose texts every store can keep. Heads and entries are JSON,
 * where NUL and lone surrogates appear only as `\u` escapes: raw ones mean the caller built the
 * text by hand. Each pending call must be an object whose `expiresAt` is null or an ISO-8601
 * time (any form `Date.parse` reads).
 *
 * A write in the one-call form of earlier Tollgate versions (`pending: call | null` instead of
 * `pendingCalls`) is read as `pendingCalls: [call]` or `[]`; giving both is an `OptionsError`.
 */
export function checkWrite(call: string, runId: unknown, write: RunWrite, expectedVersion: unknown): RunWrite {
  checkRunId(call, runId);
  const w = write as (Partial<RunWrite> & { pending?: unknown }) | null;
  const fail = (what: string, value: unknown): never => {
    throw new OptionsError(`${call}: ${what}, got ${showValue(value)} (run ${showValue(runId)})`);
  };
  if (w === null || typeof w !== 'object') return fail('the write must be an object', w);
  const { status, head, from, append } = w;
  if (!Number.isSafeInteger(expectedVersion) || (expectedVersion as number) < 0) {
    fail('expectedVersion must be a whole number ≥ 0', expectedVersion);
  }
  if (!STATUSES.includes(status as never)) fail(`write.status must be one of ${STATUSES.join(', ')}`, status);
  if (typeof head !== 'string') fail('write.head must be a string', head);
  if (!Number.isSafeInteger(from) || (from as number) < 0) fail('write.from must be a whole number ≥ 0', from);
  if (!Array.isArray(append)) fail('write.append must be an array of strings', append);
  const pendingCalls = pendingCallsOfWrite(w, fail);
  const base = (w as { base?: unknown }).base;
  const texts: [string, unknown][] = [
    ['write.head', head],
    ...(base === undefined ? [] : [['write.base', base] as [string, unknown]]),
    ...(append as unknown[]).map((e, i) => [`write.append[${i}]`, e] as [string, unknown]),
  ];
  for (const [what, text] of texts) {
    if (typeof text !== 'string') fail(`${what} must be a string`, text);
    const why = unstorableText(text as string);
    if (why) fail(`${what} holds ${why} (JSON text escapes it as \\u…); no store can keep it`, text);
  }
  const agent = (w as { agent?: unknown }).agent;
  if (agent !== undefined) checkAgentName(call, agent);
  const relaxed = (w as { relaxed?: unknown }).relaxed;
  if (relaxed !== undefined && typeof relaxed !== 'boolean') fail('write.relaxed must be true or false', relaxed);
  return {
    status: status as Status,
    head: head as string,
    from: from as number,
    append: append as string[],
    pendingCalls,
    ...(agent === undefined ? {} : { agent: agent as string }),
    ...(relaxed === true ? { relaxed } : {}),
    ...(base === undefined ? {} : { base: base as string }),
  };
}

/** The longest agent name a store keeps. */
export const MAX_AGENT_NAME_LENGTH = 256;

/** Throws `OptionsError` unless `name` is an agent name every store can keep: 1 to 256 characters. */
export function checkAgentName(call: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || name.length > MAX_AGENT_NAME_LENGTH) {
    throw new OptionsError(
      `${call}: the agent name must be a non-empty string of at most ${MAX_AGENT_NAME_LENGTH} characters, got ${showValue(name)}`,
    );
  }
  const why = unstorableText(name);
  if (why) throw new OptionsError(`${call}: the agent name ${showValue(name)} holds ${why}; no store can keep it`);
}

/**
 * The agent name a save stores: the write's, else the one stored. A run keeps one agent for
 * life: @throws OptionsError when a write names another agent than the stored one.
 */
export function agentAfterSave(runId: string, stored: string | null, written: string | undefined): string | null {
  if (written === undefined) return stored;
  if (stored !== null && stored !== written) {
    throw new OptionsError(
      `save: run ${showValue(runId)} belongs to agent ${showValue(stored)}; a save cannot move it to ${showValue(written)}`,
    );
  }
  return written;
}

/** A write's pending calls, checked; the one-call form (`pending`) read as a list of zero or one. */
function pendingCallsOfWrite(
  w: Partial<RunWrite> & { pending?: unknown },
  fail: (what: string, value: unknown) => never,
): PendingCall[] {
  let calls: unknown = w.pendingCalls;
  if ('pending' in w) {
    if (calls !== undefined) fail('give write.pendingCalls, not also write.pending', w.pending);
    if (w.pending === undefined || typeof w.pending !== 'object') {
      fail('write.pending must be an object or null', w.pending);
    }
    calls = w.pending === null ? [] : [w.pending];
  }
  if (!Array.isArray(calls)) return fail('write.pendingCalls must be an array of pending calls', calls);
  for (const [i, p] of calls.entries()) {
    if (p === null || typeof p !== 'object' || Array.isArray(p)) fail(`write.pendingCalls[${i}] must be an object`, p);
    const expiresAt = (p as { expiresAt?: unknown }).expiresAt;
    if (expiresAt !== null && !(typeof expiresAt === 'string' && Number.isFinite(Date.parse(expiresAt)))) {
      fail(`write.pendingCalls[${i}].expiresAt must be null or an ISO-8601 time`, expiresAt);
    }
  }
  return calls as PendingCall[];
}

/** Checks `list`'s options alike in every store: known keys, a real status, a boolean `expired`, a whole limit ≥ 0. */
export function checkListOptions(options: ListOptions | undefined): ListOptions {
  if (options === undefined) return {};
  checkKeys('list', options, ['status', 'expired', 'limit', 'agent', 'signal']);
  if (options.agent !== undefined) checkAgentName('list', options.agent);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new OptionsError(`list: signal must be an AbortSignal, got ${showValue(options.signal)}`);
  }
  if (options.status !== undefined && !STATUSES.includes(options.status)) {
    throw new OptionsError(`list: status must be one of ${STATUSES.join(', ')}, got ${showValue(options.status)}`);
  }
  if (options.expired !== undefined && typeof options.expired !== 'boolean') {
    throw new OptionsError(`list: expired must be true or false, got ${showValue(options.expired)}`);
  }
  checkLimit(options.limit);
  return options;
}

/**
 * A store's options object, strict: `undefined` is `{}`, and an unknown key is an `OptionsError`
 * naming the call and the key meant (`SqliteStore.open: unknown option "synchronus" (did you mean "synchronous"?)`).
 */
export function checkStoreOptions<T extends object>(call: string, options: T | undefined, known: readonly string[]): T {
  if (options === undefined) return {} as T;
  checkKeys(call, options, known);
  return options;
}

/**
 * A duration option in milliseconds: `fallback` when absent, else a whole number from `min` to
 * `MAX_TIMER_MS`. @throws OptionsError naming the call, the option and the bad value.
 */
export function checkDuration(call: string, name: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > MAX_TIMER_MS) {
    throw new OptionsError(
      `${call}: ${name} must be a whole number of milliseconds from ${min} to ${MAX_TIMER_MS}, got ${showValue(value)}`,
    );
  }
  return value as number;
}

/** The `now` option: absent, or a function returning ms since the epoch. */
export function checkClock(call: string, now: unknown): (() => number) | undefined {
  if (now !== undefined && typeof now !== 'function') {
    throw new OptionsError(
      `${call}: now must be a function returning milliseconds since the epoch, got ${showValue(now)}`,
    );
  }
  return now as (() => number) | undefined;
}

/** `list`'s `limit` must be a whole number ≥ 0 in every store; throws `OptionsError` otherwise. */
export function checkLimit(limit: number | undefined): void {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
    throw new OptionsError(`list: limit must be a non-negative integer, got ${String(limit)}`);
  }
}
