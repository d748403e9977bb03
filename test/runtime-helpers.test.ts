/**
 * The runtime's small total functions, each on the inputs a hostile policy, tool or server can
 * hand it: what a call returned (`unwrap`), a thrown value given its time (`withElapsed`), a
 * tool's approval rule (`approvalRule`) and a server's retry-after (`retryAfterMs`).
 */
import { describe, expect, it } from 'vitest';
import { approvalRule } from '../src/runtime/approval.js';
import { earliest, withDeadline } from '../src/runtime/deadline.js';
import { retryAfterMs } from '../src/runtime/retry-after.js';
import { unwrap, withElapsed } from '../src/runtime/returned.js';
import { ManualClock } from '../src/testing/index.js';
import type { Tool } from '../src/types.js';

const throwing = (what: string) =>
  new Proxy(
    {},
    {
      get() {
        throw new Error(what);
      },
    },
  );

describe('unwrap', () => {
  it('awaits a promise, and a function that is a thenable', async () => {
    expect(await unwrap(Promise.resolve(7))).toEqual({ value: 7 });
    // biome-ignore lint/suspicious/noThenProperty: a thenable is what this test hands in
    const callable = Object.assign(() => 1, { then: (resolve: (v: unknown) => void) => resolve(42) });
    expect(await unwrap(callable)).toEqual({ value: 42 });
  });

  it('hands back anything else unread and unawaited, the very value', async () => {
    // biome-ignore lint/suspicious/noThenProperty: a `then` that is not a function is what this test hands in
    const notThenable = { then: 5 };
    expect((await unwrap(notThenable)).value).toBe(notThenable);
    const fn = () => 1;
    expect((await unwrap(fn)).value).toBe(fn);
    for (const value of [null, undefined, 0, 'text', false]) expect(await unwrap(value)).toEqual({ value });
  });

  it('a value whose `then` cannot be read is data, not a throw: the JSON copy reports it later', async () => {
    const hostile = throwing('then');
    expect((await unwrap(hostile)).value).toBe(hostile);
  });
});

describe('withElapsed', () => {
  it('writes the time on the thrown error itself, and hands back that very error', () => {
    const error = new TypeError('boom');
    expect(withElapsed(error, 12)).toBe(error);
    expect(error).toMatchObject({ elapsedMs: 12, message: 'boom' });
  });

  it('a frozen, sealed or primitive throw, or a thrown function, is not written to: a stand-in with its name, message and cause', () => {
    const frozen = Object.freeze(new RangeError('frozen'));
    const sealed = Object.seal(Object.assign(new TypeError('sealed'), { elapsedMs: 0 }));
    const fn = Object.assign(() => {}, { message: 'x' });
    for (const [thrown, name, message] of [
      [frozen, 'RangeError', 'frozen'],
      [sealed, 'TypeError', 'sealed'],
      ['a string', 'Error', 'a string'],
    ] as const) {
      const out = withElapsed(thrown, 12) as Error & { elapsedMs: number };
      expect(out).not.toBe(thrown);
      expect(out).toBeInstanceOf(Error);
      expect({ name: out.name, message: out.message, elapsedMs: out.elapsedMs }).toEqual({
        name,
        message,
        elapsedMs: 12,
      });
      expect(out.cause).toBe(thrown);
    }
    expect(sealed.elapsedMs).toBe(0);
    const fromFn = withElapsed(fn, 5) as Error & { elapsedMs: number };
    expect(fromFn).not.toBe(fn);
    expect(fromFn.elapsedMs).toBe(5);
    expect(fromFn.cause).toBe(fn);
  });

  it('an error that ignores the write (a setter that drops it) gets a stand-in carrying the time', () => {
    const error = new Error('deaf');
    Object.defineProperty(error, 'elapsedMs', { get: () => 0, set: () => {} });
    const out = withElapsed(error, 9) as Error & { elapsedMs: number };
    expect(out).not.toBe(error);
    expect(out.elapsedMs).toBe(9);
    expect(out.message).toBe('deaf');
  });

  it('a Proxy whose every trap throws gets a stand-in', () => {
    const out = withElapsed(throwing('trap'), 3) as Error & { elapsedMs: number };
    expect(out).toBeInstanceOf(Error);
    expect(out.elapsedMs).toBe(3);
  });
});

