/**
 * Pure tools in parallel (the Agent's `concurrency`): the calls of one step whose tools are not
 * side-effecting and need no approval run side by side, at most `concurrency` at a time; their
 * results go into the history in call order whatever order they end in; a side effect runs alone,
 * in order; a crash between two completions runs again only the calls without an outcome; a
 * timeout ends one call only; cancelling aborts every call in flight.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  Agent,
  CheckpointError,
  type HistoryEntry,
  type Policy,
  type RunEvent,
  type Tool,
  type ToolContext,
} from '../src/index.js';
import { joinRun } from '../src/store/contract.js';
import { SqliteStore } from '../src/stores/sqlite.js';
import { checkInvariants, ManualClock } from '../src/testing/index.js';

/** A pure tool whose calls end when the test says: `end(q)` resolves the call for `q`. */
function gated(name = 'look') {
  const waiting = new Map<string, (value: string) => void>();
  const signals = new Map<string, AbortSignal>();
  const started: string[] = [];
  const ran: string[] = [];
  let inFlight = 0;
  let most = 0;
  const tool: Tool = {
    name,
    fn: (args: { q: string }, _key: string, ctx: ToolContext) =>
      new Promise<string>((resolve) => {
        started.push(args.q);
        signals.set(args.q, ctx.signal);
        inFlight++;
        most = Math.max(most, inFlight);
        waiting.set(args.q, (value) => {
          inFlight--;
          ran.push(args.q);
          resolve(value);
        });
      }),
  };
  return {
    tool,
    started,
    ran,
    signals,
    get most() {
      return most;
    },
    /** Waits until the calls for `qs` are in flight. */
    async running(...qs: string[]) {
      await vi.waitFor(() => expect([...waiting.keys()]).toEqual(expect.arrayContaining(qs)), { interval: 1 });
    },
    /** Ends the call for `q` with a result, and lets the run record it. */
    async end(q: string) {
      const resolve = waiting.get(q);
      if (!resolve) throw new Error(`no call for ${q} in flight`);
      waiting.delete(q);
      resolve(`found ${q}`);
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    },
  };
}

/** Asks for one look-up per query in one step, then answers. */
const lookUp =
  (qs: readonly string[], tool = 'look'): Policy =>
  (history) =>
    history.some((e) => e.role === 'tool') ? { final: 'done' } : { calls: qs.map((q) => ({ tool, args: { q } })) };

/** The calls of the checkpoint's step, by state. */
function callStates(agent: Agent): string[] {
  const blob = JSON.parse(agent.checkpoint()) as { snapshot: { context: { calls: { state: string }[] } } };
  return blob.snapshot.context.calls.map((c) => c.state);
}

const toolEntries = (history: readonly HistoryEntry[]) => history.filter((e) => e.role === 'tool');

