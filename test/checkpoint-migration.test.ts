/**
 * Version 1 → 2: every frozen version-1 checkpoint (test/fixtures/checkpoints/v1, made by
 * make.ts.txt there) loads, says what the version-1 blob said, is written back as version 2 that
 * round-trips, and goes on as the run would have: approvals by the version-1 call id, the crash
 * rules for a call that was in flight, the policy asked for the right step.
 */
import { readdirSync, readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { entryOf, joinRun } from '../src/checkpoint/index.js';
import {
  Agent,
  CheckpointError,
  EditRejectedError,
  type HistoryEntry,
  NoPendingApprovalError,
  type Policy,
  RunStateError,
  type Status,
  type Tool,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { idLike, wholeHead } from './support/helpers.js';

const DIR = 'test/fixtures/checkpoints/v1';
const T0 = Date.parse('2026-12-01T09:00:00.000Z');
const FIXTURES = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort();
const read = (name: string) => readFileSync(`${DIR}/${name}.json`, 'utf8');

/** The n-th action for the n-th policy call (by assistant entries so far), as make.ts.txt has it. */
const script =
  (...actions: unknown[]) =>
  (h: HistoryEntry[]) =>
    actions[Math.min(h.filter((e) => e.role === 'assistant').length, actions.length - 1)];
const flow = script(
  { tool: 'lookup', args: { id: 'A-1' }, usage: { inputTokens: 10, outputTokens: 5 } },
  { tool: 'refund', args: { cents: 5000, note: 'ünïcödé ✓' }, usage: { inputTokens: 20, outputTokens: 7 } },
  { tool: 'email', args: { to: 'ops@example.com' } },
  { final: { done: true, items: [1, 2.5, null, 'x'] } },
);

interface Made {
  tool: string;
  args: unknown;
  key: string;
  approvedCallId: string | null;
}

/** The fixtures' tools and policy, recording every tool call and every policy call. */
function world(options: { idempotentRefund?: boolean; at?: number } = {}) {
  const made: Made[] = [];
  const asked: { step: number; history: HistoryEntry[] }[] = [];
  const recording =
    (tool: string, fn: (args: any, key: string) => unknown): Tool['fn'] =>
    (args, key, ctx) => {
      made.push({ tool, args, key, approvedCallId: ctx.approvedCallId });
      return fn(args, key);
    };
  const tools: Tool[] = [
    { name: 'lookup', fn: recording('lookup', ({ id }) => ({ id, total: 120 })) },
    {
      name: 'refund',
      sideEffect: true,
      idempotent: options.idempotentRefund ?? false,
      fn: recording('refund', (a) => ({ refunded: a.cents })),
    },
    { name: 'email', sideEffect: true, idempotent: true, fn: recording('email', (_a, key) => ({ sent: key })) },
  ];
  const policy: Policy = (history, ctx) => {
    asked.push({ step: ctx.step, history });
    return flow(history) as ReturnType<Policy>;
  };
  const clock = new ManualClock(options.at ?? T0);
  return { made, asked, options: { policy, tools, clock } };
}

/** `agent.state` as the version-1 blob says it: its one pending call or call in flight. */
function stateOfV1(blob: string) {
  const { value, context: c } = JSON.parse(blob).snapshot;
  return {
    runId: c.runId,
    status: typeof value === 'string' ? value : 'running',
    history: c.history,
    steps: c.steps,
    // Migrated on through version 3: nothing spent that was counted, no cost budget.
    usage: { ...c.usage, costUsd: 0 },
    activeMs: c.activeMs,
    limits: { ...c.limits, maxCostUsd: null },
    pending: c.pending,
    pendingCalls: c.pending ? [c.pending] : [],
    standing: {},
    answer: c.answer,
    stoppedBy: c.stoppedBy,
    error: c.error,
    cancelReason: c.cancelReason,
    inflight: c.inflight ? { key: c.inflight.key, tool: c.inflight.tool, step: c.inflight.step } : null,
    // Migrated on through version 4: never summarised.
    compaction: { failures: 0, error: null, retryAt: 0 },
    // Version 5: one turn, the goal's.
    turn: { number: 1, steps: c.steps, tokens: c.usage.inputTokens + c.usage.outputTokens, costUsd: 0 },
  };
}

/** The version-2 snapshot a version-1 one stands for, spelled out field by field (then version 3's). */
function snapshotOfV1(blob: string) {
  const { pending, inflight, ...rest } = JSON.parse(blob).snapshot.context;
  const common = (c: any) => ({
    id: c.id,
    key: c.key,
    step: c.step,
    index: 1,
    toolCallId: c.key,
    modelId: false,
    tool: c.tool,
    args: c.args,
    attempt: c.attempt,
  });
  const calls = [];
  if (pending) {
    calls.push({
      ...common(pending),
      state: 'pending',
      requestedAt: pending.requestedAt,
      expiresAt: pending.expiresAt,
      outcome: pending.outcome ?? null,
      approval: null,
      done: null,
    });
  }
  if (inflight) {
    calls.push({
      ...common(inflight),
      state: 'running',
      requestedAt: null,
      expiresAt: null,
      outcome: null,
      approval: inflight.approval,
      done: null,
    });
  }
  const snapshot = JSON.parse(blob).snapshot;
  const children = inflight
    ? { tool: { snapshot: { status: 'active', input: calls[0] }, src: 'tool', syncSnapshot: false } }
    : snapshot.children;
  const usage = { ...rest.usage, costUsd: 0 };
  const limits = { ...rest.limits, maxCostUsd: null };
  const compaction = { failures: 0, error: null, retryAt: 0 };
  // Version 5: a run that answered is no longer final.
  const status = snapshot.value === 'done' ? 'active' : snapshot.status;
  return { ...snapshot, status, context: { ...rest, usage, limits, calls, standing: {}, compaction }, children };
}

/** A store holding the run as a version-1 Tollgate stored it: its head and its entries. */
async function storeOf(blob: string): Promise<MemoryStore> {
  const c = JSON.parse(blob);
  const { history, pending } = c.snapshot.context;
  c.snapshot.context.history = [];
  const value = c.snapshot.value;
  const store = new MemoryStore();
  await store.save(
    'fx-1',
    {
      status: (typeof value === 'string' ? value : 'running') as Status,
      head: canonicalize(c) as string,
      from: 0,
      append: history.map((e: HistoryEntry) => entryOf(e)),
      pendingCalls: pending ? [pending] : [],
    },
    0,
  );
  return store;
}

/** The run a store holds, joined (what `Agent.load` would read). */
async function storedBlob(store: MemoryStore): Promise<string> {
  const record = await store.load('fx-1');
  if (!record) throw new Error('no stored run');
  return joinRun(record.head, record.entries, record.base);
}

describe('every version-1 fixture', () => {
  it('is there: one per resting state', () => {
    expect(FIXTURES).toEqual([
      'after-denial-done',
      'awaiting-approval',
      'awaiting-approval-outcome-unknown',
      'budget-exhausted',
      'cancelled',
      'done',
      'failed',
      'idle',
      'running-deciding',
      'running-executing-approved',
    ]);
    for (const name of FIXTURES) expect(JSON.parse(read(name)).version, name).toBe(1);
  });

  for (const name of FIXTURES) {
    describe(name, () => {
      it('decodes, and its state is what the version-1 blob said', () => {
        const blob = read(name);
        const agent = Agent.resume(blob, world().options);
        expect(agent.runId).toBe('fx-1');
        expect(agent.status).toBe(stateOfV1(blob).status);
        expect(agent.state).toStrictEqual(stateOfV1(blob));
      });

      it('is written back as the current version (5), the migrated snapshot, which round-trips exactly', () => {
        const blob = read(name);
        const v2 = Agent.resume(blob, world().options).checkpoint();
        const c = JSON.parse(v2);
        expect(c.version).toBe(5);
        expect(c.format).toBe('tollgate.checkpoint');
        expect(c.snapshot).toStrictEqual(snapshotOfV1(blob));
        expect(v2).toBe(canonicalize(c));
        const again = Agent.resume(v2, world().options);
        expect(again.checkpoint()).toBe(v2);
        expect(again.state).toStrictEqual(stateOfV1(blob));
      });

      it('loads from a store that holds it in the journal form (head and entries)', async () => {
        const blob = read(name);
        const store = await storeOf(blob);
        expect(JSON.parse((await store.load('fx-1'))!.head).version).toBe(1);
        const agent = await Agent.load(store, 'fx-1', world().options);
        expect(agent.state).toStrictEqual(stateOfV1(blob));
        expect(agent.checkpoint()).toBe(Agent.resume(blob, world().options).checkpoint());
        expect(agent.version).toBe(1);
      });
    });
  }
});

describe('a version-1 run goes on', () => {
  it('awaiting approval: approved by its version-1 call id, the refund runs once with its key', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval'), w.options);
    expect(agent.state.pending?.id).toBe('fx-1:2#1');
    expect(await agent.decide(true, 'ok', { by: 'zoe' })).toBe('awaiting_approval');
    expect(w.made).toEqual([
      { tool: 'refund', args: { cents: 5000, note: 'ünïcödé ✓' }, key: 'fx-1:2', approvedCallId: 'fx-1:2#1' },
    ]);
    expect(agent.state.history[4]).toEqual({
      role: 'tool',
      tool: 'refund',
      result: { refunded: 5000 },
      approval: { approved: true, by: 'zoe', note: 'ok', at: '2026-12-01T09:00:00.000Z', callId: 'fx-1:2#1' },
    });
    // The next step is a version-2 request: its id carries the digest of tool and arguments.
    expect(w.asked.map((a) => a.step)).toEqual([3]);
    expect(agent.state.pending).toMatchObject({ key: 'fx-1:3', tool: 'email', id: idLike('fx-1:3#1') });
    expect(await agent.decide(true)).toBe('done');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([
      ['refund', 'fx-1:2'],
      ['email', 'fx-1:3'],
    ]);
    expect(agent.state.answer).toEqual({ done: true, items: [1, 2.5, null, 'x'] });
    expect(JSON.parse(agent.checkpoint()).version).toBe(5);
  });

  it('awaiting approval: decided in the map form by the version-1 id, or named with { callId }', async () => {
    const byMap = world();
    const a = Agent.resume(read('awaiting-approval'), byMap.options);
    await a.decide({ 'fx-1:2#1': { approve: true, note: 'map' } }, { by: 'zoe' });
    expect(byMap.made.map((m) => [m.tool, m.key, m.approvedCallId])).toEqual([['refund', 'fx-1:2', 'fx-1:2#1']]);
    const named = world();
    const b = Agent.resume(read('awaiting-approval'), named.options);
    await b.decide(true, 'named', { callId: 'fx-1:2#1' });
    expect(named.made.map((m) => [m.tool, m.key, m.approvedCallId])).toEqual([['refund', 'fx-1:2', 'fx-1:2#1']]);
  });

  it('awaiting approval: an edited approval runs the edit, under the version-1 id', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval'), w.options);
    await agent.decide({ 'fx-1:2#1': { approve: true, args: { cents: 10, note: 'edited' } } });
    expect(w.made[0]).toEqual({
      tool: 'refund',
      args: { cents: 10, note: 'edited' },
      key: 'fx-1:2',
      approvedCallId: 'fx-1:2#1',
    });
  });

  it('awaiting approval: denied, nothing runs and the model is told', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval'), w.options);
    expect(await agent.decide(false, 'not today', { by: 'zoe' })).toBe('awaiting_approval');
    expect(w.made).toEqual([]);
    expect(w.asked).toHaveLength(1);
    expect(w.asked[0]?.step).toBe(3);
    expect(w.asked[0]?.history.at(-1)).toEqual({
      role: 'tool',
      tool: 'refund',
      error: 'denied by human: not today',
      approval: { approved: false, by: 'zoe', note: 'not today', at: '2026-12-01T09:00:00.000Z', callId: 'fx-1:2#1' },
    });
  });

  it('awaiting approval: after its version-1 expiry, approving runs nothing', async () => {
    const w = world({ at: Date.parse('2026-12-01T10:00:00.000Z') });
    const agent = Agent.resume(read('awaiting-approval'), w.options);
    await agent.decide(true, 'late');
    expect(w.made).toEqual([]);
    expect(agent.state.history.find((e) => e.role === 'tool' && e.tool === 'refund')).toMatchObject({
      error: 'approval expired',
    });
  });

  it('awaiting approval through a store: the decision is saved as version 5, appended to the version-1 entries', async () => {
    const blob = read('awaiting-approval');
    const store = await storeOf(blob);
    const w = world();
    const agent = await Agent.load(store, 'fx-1', w.options);
    await agent.decide(true, 'ok');
    const record = await store.load('fx-1');
    expect(JSON.parse(wholeHead(record)).h).toBe(5); // compact, as every head is written now
    expect(record!.entries.slice(0, 4)).toEqual(
      JSON.parse(blob).snapshot.context.history.map((e: any) => canonicalize(e)),
    );
    expect(await storedBlob(store)).toBe(agent.checkpoint());
    expect(record!.pending).toMatchObject({ key: 'fx-1:3', tool: 'email' });
    const again = await Agent.load(store, 'fx-1', world().options);
    expect(again.checkpoint()).toBe(agent.checkpoint());
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['refund', 'fx-1:2']]);
  });

  it('outcome unknown: the human is asked again; approving runs the refund once, edits are refused', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-outcome-unknown'), w.options);
    expect(agent.status).toBe('awaiting_approval');
    expect(agent.state.pending).toEqual({
      id: 'fx-1:2#2',
      key: 'fx-1:2',
      step: 2,
      tool: 'refund',
      args: { cents: 5000, note: 'ünïcödé ✓' },
      attempt: 2,
      requestedAt: '2026-12-01T09:00:01.000Z',
      expiresAt: null,
      outcome: 'unknown',
    });
    await expect(agent.decide({ 'fx-1:2#2': { approve: true, args: { cents: 1 } } })).rejects.toThrow(
      EditRejectedError,
    );
    expect(w.made).toEqual([]);
    expect(await agent.decide(true, 'checked the ledger', { callId: 'fx-1:2#2' })).toBe('awaiting_approval');
    expect(w.made).toEqual([
      { tool: 'refund', args: { cents: 5000, note: 'ünïcödé ✓' }, key: 'fx-1:2', approvedCallId: 'fx-1:2#2' },
    ]);
    expect(w.asked.map((a) => a.step)).toEqual([3]);
  });

  it('outcome unknown: denied, the model is told the outcome is unknown', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-outcome-unknown'), w.options);
    await agent.decide(false, 'it went through');
    expect(w.made).toEqual([]);
    expect(agent.state.history[4]).toMatchObject({
      role: 'tool',
      tool: 'refund',
      error: 'denied by human: it went through',
      outcome: 'unknown',
    });
  });

  it('executing a non-idempotent refund: not called again; asked again, outcome unknown', async () => {
    const w = world({ at: T0 + 1000 });
    const agent = Agent.resume(read('running-executing-approved'), w.options);
    expect(agent.state.inflight).toEqual({ key: 'fx-1:2', tool: 'refund', step: 2 });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.made).toEqual([]);
    expect(w.asked).toEqual([]);
    expect(agent.state.pendingCalls).toEqual([
      {
        id: idLike('fx-1:2#2'),
        key: 'fx-1:2',
        step: 2,
        tool: 'refund',
        args: { cents: 5000, note: 'ünïcödé ✓' },
        attempt: 2,
        requestedAt: '2026-12-01T09:00:01.000Z',
        expiresAt: null,
        outcome: 'unknown',
      },
    ]);
    // What version 1 wrote in the same case (its own outcome-unknown fixture), but for the id.
    const v1 = Agent.resume(read('awaiting-approval-outcome-unknown'), world().options).state;
    expect({ ...agent.state, pending: null, pendingCalls: [] }).toEqual({ ...v1, pending: null, pendingCalls: [] });
    await agent.decide(true, 'ok');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['refund', 'fx-1:2']]);
  });

  it('executing an idempotent refund: called again once, with the same key and approval', async () => {
    const w = world({ idempotentRefund: true });
    const agent = Agent.resume(read('running-executing-approved'), w.options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.made).toEqual([
      { tool: 'refund', args: { cents: 5000, note: 'ünïcödé ✓' }, key: 'fx-1:2', approvedCallId: 'fx-1:2#1' },
    ]);
    expect(agent.state.history[4]).toEqual({
      role: 'tool',
      tool: 'refund',
      result: { refunded: 5000 },
      approval: { approved: true, by: 'carol', note: 'ok', at: '2026-12-01T09:00:00.000Z', callId: 'fx-1:2#1' },
    });
    expect(w.asked.map((a) => a.step)).toEqual([3]);
    expect(agent.state.pending).toMatchObject({ key: 'fx-1:3', tool: 'email' });
  });

  it('executing, through a store: the write-ahead record is saved as version 5 before the call', async () => {
    const store = await storeOf(read('running-executing-approved'));
    const heads: string[] = [];
    const w = world({ idempotentRefund: true });
    const refund = w.options.tools[1] as Tool;
    const tools = w.options.tools.map((t) =>
      t === refund
        ? {
            ...t,
            fn: async (args: any, key: string, ctx: any) => {
              heads.push(wholeHead(await store.load('fx-1')));
              return refund.fn(args, key, ctx);
            },
          }
        : t,
    );
    const agent = await Agent.load(store, 'fx-1', { ...w.options, tools });
    await agent.run();
    expect(heads).toHaveLength(1);
    expect(JSON.parse(heads[0]!).h).toBe(5);
    const head = JSON.parse(joinRun(heads[0]!, []));
    expect(head.version).toBe(5);
    expect(head.snapshot.context.calls).toMatchObject([{ key: 'fx-1:2', state: 'running' }]);
    expect(await storedBlob(store)).toBe(agent.checkpoint());
  });

  /** The executing fixture with another call in flight, as version 1 would have written it. */
  const inFlight = (change: (call: any) => void) => {
    const c = JSON.parse(read('running-executing-approved'));
    change(c.snapshot.context.inflight);
    c.snapshot.children.tool.snapshot.input = c.snapshot.context.inflight;
    // The step's assistant entry (the last) records the call as changed.
    const { tool, args } = c.snapshot.context.inflight;
    c.snapshot.context.history[c.snapshot.context.history.length - 1] = { role: 'assistant', tool, args };
    return JSON.stringify(c);
  };

  it('executing a pure call (no approval): simply run again, with its key', async () => {
    const w = world();
    const blob = inFlight((call) => Object.assign(call, { tool: 'lookup', args: { id: 'A-1' }, approval: null }));
    const agent = Agent.resume(blob, w.options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.made).toEqual([{ tool: 'lookup', args: { id: 'A-1' }, key: 'fx-1:2', approvedCallId: null }]);
  });

  it('executing a side effect with no approval: never run, even by an idempotent tool', async () => {
    const w = world({ idempotentRefund: true });
    const agent = Agent.resume(
      inFlight((call) => (call.approval = null)),
      w.options,
    );
    await agent.run();
    expect(w.made).toEqual([]);
    expect(agent.state.history[4]).toEqual({
      role: 'tool',
      tool: 'refund',
      error: 'refused: refund needs approval and this call has none',
    });
  });

  it('deciding: the policy is asked for step 2 with the version-1 history', async () => {
    const blob = read('running-deciding');
    const w = world();
    const agent = Agent.resume(blob, w.options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.asked).toHaveLength(1);
    expect(w.asked[0]?.step).toBe(2);
    expect(w.asked[0]?.history).toEqual(JSON.parse(blob).snapshot.context.history);
    expect(agent.state.steps).toBe(2);
    expect(agent.state.pending).toMatchObject({ key: 'fx-1:2', tool: 'refund', id: idLike('fx-1:2#1') });
  });

  it('idle: starts as a new run would', async () => {
    const w = world();
    const agent = Agent.resume(read('idle'), w.options);
    expect(await agent.start('refund order A-1')).toBe('awaiting_approval');
    expect(w.asked.map((a) => a.step)).toEqual([1, 2]);
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['lookup', 'fx-1:1']]);
  });

  it('budget_exhausted: stays so until the budget is raised, then goes on at step 2', async () => {
    const w = world();
    const agent = Agent.resume(read('budget-exhausted'), w.options);
    expect(agent.state.stoppedBy).toBe('steps');
    expect(await agent.run()).toBe('budget_exhausted');
    expect(w.asked).toEqual([]);
    agent.extendBudget({ maxSteps: 8 });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.asked.map((a) => a.step)).toEqual([2]);
  });

  it('failed: stays failed until run() tries the policy again', async () => {
    const w = world();
    const agent = Agent.resume(read('failed'), w.options);
    expect(agent.state.error).toBe('TypeError: model down');
    expect(w.asked).toEqual([]);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.asked.map((a) => a.step)).toEqual([1, 2]);
    expect(agent.state.error).toBeNull();
  });

  for (const name of ['cancelled', 'done', 'after-denial-done']) {
    it(`${name}: keeps its status; nothing runs, nothing can be decided`, async () => {
      const w = world();
      const agent = Agent.resume(read(name), w.options);
      const status = agent.status;
      expect(status).toBe(name === 'cancelled' ? 'cancelled' : 'done');
      expect(await agent.run()).toBe(status);
      await expect(agent.decide(true)).rejects.toThrow(NoPendingApprovalError);
      await expect(agent.start('again')).rejects.toThrow(RunStateError);
      // A cancelled run is closed; one that answered is closed by cancel (below, on a copy).
      if (status === 'cancelled') await expect(agent.cancel()).rejects.toThrow(RunStateError);
      else expect(await Agent.resume(read(name), w.options).cancel()).toBe('cancelled');
      expect(agent.status).toBe(status);
      expect(w.made).toEqual([]);
      expect(w.asked).toEqual([]);
      expect(agent.checkpoint()).toBe(Agent.resume(read(name), w.options).checkpoint());
    });
  }
});