describe('approvalRule', () => {
  const ctx = { runId: 'r', step: 1, tool: 't', history: () => [] };
  const rule = (needsApproval: Tool['needsApproval'], extra: Partial<Tool> = {}) =>
    approvalRule({ name: 't', fn: () => null, needsApproval, ...extra }, { a: 1 }, ctx);

  it('without a function: needsApproval, else sideEffect, else no', async () => {
    expect(await rule(undefined)).toEqual({ kind: 'run' });
    expect(await rule(undefined, { sideEffect: true })).toEqual({ kind: 'ask' });
    expect(await rule(false, { sideEffect: true })).toEqual({ kind: 'run' });
    expect(await rule(true)).toEqual({ kind: 'ask' });
  });

  it('false runs, { deny } denies with the reason as text, anything else asks: the gate fails closed', async () => {
    expect(await rule(() => false)).toEqual({ kind: 'run' });
    expect(await rule(async () => false)).toEqual({ kind: 'run' });
    expect(await rule(() => ({ deny: 'not on Sundays' }))).toEqual({ kind: 'deny', reason: 'not on Sundays' });
    expect(await rule((() => ({ deny: 42 })) as never)).toEqual({ kind: 'deny', reason: '42' });
    for (const answer of [true, null, undefined, 0, 'false', {}, [], { denied: 'x' }]) {
      expect(await rule((() => answer) as never)).toEqual({ kind: 'ask' });
    }
    // A function is not a `{ deny }` object, even with a `deny` property.
    expect(await rule((() => Object.assign(() => {}, { deny: 'x' })) as never)).toEqual({ kind: 'ask' });
  });

  it('copies the history only for a rule that is a function, and gives it the copy', async () => {
    const entries = [{ role: 'user', content: 'go' }] as const;
    let copies = 0;
    const site = {
      runId: 'r',
      step: 1,
      tool: 't',
      history: () => {
        copies++;
        return entries;
      },
    };
    const tool = (extra: Partial<Tool>) => ({ name: 't', fn: () => null, ...extra });
    await approvalRule(tool({ sideEffect: true }), { a: 1 }, site);
    await approvalRule(tool({ needsApproval: false }), { a: 1 }, site);
    expect(copies).toBe(0);
    let seen: unknown = null;
    const needsApproval: Tool['needsApproval'] = (_args, ctx) => {
      seen = ctx;
      return false;
    };
    await approvalRule(tool({ needsApproval }), { a: 1 }, site);
    expect(copies).toBe(1);
    expect(seen).toEqual({ runId: 'r', step: 1, tool: 't', history: entries });
  });

  it('a reason is kept to 1,000 characters', async () => {
    const exactly = 'r'.repeat(1_000);
    expect(await rule(() => ({ deny: exactly }))).toEqual({ kind: 'deny', reason: exactly });
    expect(await rule(() => ({ deny: `${exactly}s` }))).toEqual({ kind: 'deny', reason: `${exactly}…` });
  });

  it('a rule that throws, or whose deny cannot be read, asks a human', async () => {
    expect(
      await rule(() => {
        throw new Error('broken rule');
      }),
    ).toEqual({ kind: 'ask' });
    expect(await rule(() => Promise.reject(new Error('broken')))).toEqual({ kind: 'ask' });
    const unreadable = {
      get deny(): string {
        throw new Error('no');
      },
    };
    expect(await rule((() => unreadable) as never)).toEqual({ kind: 'ask' });
  });

  it('the rule gets the arguments frozen', async () => {
    let frozen = false;
    await rule((args) => {
      frozen = Object.isFrozen(args);
      return false;
    });
    expect(frozen).toBe(true);
  });
});