describe('pure tools in parallel', () => {
  it('runs the step’s pure calls side by side and records them in call order, whatever order they end in', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b', 'c']), tools: [look.tool] });
    const status = agent.start('look up three');
    await look.running('a', 'b', 'c'); // all three in flight before any ended
    expect(callStates(agent)).toEqual(['running', 'running', 'running']);
    await look.end('c');
    expect(callStates(agent)).toEqual(['running', 'running', 'done']);
    await look.end('a');
    await look.end('b');
    expect(await status).toBe('done');
    expect(toolEntries(agent.state.history)).toEqual([
      { role: 'tool', tool: 'look', id: 'p:1.1', result: 'found a' },
      { role: 'tool', tool: 'look', id: 'p:1.2', result: 'found b' },
      { role: 'tool', tool: 'look', id: 'p:1.3', result: 'found c' },
    ]);
    expect(look.ran).toEqual(['c', 'a', 'b']);
    expect(await checkInvariants(agent)).toEqual([]);
  });

  it('runs at most `concurrency` calls at once; 1 runs them one at a time, in order', async () => {
    for (const concurrency of [1, 2, 3]) {
      const look = gated();
      const qs = ['a', 'b', 'c', 'd', 'e'];
      const agent = new Agent({ runId: 'p', policy: lookUp(qs), tools: [look.tool], concurrency });
      const status = agent.start('look up five');
      for (const q of qs) {
        await look.running(q);
        await look.end(q);
      }
      expect(await status).toBe('done');
      expect(look.most).toBe(concurrency);
      if (concurrency === 1) expect(look.started).toEqual(qs);
      expect(toolEntries(agent.state.history).map((e) => ('result' in e ? e.result : null))).toEqual(
        qs.map((q) => `found ${q}`),
      );
    }
  });

  it('runs a side effect alone and in order: after the pure calls before it, before those after it', async () => {
    const events: string[] = [];
    const look = gated();
    const refund: Tool = {
      name: 'refund',
      sideEffect: true,
      needsApproval: false,
      fn: () => {
        events.push(`refund started with ${look.ran.join('')} ended, ${look.started.join('')} started`);
        return 'refunded';
      },
    };
    const policy: Policy = (history) =>
      history.some((e) => e.role === 'tool')
        ? { final: 'done' }
        : {
            calls: [
              { tool: 'look', args: { q: 'a' } },
              { tool: 'look', args: { q: 'b' } },
              { tool: 'refund', args: {} },
              { tool: 'look', args: { q: 'c' } },
              { tool: 'look', args: { q: 'd' } },
            ],
          };
    const agent = new Agent({ runId: 'p', policy, tools: [look.tool, refund] });
    const status = agent.start('mixed');
    await look.running('a', 'b');
    expect(callStates(agent)).toEqual(['running', 'running', 'queued', 'queued', 'queued']);
    await look.end('b');
    await look.end('a');
    await look.running('c', 'd');
    expect(events).toEqual(['refund started with ba ended, ab started']);
    await look.end('d');
    await look.end('c');
    expect(await status).toBe('done');
    expect(toolEntries(agent.state.history).map((e) => e.tool)).toEqual(['look', 'look', 'refund', 'look', 'look']);
    expect(await checkInvariants(agent)).toEqual([]);
  });

  it('never runs a call that needs approval side by side: the pure calls after it wait for the human', async () => {
    const look = gated();
    const refund: Tool = { name: 'refund', sideEffect: true, fn: () => 'refunded' };
    const policy: Policy = (history) =>
      history.some((e) => e.role === 'tool')
        ? { final: 'done' }
        : {
            calls: [
              { tool: 'look', args: { q: 'a' } },
              { tool: 'look', args: { q: 'b' } },
              { tool: 'refund', args: {} },
              { tool: 'look', args: { q: 'c' } },
              { tool: 'look', args: { q: 'd' } },
            ],
          };
    const agent = new Agent({ runId: 'p', policy, tools: [look.tool, refund] });
    const status = agent.start('mixed');
    await look.running('a', 'b');
    expect(callStates(agent)).toEqual(['running', 'running', 'pending', 'queued', 'queued']);
    await look.end('a');
    await look.end('b');
    expect(await status).toBe('awaiting_approval');
    expect(look.started).toEqual(['a', 'b']); // c and d wait behind the pending refund
    const pending = agent.state.pendingCalls;
    const decided = agent.decide(Object.fromEntries(pending.map((p) => [p.id, { approve: true, note: 'ok' }])));
    await look.running('c', 'd');
    await look.end('c');
    await look.end('d');
    expect(await decided).toBe('done');
    expect(await checkInvariants(agent)).toEqual([]);
  });

  it('a timeout ends its own call only: the others keep their results', async () => {
    const slow: Tool = {
      name: 'slow',
      timeoutMs: 1_000,
      fn: (args: { q: string }, _key, ctx) =>
        args.q === 'stuck'
          ? new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
          : `found ${args.q}`,
    };
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'stuck', 'b'], 'slow'), tools: [slow], clock });
    const status = agent.start('with a stuck one');
    await vi.waitFor(() => expect(clock.sleepers).toBeGreaterThan(0), { interval: 1 });
    expect(callStates(agent)).toEqual(['done', 'running', 'done']);
    clock.advance(1_000);
    expect(await status).toBe('done');
    expect(toolEntries(agent.state.history)).toEqual([
      { role: 'tool', tool: 'slow', id: 'p:1.1', result: 'found a' },
      { role: 'tool', tool: 'slow', id: 'p:1.2', error: 'TimeoutError: tool slow timed out after 1000 ms' },
      { role: 'tool', tool: 'slow', id: 'p:1.3', result: 'found b' },
    ]);
    // The batch took 1,000 ms, counted once (not once per call).
    expect(agent.state.activeMs).toBe(1_000);
  });

  it('counts a batch’s time once: three calls side by side for 20 ms spend 20 ms of active time', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b', 'c']), tools: [look.tool], clock });
    const status = agent.start('three');
    await look.running('a', 'b', 'c');
    clock.advance(5);
    await look.end('b');
    clock.advance(15);
    await look.end('a');
    await look.end('c');
    expect(await status).toBe('done');
    expect(agent.state.activeMs).toBe(20);
  });

  it('cancelling aborts every call in flight; the calls that ended keep their record', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b', 'c']), tools: [look.tool] });
    const status = agent.start('three');
    await look.running('a', 'b', 'c');
    await look.end('b');
    expect(await agent.cancel('enough')).toBe('cancelled');
    expect(await status).toBe('cancelled');
    expect(look.signals.get('a')?.aborted).toBe(true);
    expect(look.signals.get('c')?.aborted).toBe(true);
    expect(toolEntries(agent.state.history)).toEqual([{ role: 'tool', tool: 'look', id: 'p:1.2', result: 'found b' }]);
    // A call that ignores its signal and ends later is nobody's: nothing is sent to the ended run.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      await look.end('a');
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
    expect(agent.status).toBe('cancelled');
  });

  it('passes over calls refused at once: the pure calls around them still run side by side', async () => {
    const look = gated();
    const policy: Policy = (history) =>
      history.some((e) => e.role === 'tool')
        ? { final: 'done' }
        : {
            calls: [
              { tool: 'nope', args: {} },
              { tool: 'look', args: { q: 'a' } },
              { tool: 'look', args: { q: 'b' } },
            ],
          };
    const agent = new Agent({ runId: 'p', policy, tools: [look.tool] });
    const status = agent.start('with an unknown tool first');
    await look.running('a', 'b');
    expect(callStates(agent)).toEqual(['done', 'running', 'running']);
    await look.end('b');
    await look.end('a');
    expect(await status).toBe('done');
    expect(toolEntries(agent.state.history).map((e) => ('error' in e ? e.error : e.result))).toEqual([
      'unknown tool nope',
      'found a',
      'found b',
    ]);
  });

  it('reports each call of a batch to observers as it starts', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b']), tools: [look.tool] });
    const seen: RunEvent[] = [];
    agent.observe((e) => seen.push(e));
    const status = agent.start('two');
    await look.running('a', 'b');
    await look.end('a');
    await look.end('b');
    await status;
    expect(seen.filter((e) => e.type === 'executing').map((e) => e.type === 'executing' && e.call.key)).toEqual([
      'p:1.1',
      'p:1.2',
    ]);
  });

  it('refuses a concurrency that is not a whole number from 1 to 64', () => {
    for (const concurrency of [0, 65, 1.5, '2', null]) {
      expect(() => new Agent({ runId: 'p', policy: lookUp(['a']), tools: [], concurrency } as never)).toThrow(
        /concurrency must be a whole number from 1 to 64/,
      );
    }
  });
});