describe('version-1 blobs that version 1 itself refused are refused still', () => {
  // Version 1's schema was strict: `pending` and `inflight` required (null or a call of exactly
  // its fields), no other context key. A migration must not turn such a blob into a valid one.
  const v1 = (name: string, change: (c: any) => void) => {
    const c = JSON.parse(read(name));
    change(c);
    return JSON.stringify(c);
  };
  const errorOf = (blob: string): CheckpointError => {
    try {
      Agent.resume(blob, world().options);
    } catch (error) {
      expect(error).toBeInstanceOf(CheckpointError);
      return error as CheckpointError;
    }
    throw new Error('the checkpoint was accepted');
  };
  const cases: [string, string, (c: any) => void, string][] = [
    [
      'version-2 fields beside its own',
      'done',
      (c) => {
        c.snapshot.context.calls = [];
        c.snapshot.context.standing = {};
      },
      'snapshot.context.calls',
    ],
    [
      'a standing approval, which version 1 never had',
      'done',
      (c) => {
        c.snapshot.context.standing = {
          refund: {
            approved: true,
            always: true,
            by: 'm',
            note: '',
            at: '2026-12-01T09:00:00.000Z',
            callId: 'fx-1:2#1',
          },
        };
      },
      'snapshot.context.standing',
    ],
    [
      'no pending and no inflight keys',
      'done',
      (c) => {
        delete c.snapshot.context.pending;
        delete c.snapshot.context.inflight;
      },
      'snapshot.context.pending',
    ],
    ['a pending call that is a number', 'done', (c) => (c.snapshot.context.pending = 5), 'snapshot.context.pending'],
    [
      'a call in flight that is a string',
      'done',
      (c) => (c.snapshot.context.inflight = 'x'),
      'snapshot.context.inflight',
    ],
    [
      'a pending call with a field version 1 did not have',
      'awaiting-approval',
      (c) => (c.snapshot.context.pending.approval = null),
      'snapshot.context.pending',
    ],
    [
      'a pending call of an unknown outcome kind',
      'awaiting-approval',
      (c) => (c.snapshot.context.pending.outcome = 'known'),
      'snapshot.context.pending.outcome',
    ],
    [
      'a call in flight with a request time',
      'running-executing-approved',
      (c) => {
        c.snapshot.context.inflight.requestedAt = '2026-12-01T09:00:00.000Z';
        c.snapshot.children.tool.snapshot.input.requestedAt = '2026-12-01T09:00:00.000Z';
      },
      'snapshot.context.inflight',
    ],
    [
      'a tool actor given other arguments than the call in flight',
      'running-executing-approved',
      (c) => (c.snapshot.children.tool.snapshot.input.args = { cents: 1 }),
      'snapshot.children.tool',
    ],
  ];
  for (const [name, fixture, change, path] of cases) {
    it(name, () => {
      const error = errorOf(v1(fixture, change));
      expect(error.path).toBe(path);
      expect(error.message).toMatch(/^invalid checkpoint: /);
      expect(error.message).toContain(path);
    });
  }

  it('a malformed version-1 call is reported where version 1 has it, not at the version-2 field', () => {
    const error = errorOf(v1('awaiting-approval', (c) => delete c.snapshot.context.pending.requestedAt));
    expect(error.path).toBe('snapshot.context.pending.requestedAt');
  });
});
