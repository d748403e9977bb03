/**
 * Workers and the approval queue, on the memory store: runs submitted and decided without
 * running anything in the caller, worked by workers; crash rules on take-over; expiry that fires
 * without `run()`; refusals that store nothing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ApprovalExpiredError,
  agentOptionsOf,
  ConflictError,
  defineAgent,
  EditRejectedError,
  NoPendingApprovalError,
  OptionsError,
  RunBusyError,
  StaleApprovalError,
  type Tool,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock, scriptedPolicy } from '../src/testing/index.js';
import { expireDue, recordDecision, submitRun, Worker, type WorkerEvent } from '../src/worker/index.js';
import { gate, mortal, recorder, until } from './support/helpers.js';

const mailing = (mail: Tool, extra: Record<string, unknown> = {}) =>
  defineAgent({
    name: 'mailer',
    policy: scriptedPolicy([{ tool: 'mail', args: { to: 'ops' } }, { final: 'sent' }]),
    tools: [mail],
    ...extra,
  });

const pendingId = async (store: MemoryStore, runId: string) => (await store.load(runId))?.pendingCalls[0]?.id ?? '';

describe('submit, decide, work', () => {
  it('a submitted run is started by a worker, decided through the queue, and applied by a worker', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const policyCalls: number[] = [];
    const def = mailing(mail.tool, {
      policy: (h: readonly unknown[]) => {
        policyCalls.push(h.length);
        return scriptedPolicy([{ tool: 'mail', args: { to: 'ops' } }, { final: 'sent' }])(h as never, {} as never);
      },
    });
    const runId = await submitRun(store, { agent: def, goal: 'tell ops', runId: 'r1' });
    expect(runId).toBe('r1');
    expect(policyCalls).toEqual([]); // nothing ran in the caller
    expect(await store.load('r1')).toMatchObject({ status: 'running', agent: 'mailer', decision: null });

    const worker = new Worker({ store, agents: [def] });
    expect(await worker.drain()).toBe(1);
    expect((await store.load('r1'))?.status).toBe('awaiting_approval');
    expect(mail.calls).toEqual([]);

    const callId = await pendingId(store, 'r1');
    const recorded = await recordDecision(store, 'r1', { [callId]: { approve: true, note: 'ok' } }, { by: 'ana' });
    expect(recorded).toMatchObject({ by: 'ana', decisions: { [callId]: { approve: true, note: 'ok' } } });
    expect(mail.calls).toEqual([]); // recording runs nothing
    expect((await store.load('r1'))?.decision).toMatchObject({ by: 'ana' });

    expect(await worker.drain()).toBe(1);
    const done = await store.load('r1');
    expect(done).toMatchObject({ status: 'done', decision: null, agent: 'mailer' });
    expect(mail.calls).toEqual([{ args: { to: 'ops' }, key: 'r1:1' }]);
    const loaded = await Agent.load(store, 'r1', { policy: def.policy, tools: [mail.tool] });
    expect(loaded.state.history.find((e) => e.role === 'tool')).toMatchObject({
      approval: { approved: true, by: 'ana', note: 'ok' },
    });
    expect(await worker.drain()).toBe(0);
  });

  it('a recorded decision is applied before a backlog of new runs submitted earlier (claim order)', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool);
    await submitRun(store, { agent: def, goal: 'tell ops', runId: 'waiting' });
    const worker = new Worker({ store, agents: [def], concurrency: 1 });
    expect(await worker.drain()).toBe(1); // 'waiting' now awaits a human
    for (let i = 0; i < 8; i++) await submitRun(store, { agent: def, goal: 'tell ops', runId: `backlog-${i}` });
    await recordDecision(store, 'waiting', { [await pendingId(store, 'waiting')]: { approve: true } }, { by: 'ana' });
    const claimed: string[] = [];
    worker.observe((event) => {
      if (event.type === 'claimed') claimed.push(event.runId);
    });
    await worker.drain();
    expect(claimed[0]).toBe('waiting'); // not behind the eight runs submitted before the decision
    expect(claimed.slice(1)).toEqual(Array.from({ length: 8 }, (_, i) => `backlog-${i}`));
    expect(mail.calls.map((c) => c.key)).toContain('waiting:1');
  });

  it('a run of pure tools is worked to the end and never asks', async () => {
    const store = new MemoryStore();
    const look = recorder('look');
    const def = defineAgent({
      name: 'reader',
      policy: scriptedPolicy([{ tool: 'look' }, { tool: 'look' }, { final: 'read' }]),
      tools: [look.tool],
    });
    await submitRun(store, { agent: def, goal: 'read', runId: 'p' });
    await new Worker({ store, agents: [def] }).drain();
    expect(await store.load('p')).toMatchObject({ status: 'done', pendingCalls: [] });
    expect(look.calls).toHaveLength(2);
  });

  it('a worker takes only runs of the agents it was given', async () => {
    const store = new MemoryStore();
    const a = defineAgent({ name: 'a', policy: scriptedPolicy([{ final: 'a' }]), tools: [] });
    const b = defineAgent({ name: 'b', policy: scriptedPolicy([{ final: 'b' }]), tools: [] });
    await submitRun(store, { agent: a, goal: 'x', runId: 'ra' });
    await submitRun(store, { agent: b, goal: 'x', runId: 'rb' });
    await new Worker({ store, agents: [a] }).drain();
    expect((await store.load('ra'))?.status).toBe('done');
    expect((await store.load('rb'))?.status).toBe('running');
  });

  it('runs started with a definition carry its name, so workers can take them up', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool);
    const agent = new Agent({ ...agentOptionsOf(def), store, runId: 'd' });
    await agent.start('go');
    expect(await store.load('d')).toMatchObject({ agent: 'mailer', status: 'awaiting_approval' });
    await recordDecision(store, 'd', true, { by: 'bo' });
    await new Worker({ store, agents: [def] }).drain();
    expect((await store.load('d'))?.status).toBe('done');
    expect(mail.calls).toHaveLength(1);
  });

  it('submitted limits replace the definition’s; the run cannot exceed them', async () => {
    const store = new MemoryStore();
    const look = recorder('look');
    const def = defineAgent({ name: 'loop', policy: () => ({ tool: 'look' }), tools: [look.tool], maxSteps: 50 });
    await submitRun(store, { agent: def, goal: 'x', runId: 'l', limits: { maxSteps: 2 } });
    await new Worker({ store, agents: [def] }).drain();
    expect((await store.load('l'))?.status).toBe('budget_exhausted');
    expect(look.calls).toHaveLength(2);
  });
});

describe('drain', () => {
  it('ends when the runs it claimed settled while its next claim was on its way', async () => {
    const store = new MemoryStore();
    const def = defineAgent({ name: 'quick', policy: scriptedPolicy([{ final: 'done' }]), tools: [] });
    await submitRun(store, { agent: def, goal: 'go', runId: 'q' });
    const worker = new Worker({ store, agents: [def] });
    let settled = () => {};
    const hasSettled = new Promise<void>((resolve) => {
      settled = resolve;
    });
    worker.observe((event) => {
      if (event.type === 'settled') settled();
    });
    // The second claim (which finds nothing) answers only once the first run has settled.
    const claimNext = store.claimNext.bind(store);
    let claims = 0;
    store.claimNext = async (options) => {
      if (++claims === 2) await hasSettled;
      return claimNext(options);
    };
    const drained = worker.drain();
    const timeout = new Promise((resolve) => setTimeout(() => resolve('still draining'), 2_000));
    expect(await Promise.race([drained, timeout])).toBe(1);
    expect((await store.load('q'))?.status).toBe('done');
  });
});

describe('several workers', () => {
  it('an approved call runs exactly once when workers race for the run', async () => {
    for (let round = 0; round < 5; round++) {
      const store = new MemoryStore();
      const mail = recorder('mail', { sideEffect: true });
      const def = mailing(mail.tool);
      const ids = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
      for (const runId of ids) await submitRun(store, { agent: def, goal: 'go', runId });
      const workers = [1, 2, 3].map((i) => new Worker({ store, agents: [def], concurrency: i, owner: `w${i}` }));
      await Promise.all(workers.map((w) => w.drain()));
      for (const runId of ids) {
        await recordDecision(store, runId, { [await pendingId(store, runId)]: { approve: true } }, { by: 'x' });
      }
      await Promise.all(workers.map((w) => w.drain()));
      for (const runId of ids) expect((await store.load(runId))?.status).toBe('done');
      expect(mail.calls.map((c) => c.key).sort()).toEqual(ids.map((id) => `${id}:1`));
    }
  });

  it('a dead worker’s run is taken over when its lease lapses; a call it had in flight is asked again', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const store = new MemoryStore({ now: () => clock.now() });
    const inFlight = gate<string>();
    const mail = recorder('mail', { sideEffect: true }, () => inFlight.promise);
    const def = mailing(mail.tool, { clock });
    await submitRun(store, { agent: def, goal: 'go', runId: 'k' });
    const cut = mortal(store);
    const first = new Worker({ store: cut.store, agents: [def], leaseMs: 10_000, owner: 'first' });
    await first.drain();
    await recordDecision(store, 'k', { [await pendingId(store, 'k')]: { approve: true } }, { by: 'ana' });
    void first.drain(); // never ends: its store goes dead under it
    await until(() => mail.calls.length === 1);
    cut.die(); // the first worker is cut off mid-call

    const second = new Worker({ store, agents: [def], leaseMs: 10_000, owner: 'second' });
    expect(await second.drain()).toBe(0); // its lease is live: the run is not runnable yet
    clock.advance(10_001);
    expect(await second.drain()).toBe(1);
    const after = await store.load('k');
    expect(after?.status).toBe('awaiting_approval');
    expect(after?.pendingCalls).toMatchObject([{ key: 'k:1', attempt: 2, outcome: 'unknown' }]);
    inFlight.resolve('sent'); // the first worker's call ends; its result is never saved
    await new Promise((r) => setTimeout(r, 5));
    expect(mail.calls).toHaveLength(1);
    expect((await store.load('k'))?.version).toBe(after?.version);
  });
});

describe('expiry', () => {
  it('fires without run(): expireDue ends expired calls as "approval expired" and continues the run', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const store = new MemoryStore({ now: () => clock.now() });
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool, { clock, approvalTtlMs: 60_000 });
    await submitRun(store, { agent: def, goal: 'go', runId: 'e' });
    await new Worker({ store, agents: [def] }).drain();
    expect(await expireDue(store, { agents: [def] })).toEqual([]); // nothing due yet
    clock.advance(60_001);
    expect(await store.list({ expired: true })).toHaveLength(1);
    expect(await expireDue(store, { agents: [def] })).toEqual([{ runId: 'e', status: 'done' }]);
    expect(await store.list({ status: 'awaiting_approval' })).toEqual([]); // the inbox lists no dead approval
    const run = await Agent.load(store, 'e', { policy: def.policy, tools: [mail.tool] });
    expect(run.state.history).toContainEqual(expect.objectContaining({ role: 'tool', error: 'approval expired' }));
    expect(mail.calls).toEqual([]);
  });

  it('a worker applies expiry too, and a decision recorded in time applies even when the worker comes late', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const store = new MemoryStore({ now: () => clock.now() });
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool, { clock, approvalTtlMs: 60_000 });
    const worker = new Worker({ store, agents: [def] });
    for (const runId of ['late', 'expired']) await submitRun(store, { agent: def, goal: 'go', runId });
    await worker.drain();
    await recordDecision(store, 'late', { [await pendingId(store, 'late')]: { approve: true } }, { by: 'ana' });
    clock.advance(120_000);
    await worker.drain();
    expect((await store.load('late'))?.status).toBe('done');
    expect(mail.calls.map((c) => c.key)).toEqual(['late:1']);
    const expired = await Agent.load(store, 'expired', { policy: def.policy, tools: [mail.tool] });
    expect(expired.status).toBe('done');
    expect(expired.state.history).toContainEqual(expect.objectContaining({ error: 'approval expired' }));
  });
});

describe('recordDecision refuses, and stores nothing', () => {
  const setup = async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const store = new MemoryStore({ now: () => clock.now() });
    const mail = recorder('mail', { sideEffect: true, input: z.object({ to: z.string().min(2) }) } as Partial<Tool>);
    const def = mailing(mail.tool, { clock, approvalTtlMs: 60_000 });
    await submitRun(store, { agent: def, goal: 'go', runId: 'q' });
    await new Worker({ store, agents: [def] }).drain();
    const before = await store.load('q');
    const unchanged = async () => expect(await store.load('q')).toEqual(before);
    return { clock, store, def, mail, callId: before?.pendingCalls[0]?.id ?? '', unchanged };
  };

  it('a stale call id', async () => {
    const { store, unchanged } = await setup();
    await expect(recordDecision(store, 'q', { 'q:1#old': { approve: true } }, { by: 'a' })).rejects.toBeInstanceOf(
      StaleApprovalError,
    );
    await expect(recordDecision(store, 'q', { 'q:1#old': { approve: true } }, { by: 'a' })).rejects.toThrow(
      /^recordDecision: call "q:1#old" is not pending/,
    );
    await unchanged();
  });

  it('an expired call', async () => {
    const { store, clock, def, callId, unchanged } = await setup();
    clock.advance(60_001);
    // The time is the definition's clock's, or the one given.
    await expect(
      recordDecision(store, 'q', { [callId]: { approve: true } }, { by: 'a', agent: def }),
    ).rejects.toBeInstanceOf(ApprovalExpiredError);
    await expect(recordDecision(store, 'q', true, { by: 'a', clock })).rejects.toBeInstanceOf(ApprovalExpiredError);
    await unchanged();
  });

  it('a bad edit, and an edit without the definition to check it against', async () => {
    const { store, def, callId, unchanged } = await setup();
    const edit = { [callId]: { approve: true as const, args: { to: 'x' } } };
    await expect(recordDecision(store, 'q', edit, { by: 'a', agent: def })).rejects.toBeInstanceOf(EditRejectedError);
    await expect(recordDecision(store, 'q', edit, { by: 'a' })).rejects.toThrow(/pass \{ agent \}/);
    await unchanged();
  });

  it('a second decision: the first decider wins', async () => {
    const { store, def, callId, mail } = await setup();
    await recordDecision(store, 'q', { [callId]: { approve: true, args: { to: 'ops-2' } } }, { by: 'a', agent: def });
    const first = await store.load('q');
    await expect(recordDecision(store, 'q', { [callId]: { approve: false } }, { by: 'b' })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await store.load('q')).toEqual(first);
    await new Worker({ store, agents: [def] }).drain();
    expect(mail.calls).toEqual([{ args: { to: 'ops-2' }, key: 'q:1' }]);
  });

  it('a run awaiting nothing, an unknown option, a missing by', async () => {
    const { store, callId, unchanged } = await setup();
    await expect(
      recordDecision(store, 'q', { [callId]: { approve: true } }, { by: 'a', nte: 'x' } as never),
    ).rejects.toThrow(/did you mean "note"/);
    await expect(recordDecision(store, 'q', true, {} as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(
      recordDecision(store, 'q', { [callId]: { approve: 'yes' } } as never, { by: 'a' }),
    ).rejects.toBeInstanceOf(OptionsError);
    await unchanged();
    const done = defineAgent({ name: 'mailer', policy: scriptedPolicy([{ final: 'x' }]), tools: [] });
    await submitRun(store, { agent: done, goal: 'x', runId: 'fin' });
    await new Worker({ store, agents: [done] }).drain();
    await expect(recordDecision(store, 'fin', true, { by: 'a' })).rejects.toBeInstanceOf(NoPendingApprovalError);
  });

  it('a recorded decision whose checks fail when applied is dropped: the call stays pending for a human', async () => {
    const { store, def, callId, mail } = await setup();
    await recordDecision(store, 'q', { [callId]: { approve: true, args: { to: 'ops-2' } } }, { by: 'a', agent: def });
    // The tool no longer allows edits by the time a worker applies the decision.
    const strict = mailing({ ...mail.tool, allowEdit: false }, { clock: def.clock, approvalTtlMs: 60_000 });
    expect(await new Worker({ store, agents: [strict] }).drain()).toBe(1);
    const after = await store.load('q');
    expect(after).toMatchObject({ status: 'awaiting_approval', decision: null });
    expect(after?.pendingCalls[0]?.id).toBe(callId);
    expect(mail.calls).toEqual([]);
  });
});

describe('the worker loop', () => {
  it('wakes on the store’s watch, works runs concurrently, and stops gracefully', async () => {
    const store = new MemoryStore();
    const held = gate<string>();
    const slow = recorder('slow', {}, () => held.promise);
    const def = defineAgent({
      name: 's',
      policy: scriptedPolicy([{ tool: 'slow' }, { final: 'ok' }]),
      tools: [slow.tool],
    });
    const clock = new ManualClock(0); // polls never fire: only the watch wakes the worker
    const worker = new Worker({ store, agents: [def], concurrency: 2, clock, pollMs: 60_000 });
    const events: WorkerEvent[] = [];
    worker.observe((e) => events.push(e));
    worker.observe(() => {
      throw new Error('a listener’s failure is its own');
    });
    await worker.start();
    await until(() => events.some((e) => e.type === 'idle'));
    for (const runId of ['a', 'b', 'c']) await submitRun(store, { agent: def, goal: 'go', runId });
    await until(() => slow.calls.length === 2);
    expect(worker.running.sort()).toEqual(['a', 'b']); // bounded: two at a time
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(stopped).toBe(false); // waits for the runs in hand
    held.resolve('ok');
    await stopping;
    expect((await store.load('a'))?.status).toBe('done');
    expect((await store.load('b'))?.status).toBe('done');
    expect((await store.load('c'))?.status).toBe('running'); // not claimed after stop
    expect(await store.claim('c', { owner: 'other', leaseMs: 1000 })).toMatchObject({ runId: 'c' });
    expect(events.map((e) => e.type)).toContain('stopped');
    await expect(worker.start()).rejects.toBeInstanceOf(OptionsError);
  });

  it('stop({ graceful: false }) releases what it holds at once; another worker takes it up', async () => {
    const store = new MemoryStore();
    const held = gate<string>();
    const slow = recorder('slow', {}, () => held.promise);
    const def = defineAgent({
      name: 's',
      policy: scriptedPolicy([{ tool: 'slow' }, { final: 'ok' }]),
      tools: [slow.tool],
    });
    await submitRun(store, { agent: def, goal: 'go', runId: 'a' });
    const worker = new Worker({ store, agents: [def], clock: new ManualClock(0) });
    const events: WorkerEvent[] = [];
    worker.observe((e) => events.push(e));
    await worker.start();
    await until(() => slow.calls.length === 1);
    await worker.stop({ graceful: false });
    expect(events).toContainEqual({ type: 'released', runId: 'a' });
    const other = recorder('slow');
    const def2 = defineAgent({ name: 's', policy: def.policy, tools: [other.tool] });
    expect(await new Worker({ store, agents: [def2] }).drain()).toBe(1);
    expect((await store.load('a'))?.status).toBe('done'); // a pure call in flight may simply run again
    held.resolve('late');
  });

  it('stop({ graceful: false }) between the write-ahead save and the call: the side effect never starts', async () => {
    const store = new MemoryStore();
    const calls: string[] = [];
    const inRule = gate<void>();
    const release = gate<void>();
    let rules = 0;
    const pay: Tool = {
      name: 'pay',
      sideEffect: true,
      // Asked when the step starts (no approval needed), and again right before the call, after
      // its write-ahead save: the second time it waits, holding the run in that window.
      needsApproval: async () => {
        if (++rules === 2) {
          inRule.resolve();
          await release.promise;
        }
        return false;
      },
      fn: (_args, key) => {
        calls.push(key);
        return 'paid';
      },
    };
    const def = defineAgent({ name: 'p', policy: scriptedPolicy([{ tool: 'pay' }, { final: 'ok' }]), tools: [pay] });
    await submitRun(store, { agent: def, goal: 'go', runId: 'a' });
    const worker = new Worker({ store, agents: [def] });
    const events: WorkerEvent[] = [];
    worker.observe((e) => events.push(e));
    await worker.start();
    await inRule.promise;
    expect((await store.load('a'))?.status).toBe('running'); // the write-ahead record is stored
    const stopping = worker.stop({ graceful: false });
    await until(() => events.some((e) => e.type === 'released'));
    release.resolve();
    await stopping;
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual([]);
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
    // Another worker takes the run up under the crash rules: the effect was in flight, a human decides.
    expect(await new Worker({ store, agents: [def] }).drain()).toBe(1);
    expect((await store.load('a'))?.pendingCalls[0]).toMatchObject({ key: 'a:1', outcome: 'unknown' });
    expect(calls).toEqual([]);
  });

  it('an error in one run is reported and the worker goes on', async () => {
    const store = new MemoryStore();
    const good = defineAgent({ name: 'g', policy: scriptedPolicy([{ final: 'ok' }]), tools: [] });
    await submitRun(store, { agent: good, goal: 'x', runId: 'bad' });
    await submitRun(store, { agent: good, goal: 'x', runId: 'fine' });
    const flaky = new Proxy(store, {
      get: (target, key) =>
        key === 'load'
          ? async (id: string) => {
              if (id === 'bad') throw new Error('disk on fire');
              return target.load(id);
            }
          : typeof (target as never as Record<PropertyKey, unknown>)[key] === 'function'
            ? (target as never as Record<PropertyKey, (...a: unknown[]) => unknown>)[key]?.bind(target)
            : (target as never as Record<PropertyKey, unknown>)[key],
    });
    const worker = new Worker({ store: flaky, agents: [good] });
    const events: WorkerEvent[] = [];
    worker.observe((e) => events.push(e));
    await worker.drain();
    expect(events).toContainEqual({
      type: 'error',
      runId: 'bad',
      error: expect.objectContaining({ message: 'disk on fire' }),
    });
    expect((await store.load('fine'))?.status).toBe('done');
    // Left claimed until its lease lapses: a run that fails every time is not retried in a busy loop.
    await expect(store.claim('bad', { owner: 'o', leaseMs: 1000 })).rejects.toBeInstanceOf(RunBusyError);
  });
});

describe('hostile input: typed errors, nothing stored', () => {
  const def = defineAgent({ name: 'h', policy: scriptedPolicy([{ final: 'x' }]), tools: [] });

  it('Worker options', () => {
    const store = new MemoryStore();
    expect(() => new Worker({ store, agents: [def], concurrancy: 2 } as never)).toThrow(/did you mean "concurrency"/);
    expect(() => new Worker({ store, agents: [def], concurrency: 0 })).toThrow(OptionsError);
    expect(() => new Worker({ store, agents: [def], concurrency: 1.5 })).toThrow(OptionsError);
    expect(() => new Worker({ store, agents: [] })).toThrow(/non-empty array/);
    expect(() => new Worker({ store, agents: [{ name: 'h', policy: def.policy, tools: [] }] })).toThrow(
      /made by defineAgent/,
    );
    expect(() => new Worker({ store, agents: [def, def] })).toThrow(/two definitions/);
    expect(() => new Worker({ store, agents: [def], leaseMs: -1 })).toThrow(/leaseMs/);
    expect(() => new Worker({ store, agents: [def], pollMs: Number.NaN })).toThrow(/pollMs/);
    expect(() => new Worker({ store: { load() {} } as never, agents: [def] })).toThrow(/CheckpointStore with/);
  });

  it('submitRun arguments', async () => {
    const store = new MemoryStore();
    await expect(submitRun(store, { agent: def, goal: 42 } as never)).rejects.toThrow(/goal must be a string/);
    await expect(submitRun(store, { agent: def, gol: 'x' } as never)).rejects.toThrow(/did you mean "goal"/);
    await expect(submitRun(store, { agent: def, goal: 'x', limits: { maxStep: 1 } } as never)).rejects.toThrow(
      /did you mean "maxSteps"/,
    );
    await expect(submitRun(store, { agent: def, goal: 'x', runId: '' })).rejects.toBeInstanceOf(OptionsError);
    expect(await store.list()).toEqual([]);
    await submitRun(store, { agent: def, goal: 'x', runId: 'same' });
    const first = await store.load('same');
    await expect(submitRun(store, { agent: def, goal: 'y', runId: 'same' })).rejects.toBeInstanceOf(ConflictError);
    expect(await store.load('same')).toEqual(first);
  });

  it('Agent.load refuses a lease on another run, and the definition name as an option', async () => {
    const store = new MemoryStore();
    await submitRun(store, { agent: def, goal: 'x', runId: 'one' });
    const lease = await store.claim('two', { owner: 'o', leaseMs: 1000 });
    await expect(Agent.load(store, 'one', { policy: def.policy, tools: [], lease })).rejects.toThrow(/not "one"/);
    expect(() => defineAgent({ name: 'x', agent: 'y', policy: def.policy, tools: [] } as never)).toThrow(OptionsError);
    expect(() => defineAgent({ name: 'x'.repeat(300), policy: def.policy, tools: [] })).toThrow(/at most 256/);
  });
});

describe('edges', () => {
  it('a graceful stop with timeoutMs releases what has not settled by then', async () => {
    const store = new MemoryStore();
    const slow = recorder('slow', {}, () => new Promise(() => {}));
    const def = defineAgent({ name: 's', policy: scriptedPolicy([{ tool: 'slow' }]), tools: [slow.tool] });
    await submitRun(store, { agent: def, goal: 'go', runId: 'a' });
    const clock = new ManualClock(0);
    const worker = new Worker({ store, agents: [def], clock });
    await worker.start();
    await until(() => slow.calls.length === 1);
    let stopped = false;
    const stopping = worker.stop({ timeoutMs: 5_000 }).then(() => {
      stopped = true;
    });
    await until(() => clock.sleepers > 0);
    await new Promise((r) => setTimeout(r, 5));
    expect(stopped).toBe(false);
    expect(await store.claimNext({ owner: 'o', leaseMs: 1000, agents: ['s'] })).toBeNull(); // still held
    clock.advance(5_000);
    await stopping;
    expect(await store.claimNext({ owner: 'o', leaseMs: 1000, agents: ['s'] })).toMatchObject({ run: { runId: 'a' } });
  });

  it('expireDue skips a run another owner holds, and reports a run it cannot work', async () => {
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00Z'));
    const store = new MemoryStore({ now: () => clock.now() });
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool, { clock, approvalTtlMs: 1_000 });
    for (const runId of ['held', 'free']) await submitRun(store, { agent: def, goal: 'go', runId });
    await new Worker({ store, agents: [def] }).drain();
    clock.advance(2_000);
    await store.claim('held', { owner: 'someone', leaseMs: 60_000 });
    expect(await expireDue(store, { agents: [def] })).toEqual([{ runId: 'free', status: 'done' }]);
    await expect(expireDue(store, { agents: [def], leaseMs: 0 })).rejects.toThrow(/leaseMs/);
    await expect(expireDue(store, { agents: [def], ownr: 'x' } as never)).rejects.toThrow(/did you mean "owner"/);
  });

  it('Agent.load with a held lease keeps it while the run has work, gives it up when it has none', async () => {
    const store = new MemoryStore();
    const mail = recorder('mail', { sideEffect: true });
    const def = mailing(mail.tool);
    await submitRun(store, { agent: def, goal: 'go', runId: 'h' });
    await new Worker({ store, agents: [def] }).drain();
    // Nothing to do: the lease handed in is released at once.
    const idle = await store.claim('h', { owner: 'w', leaseMs: 60_000 });
    const loaded = await Agent.load(store, 'h', { policy: def.policy, tools: [mail.tool], lease: idle });
    expect(loaded.recordedDecision).toBeNull();
    const other = await store.claim('h', { owner: 'x', leaseMs: 60_000 }); // free: it was released
    await store.release(other);
    // A recorded decision is work: the lease stays until run() settles the run.
    const id = await pendingId(store, 'h');
    await recordDecision(store, 'h', { [id]: { approve: true, note: 'go' } }, { by: 'ana' });
    const lease = await store.claim('h', { owner: 'w', leaseMs: 60_000 });
    const worker = await Agent.load(store, 'h', { policy: def.policy, tools: [mail.tool], lease });
    expect(worker.recordedDecision).toMatchObject({ by: 'ana', decisions: { [id]: { approve: true, note: 'go' } } });
    await expect(store.claim('h', { owner: 'x', leaseMs: 1 })).rejects.toBeInstanceOf(RunBusyError);
    expect(await worker.run()).toBe('done');
    expect(worker.recordedDecision).toBeNull();
    expect(await store.claim('h', { owner: 'x', leaseMs: 1 })).toMatchObject({ owner: 'x' });
  });
});