describe('a crash in the middle of a batch', () => {
  /** Every order of `qs`. */
  const orders = (qs: readonly string[]): string[][] =>
    qs.length <= 1
      ? [[...qs]]
      : qs.flatMap((q, i) => orders([...qs.slice(0, i), ...qs.slice(i + 1)]).map((o) => [q, ...o]));

  it('runs again only the calls without an outcome, for every order of completion and every crash point', async () => {
    const qs = ['a', 'b', 'c'];
    for (const order of orders(qs)) {
      for (let ended = 0; ended <= qs.length; ended++) {
        const look = gated();
        const agent = new Agent({ runId: 'p', policy: lookUp(qs), tools: [look.tool] });
        const life = new AbortController();
        const first = agent.start('three', { signal: life.signal });
        await look.running(...qs);
        for (const q of order.slice(0, ended)) await look.end(q);
        const blob = agent.checkpoint();
        life.abort(); // the process dies here, as a crash would (unless its run had ended)
        await first.catch(() => {});
        const again = gated();
        const resumed = Agent.resume(blob, { policy: lookUp(qs), tools: [again.tool] });
        const status = resumed.run();
        const left = order.slice(ended);
        if (left.length > 0) await again.running(...left);
        for (const q of left) await again.end(q);
        expect(await status).toBe('done');
        expect(again.started.sort()).toEqual([...left].sort());
        expect(toolEntries(resumed.state.history)).toEqual([
          { role: 'tool', tool: 'look', id: 'p:1.1', result: 'found a' },
          { role: 'tool', tool: 'look', id: 'p:1.2', result: 'found b' },
          { role: 'tool', tool: 'look', id: 'p:1.3', result: 'found c' },
        ]);
        expect(await checkInvariants(resumed)).toEqual([]);
      }
    }
  });

  it('a run saved mid-batch in SQLite and loaded by another owner runs only the calls without an outcome', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-batch-'));
    const store = new SqliteStore({ path: join(dir, 'runs.db') });
    try {
      const look = gated();
      const life = new AbortController();
      const agent = new Agent({ runId: 'p', store, policy: lookUp(['a', 'b', 'c']), tools: [look.tool] });
      const status = agent.start('three', { signal: life.signal });
      await look.running('a', 'b', 'c');
      await look.end('b');
      agent.extendBudget({ maxSteps: 10 }); // saves the run as it stands: b done, a and c in flight
      await vi.waitFor(async () => {
        const stored = await store.load('p');
        const run = stored ? JSON.parse(joinRun(stored.head, [], stored.base)) : null;
        expect(run?.snapshot.value).toEqual({ running: 'batching' });
        expect(run?.snapshot.context.calls.map((c: { state: string }) => c.state)).toEqual([
          'running',
          'done',
          'running',
        ]);
      });
      life.abort(); // this owner dies
      await expect(status).rejects.toThrow();
      const again = gated();
      const loaded = await Agent.load(store, 'p', { policy: lookUp(['a', 'b', 'c']), tools: [again.tool] });
      const done = loaded.run();
      await again.running('a', 'c');
      await again.end('a');
      await again.end('c');
      expect(await done).toBe('done');
      expect(again.started.sort()).toEqual(['a', 'c']);
      expect(toolEntries(loaded.state.history).map((e) => ('result' in e ? e.result : null))).toEqual([
        'found a',
        'found b',
        'found c',
      ]);
      expect(await checkInvariants(loaded)).toEqual([]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never runs a side effect side by side, even from a checkpoint that says so: it is asked about again', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b']), tools: [look.tool] });
    void agent.start('two');
    await look.running('a', 'b');
    const blob = agent.checkpoint();
    // The tool set changed at resume: `look` is now a side effect. Its calls were in flight.
    let effects = 0;
    const effect: Tool = { name: 'look', sideEffect: true, fn: () => ++effects };
    const resumed = Agent.resume(blob, { policy: lookUp(['a', 'b']), tools: [effect] });
    expect(await resumed.run()).toBe('awaiting_approval');
    expect(effects).toBe(0);
    expect(resumed.state.pendingCalls.map((p) => [p.key, p.outcome])).toEqual([
      ['p:1.1', 'unknown'],
      ['p:1.2', 'unknown'],
    ]);
    expect(await checkInvariants(resumed)).toEqual([]);
  });

  it('a call whose tool became a side effect at resume runs after the others of its batch, alone', async () => {
    const look = gated();
    const fetchGate = gated('fetch');
    const policy: Policy = (history) =>
      history.some((e) => e.role === 'tool')
        ? { final: 'done' }
        : {
            calls: [
              { tool: 'fetch', args: { q: 'f' } },
              { tool: 'look', args: { q: 'a' } },
            ],
          };
    const agent = new Agent({ runId: 'p', policy, tools: [fetchGate.tool, look.tool] });
    const life = new AbortController();
    const first = agent.start('two', { signal: life.signal });
    await look.running('a');
    await fetchGate.running('f');
    const blob = agent.checkpoint();
    life.abort();
    await first.catch(() => {});
    // Resumed with `fetch` a side effect (idempotent, needing no approval): it is written ahead and
    // runs alone, once `look` ended.
    const events: string[] = [];
    const again = gated();
    const fetch: Tool = {
      name: 'fetch',
      sideEffect: true,
      idempotent: true,
      needsApproval: false,
      fn: () => {
        events.push(`fetch with ${again.ran.join('') || 'nothing'} ended`);
        return 'fetched';
      },
    };
    const resumed = Agent.resume(blob, { policy, tools: [fetch, again.tool] });
    const status = resumed.run();
    await again.running('a');
    expect(events).toEqual([]);
    await again.end('a');
    expect(await status).toBe('done');
    expect(events).toEqual(['fetch with a ended']);
    expect(toolEntries(resumed.state.history).map((e) => ('result' in e ? e.result : e.error))).toEqual([
      'fetched',
      'found a',
    ]);
  });

  it('resumes a batch whose calls had all ended before its end was recorded: it runs nothing again', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b']), tools: [look.tool] });
    void agent.start('two');
    await look.running('a', 'b');
    const blob = JSON.parse(agent.checkpoint());
    // What a checkpoint taken between the last call's outcome and the batch's end holds.
    for (const call of blob.snapshot.context.calls)
      Object.assign(call, { state: 'done', done: { result: `found ${call.args.q}` } });
    const again = gated();
    const resumed = Agent.resume(JSON.stringify(blob), { policy: lookUp(['a', 'b']), tools: [again.tool] });
    expect(await resumed.run()).toBe('done');
    expect(again.started).toEqual([]);
    expect(toolEntries(resumed.state.history).map((e) => ('result' in e ? e.result : null))).toEqual([
      'found a',
      'found b',
    ]);
  });

  it('refuses a checkpoint whose batch breaks the rules', async () => {
    const look = gated();
    const agent = new Agent({ runId: 'p', policy: lookUp(['a', 'b', 'c']), tools: [look.tool] });
    void agent.start('three');
    await look.running('a', 'b', 'c');
    const blob = JSON.parse(agent.checkpoint());
    const forged = (change: (calls: Record<string, unknown>[]) => void) => {
      const copy = structuredClone(blob);
      change(copy.snapshot.context.calls);
      return JSON.stringify(copy);
    };
    const options = { policy: lookUp(['a']), tools: [look.tool] };
    // A call that runs side by side without being one that may.
    expect(() =>
      Agent.resume(
        forged((calls) => {
          delete calls[1]?.concurrent;
        }),
        options,
      ),
    ).toThrow(CheckpointError);
    // One that may, with an approval.
    expect(() =>
      Agent.resume(
        forged((calls) => {
          (calls[0] as Record<string, unknown>).approval = {
            approved: true,
            by: 'x',
            note: '',
            at: '2026-01-01T00:00:00.000Z',
            callId: calls[0]?.id,
          };
        }),
        options,
      ),
    ).toThrow(/concurrent/);
    // A call running after one that waits.
    expect(() =>
      Agent.resume(
        forged((calls) => {
          Object.assign(calls[1] as object, { state: 'queued' });
        }),
        options,
      ),
    ).toThrow(/waits/);
  });

  it('holds for any number of calls, concurrency, completion order, crash point and timeout (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            concurrency: fc.integer({ min: 1, max: 4 }),
            order: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
            crashAfter: fc.option(fc.integer({ min: 0, max: n - 1 }), { nil: null }),
            stuck: fc.option(fc.integer({ min: 0, max: n - 1 }), { nil: null }),
          }),
        ),
        async ({ n, concurrency, order, crashAfter, stuck }) => {
          const qs = [...Array(n).keys()].map((i) => `q${i}`);
          const runs = new Map<string, number>();
          let gates = new Map<string, () => void>();
          const fn = (args: { q: string }, _key: string, ctx: ToolContext) => {
            runs.set(args.q, (runs.get(args.q) ?? 0) + 1);
            const mine = gates;
            return new Promise<string>((resolve, reject) => {
              ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
              mine.set(args.q, () => resolve(`found ${args.q}`));
            });
          };
          // The stuck call's tool has a deadline; the others have none.
          const tools: Tool[] = [
            { name: 'look', fn },
            { name: 'slow', timeoutMs: 1_000, fn },
          ];
          const policy: Policy = (history) =>
            history.some((e) => e.role === 'tool')
              ? { final: 'done' }
              : { calls: qs.map((q, i) => ({ tool: i === stuck ? 'slow' : 'look', args: { q } })) };
          const settle = async () => {
            for (let i = 0; i < 8; i++) await new Promise((r) => setImmediate(r));
          };
          /** Ends `count` calls, each time the first in `order` that is in flight (the stuck one times out). */
          const drive = async (agent: Agent, clock: ManualClock, count: number) => {
            for (let k = 0; k < count; k++) {
              let next: number | undefined;
              await vi.waitFor(
                () => {
                  next = order.find((i) => gates.has(qs[i] as string) && callStates(agent)[i] === 'running');
                  expect(next).toBeDefined();
                },
                { interval: 1 },
              );
              const q = qs[next as number] as string;
              if (next === stuck) clock.advance(1_000);
              else gates.get(q)?.();
              gates.delete(q);
              await settle();
            }
          };
          let clock = new ManualClock();
          let agent = new Agent({ runId: 'p', policy, tools, concurrency, clock });
          const life = new AbortController();
          let status = agent.start('many', { signal: life.signal });
          if (crashAfter !== null) {
            await vi.waitFor(() => expect(callStates(agent)).toContain('running'), { interval: 1 });
            await drive(agent, clock, crashAfter);
            const done = callStates(agent).map((s) => s === 'done');
            const before = new Map(runs);
            const blob = agent.checkpoint();
            life.abort(); // the process dies here, as a crash would
            await expect(status).rejects.toThrow();
            gates = new Map();
            clock = new ManualClock();
            agent = Agent.resume(blob, { policy, tools, concurrency, clock });
            status = agent.run();
            await drive(agent, clock, done.filter((d) => !d).length);
            // Only the calls without an outcome ran again.
            for (const [i, q] of qs.entries()) {
              expect(runs.get(q) ?? 0).toBe((before.get(q) ?? 0) + (done[i] ? 0 : 1));
            }
          } else {
            await drive(agent, clock, n);
          }
          expect(await status).toBe('done');
          const entries = toolEntries(agent.state.history);
          expect(entries.map((e) => e.id)).toEqual(qs.map((_, i) => `p:1.${i + 1}`));
          for (const [i, e] of entries.entries()) {
            if (i === stuck) expect(e).toMatchObject({ error: 'TimeoutError: tool slow timed out after 1000 ms' });
            else expect(e).toMatchObject({ result: `found q${i}` });
          }
          expect(await checkInvariants(agent)).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
