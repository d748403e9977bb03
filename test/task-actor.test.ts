/**
 * The runtime's promise actors (src/runtime/task-actor.ts `fromTask`) against XState's
 * `fromPromise`, side by side: the same snapshots, the same stop, and a signal made only when
 * something reads it — aborted when the call is stopped, before or after it is read.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AnyActorLogic, createActor, fromPromise } from 'xstate';
import { Agent, type Policy, type Tool } from '../src/index.js';
import { CallAbort, fromTask } from '../src/runtime/task-actor.js';
import { gate, sequence, until } from './support/helpers.js';

const tick = () => new Promise((r) => setImmediate(r));

/** The snapshots an actor of `logic` goes through while `drive` settles or stops it. */
async function trace(logic: AnyActorLogic, drive: (actor: ReturnType<typeof createActor>) => Promise<void>) {
  const actor = createActor(logic, { input: { n: 1 } });
  const seen: unknown[] = [];
  actor.subscribe({ next: (s) => seen.push({ ...s }), error: () => {} });
  actor.start();
  seen.push({ ...actor.getSnapshot() });
  await drive(actor);
  await tick();
  return seen;
}

describe('fromTask', () => {
  afterEach(() => vi.unstubAllGlobals());

  for (const [name, settle] of [
    ['resolves', (d: ReturnType<typeof gate<unknown>>) => d.resolve({ out: 2 })],
    ['rejects', (d: ReturnType<typeof gate<unknown>>) => d.reject(new Error('no'))],
  ] as const) {
    it(`goes through fromPromise’s snapshots when its promise ${name}`, async () => {
      const ours = gate<unknown>();
      const theirs = gate<unknown>();
      const a = await trace(
        fromTask(() => ours.promise),
        async () => settle(ours),
      );
      const b = await trace(
        fromPromise(() => theirs.promise),
        async () => settle(theirs),
      );
      expect(a).toEqual(b);
      expect(a.length).toBeGreaterThan(1);
    });
  }

  it('stops as fromPromise does: the signal aborts with an AbortError, a later settling is ignored', async () => {
    const ours = gate<unknown>();
    const theirs = gate<unknown>();
    let ourSignal: AbortSignal | undefined;
    let theirSignal: AbortSignal | undefined;
    const a = await trace(
      fromTask(({ abort }) => {
        ourSignal = abort.signal;
        return ours.promise;
      }),
      async (actor) => {
        actor.stop();
        ours.resolve(1);
      },
    );
    const b = await trace(
      fromPromise(({ signal }) => {
        theirSignal = signal;
        return theirs.promise;
      }),
      async (actor) => {
        actor.stop();
        theirs.resolve(1);
      },
    );
    expect(a).toEqual(b);
    expect(ourSignal?.aborted).toBe(true);
    expect((ourSignal?.reason as Error | undefined)?.name).toBe('AbortError');
    expect((theirSignal?.reason as Error | undefined)?.name).toBe('AbortError');
  });

  it('makes no AbortController for a task that never reads its signal; one read after a stop is aborted', async () => {
    let made = 0;
    const Real = AbortController;
    vi.stubGlobal(
      'AbortController',
      class extends Real {
        constructor() {
          super();
          made++;
        }
      },
    );
    let abort: CallAbort | undefined;
    const held = gate<unknown>();
    const actor = createActor(
      fromTask((args) => {
        abort = args.abort;
        return held.promise;
      }),
    );
    actor.start();
    expect(abort?.aborted).toBe(false);
    actor.stop();
    expect(made).toBe(0);
    expect(abort?.aborted).toBe(true);
    expect(abort?.signal.aborted).toBe(true);
    expect(made).toBe(1);
  });

  it('restarts a task that was in flight in a restored snapshot, as fromPromise does (write-ahead relies on it)', async () => {
    const snapshot = { status: 'active', output: undefined, error: undefined, input: { n: 7 } };
    const ran: string[] = [];
    for (const [name, logic] of [
      ['ours', fromTask(async ({ input }: { input: { n: number } }) => input.n * 2)],
      ['theirs', fromPromise(async ({ input }: { input: { n: number } }) => input.n * 2)],
    ] as const) {
      const actor = createActor(logic as AnyActorLogic, { snapshot: snapshot as never });
      actor.start();
      await tick();
      expect(actor.getSnapshot()).toMatchObject({ status: 'done', output: 14 });
      ran.push(name);
      const done = createActor(logic as AnyActorLogic, {
        snapshot: { ...snapshot, status: 'done', output: 1 } as never,
      });
      done.start();
      await tick();
      expect(done.getSnapshot()).toMatchObject({ status: 'done', output: 1 });
    }
    expect(ran).toEqual(['ours', 'theirs']);
  });

  it('CallAbort: aborting twice keeps the first abort; a signal read first is the one aborted', () => {
    const abort = new CallAbort();
    const signal = abort.signal;
    expect(abort.signal).toBe(signal);
    abort.abort();
    const reason = signal.reason;
    abort.abort();
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(abort.signal).toBe(signal);
  });
});

describe('a call that reads its signal only after a cancel sees it aborted', () => {
  it('a tool', async () => {
    let ctx: { signal: AbortSignal } | undefined;
    const tool: Tool = {
      name: 'hold',
      fn: (_a, _k, c) => {
        ctx = c;
        return new Promise(() => {});
      },
    };
    const agent = new Agent({ policy: sequence({ tool: 'hold' }), tools: [tool] });
    const done = agent.start('go');
    await until(() => ctx !== undefined);
    await agent.cancel('stop');
    expect(ctx?.signal.aborted).toBe(true);
    expect(await done).toBe('cancelled');
  });

  it('a policy', async () => {
    let ctx: { signal: AbortSignal } | undefined;
    const policy: Policy = (_h, c) => {
      ctx = c;
      return new Promise(() => {});
    };
    const agent = new Agent({ policy, tools: [] });
    const done = agent.start('go');
    await until(() => ctx !== undefined);
    await agent.cancel('stop');
    expect(ctx?.signal.aborted).toBe(true);
    expect(await done).toBe('cancelled');
  });
});