describe('retryAfterMs, on hostile and edge values', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const record = (headers: Record<string, unknown>) => ({ responseHeaders: headers });

  it('zero is a delay of zero, not "none"', () => {
    expect(retryAfterMs(record({ 'retry-after-ms': '0' }), now)).toBe(0);
    expect(retryAfterMs(record({ 'retry-after': '0' }), now)).toBe(0);
  });

  it('a negative or blank retry-after-ms falls back to retry-after; blank retry-after is none', () => {
    expect(retryAfterMs(record({ 'retry-after-ms': '-5', 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterMs(record({ 'retry-after-ms': '   ', 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterMs(record({ 'retry-after': '' }), now)).toBeNull();
    expect(retryAfterMs(record({ 'retry-after': '   ' }), now)).toBeNull();
  });

  it('looks past a missing or empty first source to the next', () => {
    expect(retryAfterMs({ headers: null, responseHeaders: { 'retry-after': '3' } }, now)).toBe(3000);
    expect(retryAfterMs({ headers: new Headers(), responseHeaders: { 'retry-after': '3' } }, now)).toBe(3000);
  });

  it('a header that is not a string, or an error that is not an object, is none', () => {
    expect(retryAfterMs(record({ 'retry-after': 3 }), now)).toBeNull();
    expect(retryAfterMs(record({ 'retry-after-ms': 30 }), now)).toBeNull();
    const fn = Object.assign(() => {}, { headers: new Headers({ 'retry-after': '2' }) });
    expect(retryAfterMs(fn, now)).toBeNull();
  });
});

describe('earliest and withDeadline', () => {
  it('earliest: the least bound, nulls and undefineds being none, wherever they stand', () => {
    expect(earliest(undefined, 5, null, 3)).toBe(3);
    expect(earliest(null, undefined)).toBeNull();
    expect(earliest(undefined, 5)).toBe(5);
  });

  it('arms one timer for the time left, on the run’s clock', async () => {
    const clock = new ManualClock(0);
    const asked: number[] = [];
    const sleep = clock.sleep.bind(clock);
    clock.sleep = (ms, signal) => {
      asked.push(ms);
      return sleep(ms, signal);
    };
    const done = withDeadline(
      () => new Promise(() => {}),
      () => 1_000 - clock.now(),
      new AbortController(),
      clock,
      () => new Error('late'),
    );
    await new Promise((r) => setImmediate(r));
    expect(asked).toEqual([1_000]);
    clock.advance(1_000);
    await expect(done).rejects.toThrow('late');
  });

  it('a parent already aborted aborts the call’s signal at once', async () => {
    const parent = new AbortController();
    parent.abort(new Error('cancelled'));
    let seen: AbortSignal | undefined;
    await withDeadline(
      (source) => {
        seen = source.signal;
        return 1;
      },
      () => 1_000,
      parent,
      new ManualClock(0),
      () => new Error('late'),
    );
    expect(seen?.aborted).toBe(true);
  });

  it('a call that finished is not aborted by a later abort of its parent', async () => {
    const parent = new AbortController();
    let seen: AbortSignal | undefined;
    await withDeadline(
      (source) => {
        seen = source.signal;
        return 1;
      },
      () => 1_000,
      parent,
      new ManualClock(0),
      () => new Error('late'),
    );
    parent.abort(new Error('cancelled afterwards'));
    expect(seen?.aborted).toBe(false);
  });

  it('without a deadline, the call gets its source as it is, and its signal is not read for it', async () => {
    let reads = 0;
    const source = {
      get signal() {
        reads++;
        return new AbortController().signal;
      },
    };
    let given: unknown;
    const value = await withDeadline(
      (s) => {
        given = s;
        return 7;
      },
      () => null,
      source,
      new ManualClock(0),
      () => new Error('late'),
    );
    expect(value).toBe(7);
    expect(given).toBe(source);
    expect(reads).toBe(0);
  });
});
