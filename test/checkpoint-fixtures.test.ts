/**
 * The frozen checkpoints of earlier versions (version 4's: checkpoint-fixtures-v4.test.ts): the
 * version-3 ones (../v3) are migrated (version 3 → 4 → 5: never summarised, a done run active), written back as
 * version 5, and go on; the version-2 ones (../v2) are migrated (version 2 → 3 → 4 → 5: no cost spent,
 * no cost budget, never summarised, a done run active), written back as version 5, and go on; the
 * deliberately broken ones (test/fixtures/checkpoints/broken) are each refused with a
 * `CheckpointError` that says why.
 */
import { readdirSync, readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { entryOf, joinRun } from '../src/checkpoint/index.js';
import { Agent, CheckpointError, type HistoryEntry, type Policy, type Tool, UserError } from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { idLike } from './support/helpers.js';

const V2 = 'test/fixtures/checkpoints/v2';
const V3 = 'test/fixtures/checkpoints/v3';
const BROKEN = 'test/fixtures/checkpoints/broken';
const T0 = Date.parse('2026-12-01T09:00:00.000Z');
const namesIn = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
const read = (name: string, dir = V2) => readFileSync(`${dir}/${name}.json`, 'utf8');

interface Made {
  tool: string;
  args: unknown;
  key: string;
  approvedCallId: string | null;
}

/** The fixtures' tools (make.ts.txt), recording every call; the policy answers as `actions` say. */
function world(actions: unknown[] = [{ final: 'ok' }], options: { idempotentRefund?: boolean } = {}) {
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
      needsApproval: (a: any) => (a.cents > 100_000 ? { deny: 'over 1,000.00' } : true),
      fn: recording('refund', (a) => ({ refunded: a.cents })),
    },
    { name: 'email', sideEffect: true, idempotent: true, fn: recording('email', (_a, key) => ({ sent: key })) },
  ];
  const policy: Policy = (history, ctx) => {
    asked.push({ step: ctx.step, history });
    return actions[Math.min(asked.length - 1, actions.length - 1)] as ReturnType<Policy>;
  };
  return { made, asked, options: { policy, tools, clock: new ManualClock(T0) } };
}

const idsOf = (agent: Agent) => agent.state.pendingCalls.map((p) => p.id);
/** A run migrated to version 5: one that answered is no longer final (its status is `active`). */
const activeIfDone = (snapshot: any) => ({
  ...snapshot,
  status: snapshot.value === 'done' ? 'active' : snapshot.status,
});
/** Compaction's record in a run migrated from before version 4: never summarised. */
const neverSummarised = { failures: 0, error: null, retryAt: 0 };
/** The version-5 snapshot a version-2 one stands for: nothing spent that was counted, no cost budget, never summarised. */
function migratedV2(blob: string) {
  const { snapshot } = JSON.parse(blob);
  const { usage, limits } = snapshot.context;
  return {
    ...activeIfDone(snapshot),
    context: {
      ...snapshot.context,
      usage: { ...usage, costUsd: 0 },
      limits: { ...limits, maxCostUsd: null },
      compaction: neverSummarised,
    },
  };
}
/** The version-5 snapshot a version-3 one stands for: never summarised. */
function migratedV3(blob: string) {
  const { snapshot } = JSON.parse(blob);
  return { ...activeIfDone(snapshot), context: { ...snapshot.context, compaction: neverSummarised } };
}
/** The v3 fixtures' price (make.ts.txt there). */
const price = { 'gpt-4.1': { inputUsdPerMTok: 2, cachedInputUsdPerMTok: 0.5, outputUsdPerMTok: 8 } };
const refundArgs = { cents: 5000, note: 'ünïcödé ✓' };

describe('every version-3 fixture', () => {
  const names = namesIn(V3);

  it('is there: the version-2 states, and the cost budget stopping a run', () => {
    expect(names).toEqual([...namesIn(V2), 'budget-exhausted-cost', 'budget-exhausted-cost-unknown'].sort());
  });

  for (const name of names) {
    describe(name, () => {
      it('is canonical version 3, written back as version 5 (the migrated snapshot), which round-trips exactly', () => {
        const blob = read(name, V3);
        const c = JSON.parse(blob);
        expect(c.version).toBe(3);
        expect(canonicalize(c)).toBe(blob);
        const agent = Agent.resume(blob, world().options);
        const v4 = agent.checkpoint();
        expect(JSON.parse(v4)).toStrictEqual({ ...c, version: 5, snapshot: migratedV3(blob) });
        expect(v4).toBe(canonicalize(JSON.parse(v4)));
        expect(Agent.resume(v4, world().options).checkpoint()).toBe(v4);
        const { value } = c.snapshot;
        expect(agent.status).toBe(typeof value === 'string' ? value : 'running');
        expect(agent.state.compaction).toEqual(neverSummarised);
      });

      it('loads from a store that holds it in the journal form (a version-3 head), as version 5', async () => {
        const blob = read(name, V3);
        const run = JSON.parse(blob);
        const entries = run.snapshot.context.history.map(entryOf);
        const head = canonicalize({
          ...run,
          snapshot: { ...run.snapshot, context: { ...run.snapshot.context, history: [] } },
        }) as string;
        expect(joinRun(head, entries)).toBe(blob);
        const store = new MemoryStore();
        const { pendingCalls } = Agent.resume(blob, world().options).state;
        await store.save('fx-3', { status: 'idle', head, from: 0, append: entries, pendingCalls }, 0);
        const agent = await Agent.load(store, 'fx-3', world().options);
        expect(agent.checkpoint()).toBe(Agent.resume(blob, world().options).checkpoint());
        expect(agent.state).toEqual(Agent.resume(blob, world().options).state);
      });
    });
  }
});

describe('every version-2 fixture', () => {
  const names = namesIn(V2);

  it('is there: one per resting state, and the several-call states', () => {
    expect(names).toEqual([
      'awaiting-approval',
      'awaiting-approval-outcome-unknown',
      'budget-exhausted',
      'cancelled',
      'done',
      'done-after-denial',
      'failed',
      'idle',
      'malformed-action',
      'running-deciding',
      'running-executing-approved',
      'several-denied-by-rule',
      'several-done',
      'several-edited-approval',
      'several-running-and-queued',
      'several-standing-approval',
      'several-two-pending-one-done',
    ]);
  });

  for (const name of names) {
    describe(name, () => {
      it('is canonical version 2, written back as version 5 (the migrated snapshot), which round-trips exactly', () => {
        const blob = read(name);
        const c = JSON.parse(blob);
        expect(c.version).toBe(2);
        expect(canonicalize(c)).toBe(blob);
        const agent = Agent.resume(blob, world().options);
        const v4 = agent.checkpoint();
        expect(JSON.parse(v4)).toStrictEqual({ ...c, version: 5, snapshot: migratedV2(blob) });
        expect(v4).toBe(canonicalize(JSON.parse(v4)));
        expect(Agent.resume(v4, world().options).checkpoint()).toBe(v4);
        const { value } = c.snapshot;
        expect(agent.status).toBe(typeof value === 'string' ? value : 'running');
        expect(agent.state.usage.costUsd).toBe(0);
        expect(agent.state.limits.maxCostUsd).toBeNull();
      });

      it('loads from a store that holds it in the journal form (a version-2 head), as version 5', async () => {
        const blob = read(name);
        const run = JSON.parse(blob);
        const entries = run.snapshot.context.history.map(entryOf);
        const head = canonicalize({
          ...run,
          snapshot: { ...run.snapshot, context: { ...run.snapshot.context, history: [] } },
        }) as string;
        expect(joinRun(head, entries)).toBe(blob);
        const store = new MemoryStore();
        const { pendingCalls } = Agent.resume(blob, world().options).state;
        await store.save('fx-2', { status: 'idle', head, from: 0, append: entries, pendingCalls }, 0);
        const agent = await Agent.load(store, 'fx-2', world().options);
        expect(agent.checkpoint()).toBe(Agent.resume(blob, world().options).checkpoint());
        expect(agent.state).toEqual(Agent.resume(blob, world().options).state);
        expect(agent.version).toBe(1);
      });
    });
  }
});

describe('a version-2 run goes on', () => {
  it('idle: starts', async () => {
    const w = world([{ tool: 'lookup', args: { id: 'A-1' } }, { final: 'ok' }]);
    const agent = Agent.resume(read('idle'), w.options);
    expect(await agent.start('go')).toBe('done');
    expect(w.made.map((m) => m.key)).toEqual(['fx-2:1']);
  });

  it('running-deciding: the policy is asked for step 2', async () => {
    const w = world([{ tool: 'refund', args: refundArgs }]);
    const agent = Agent.resume(read('running-deciding'), w.options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.asked.map((a) => a.step)).toEqual([2]);
    expect(w.asked[0]?.history).toHaveLength(3);
    expect(agent.state.pending).toMatchObject({ key: 'fx-2:2', id: idLike('fx-2:2#1') });
  });

  it('running-executing-approved: the non-idempotent refund is asked again, outcome unknown', async () => {
    const w = world();
    const agent = Agent.resume(read('running-executing-approved'), w.options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.made).toEqual([]);
    expect(agent.state.pending).toMatchObject({
      key: 'fx-2:2',
      attempt: 2,
      outcome: 'unknown',
      id: idLike('fx-2:2#2'),
    });
    // As the fixture made from this one by the same resume says (but for the time asked).
    const fixture = Agent.resume(read('awaiting-approval-outcome-unknown'), world().options).state;
    expect(agent.state.pending).toEqual({ ...fixture.pending, requestedAt: '2026-12-01T09:00:00.000Z' });
  });

  it('running-executing-approved: an idempotent refund is called again with the same key', async () => {
    const w = world([{ final: 'ok' }], { idempotentRefund: true });
    const agent = Agent.resume(read('running-executing-approved'), w.options);
    expect(await agent.run()).toBe('done');
    const id = JSON.parse(read('running-executing-approved')).snapshot.context.calls[0].id;
    expect(w.made).toEqual([{ tool: 'refund', args: refundArgs, key: 'fx-2:2', approvedCallId: id }]);
  });

  it('awaiting-approval: approved, the refund runs once with its key', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval'), w.options);
    const [id] = idsOf(agent);
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(w.made).toEqual([{ tool: 'refund', args: refundArgs, key: 'fx-2:2', approvedCallId: id }]);
  });

  it('awaiting-approval-outcome-unknown: approved, the refund runs once with its key', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-outcome-unknown'), w.options);
    expect(agent.state.pending).toMatchObject({ attempt: 2, outcome: 'unknown' });
    await agent.decide(true, 'checked');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['refund', 'fx-2:2']]);
  });

  it('budget-exhausted: stays so until the budget is raised', async () => {
    const w = world();
    const agent = Agent.resume(read('budget-exhausted'), w.options);
    expect(await agent.run()).toBe('budget_exhausted');
    agent.extendBudget({ maxSteps: 2 });
    expect(await agent.run()).toBe('done');
    expect(w.asked.map((a) => a.step)).toEqual([2]);
  });

  it('failed: run() asks the policy again', async () => {
    const w = world();
    const agent = Agent.resume(read('failed'), w.options);
    expect(await agent.run()).toBe('done');
    expect(w.asked.map((a) => a.step)).toEqual([1]);
  });

  for (const name of ['cancelled', 'done', 'done-after-denial', 'several-done']) {
    it(`${name}: keeps its status, nothing runs`, async () => {
      const w = world();
      const agent = Agent.resume(read(name), w.options);
      const status = agent.status;
      expect(await agent.run()).toBe(status);
      expect(w.made).toEqual([]);
      expect(w.asked).toEqual([]);
    });
  }

  it('several-done: the step of three is in the history in call order, paired by the model ids', () => {
    const history = Agent.resume(read('several-done'), world().options).state.history;
    expect(history[1]).toEqual({
      role: 'assistant',
      calls: [
        { id: 'call_a', tool: 'lookup', args: { id: 'A-1' } },
        { id: 'call_b', tool: 'refund', args: refundArgs },
        { id: 'call_c', tool: 'email', args: { to: 'ops@example.com' } },
      ],
      text: 'Looking it up, refunding and telling ops.',
    });
    expect(history.slice(2, 5).map((e) => [e.role, (e as { id?: string }).id])).toEqual([
      ['tool', 'call_a'],
      ['tool', 'call_b'],
      ['tool', 'call_c'],
    ]);
  });

  it('several-two-pending-one-done: decided by call id, each call runs once with its own key', async () => {
    const w = world();
    const agent = Agent.resume(read('several-two-pending-one-done'), w.options);
    expect(agent.state.pendingCalls.map((p) => [p.key, p.tool])).toEqual([
      ['fx-2:1.2', 'refund'],
      ['fx-2:1.3', 'email'],
    ]);
    const [refund, email] = idsOf(agent);
    // The email first: a partial decision leaves the refund pending, and the email waits behind
    // it (calls take effect in their order).
    expect(await agent.decide({ [email!]: { approve: true } })).toBe('awaiting_approval');
    expect(w.made).toEqual([]);
    expect(idsOf(agent)).toEqual([refund]);
    expect(await agent.decide({ [refund!]: { approve: false, note: 'no' } })).toBe('done');
    expect(w.made).toEqual([
      { tool: 'email', args: { to: 'ops@example.com' }, key: 'fx-2:1.3', approvedCallId: email },
    ]);
    expect(w.asked).toHaveLength(1);
    expect(w.asked[0]?.history.slice(2).map((e) => [(e as { id?: string }).id, 'error' in e ? e.error : 'ok'])).toEqual(
      [
        ['call_a', 'ok'],
        ['call_b', 'denied by human: no'],
        ['call_c', 'ok'],
      ],
    );
  });

  it('several-running-and-queued: the refund in flight is asked again; the queued email waits for it, then runs', async () => {
    const w = world();
    const agent = Agent.resume(read('several-running-and-queued'), w.options);
    expect(agent.state.inflight).toEqual({ key: 'fx-2:1.1', tool: 'refund', step: 1 });
    expect(await agent.run()).toBe('awaiting_approval');
    const emailId = JSON.parse(read('several-running-and-queued')).snapshot.context.calls[1].id;
    expect(w.made).toEqual([]); // calls take effect in their order: the refund's outcome is unknown
    expect(agent.state.pendingCalls).toEqual([
      expect.objectContaining({ key: 'fx-2:1.1', attempt: 2, outcome: 'unknown', id: idLike('fx-2:1.1#2') }),
    ]);
    expect(w.asked).toEqual([]);
    expect(await agent.decide(false, 'it went through')).toBe('done');
    expect(w.made).toEqual([
      { tool: 'email', args: { to: 'ops@example.com' }, key: 'fx-2:1.2', approvedCallId: emailId },
    ]);
  });

  it('several-running-and-queued: with an idempotent refund both run, in call order, once each', async () => {
    const w = world([{ final: 'ok' }], { idempotentRefund: true });
    const agent = Agent.resume(read('several-running-and-queued'), w.options);
    expect(await agent.run()).toBe('done');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([
      ['refund', 'fx-2:1.1'],
      ['email', 'fx-2:1.2'],
    ]);
  });

  it('several-edited-approval: the edit ran; the model keeps its own arguments and is told', async () => {
    const w = world();
    const agent = Agent.resume(read('several-edited-approval'), w.options);
    expect(idsOf(agent)).toHaveLength(1);
    await agent.decide(true, 'ok');
    expect(w.made.map((m) => m.tool)).toEqual(['email']);
    const history = w.asked[0]?.history ?? [];
    expect(history[1]).toMatchObject({ calls: [{ tool: 'refund', args: refundArgs }, { tool: 'email' }] });
    expect(history[2]).toMatchObject({
      tool: 'refund',
      result: { refunded: 4000 },
      approval: { by: 'frank', args: { cents: 4000, note: 'capped by finance' } },
    });
  });

  it('several-standing-approval: the grant holds after resume; a later refund runs without asking', async () => {
    const w = world([{ tool: 'refund', args: { cents: 7 } }, { final: 'ok' }]);
    const blob = read('several-standing-approval');
    const agent = Agent.resume(blob, w.options);
    const grant = JSON.parse(blob).snapshot.context.standing.refund;
    expect(agent.state.standing).toEqual({ refund: grant });
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([
      ['email', 'fx-2:2.2'],
      ['refund', 'fx-2:3'],
    ]);
    expect(agent.state.history.at(-2)).toMatchObject({
      role: 'tool',
      tool: 'refund',
      result: { refunded: 7 },
      approval: { approved: true, by: 'gina', standing: grant.callId },
    });
  });

  it('malformed-action: the malformed step counts; the pending refund can be approved', async () => {
    const w = world();
    const agent = Agent.resume(read('malformed-action'), w.options);
    expect(agent.state.steps).toBe(2);
    expect(agent.state.history[1]).toEqual({
      role: 'tool',
      tool: '',
      error: 'malformed action: tool must be a non-empty string',
    });
    await agent.decide(true, 'ok');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['refund', 'fx-2:2']]);
  });

  it('several-denied-by-rule: the denial stands (nothing ran); the email can be approved', async () => {
    const w = world();
    const agent = Agent.resume(read('several-denied-by-rule'), w.options);
    expect(agent.state.pendingCalls.map((p) => p.tool)).toEqual(['email']);
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(w.made.map((m) => [m.tool, m.key])).toEqual([['email', 'fx-2:1.2']]);
    expect(w.asked[0]?.history.slice(2)).toEqual([
      { role: 'tool', tool: 'refund', id: 'fx-2:1.1', error: 'denied by rule: over 1,000.00' },
      expect.objectContaining({ role: 'tool', tool: 'email', id: 'fx-2:1.2', result: { sent: 'fx-2:1.2' } }),
    ]);
  });
});

describe('a version-3 run stopped by its cost budget goes on', () => {
  it('budget-exhausted-cost: spent exactly; run() stays stopped until maxCostUsd is raised', async () => {
    const w = world([{ final: 'ok', usage: { inputTokens: 1000, outputTokens: 100, model: 'gpt-4.1' } }]);
    const agent = Agent.resume(read('budget-exhausted-cost', V3), { ...w.options, price });
    expect(agent.state).toMatchObject({
      stoppedBy: 'cost',
      usage: { costUsd: 0.0456 },
      limits: { maxCostUsd: 0.0456 },
    });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(w.asked).toEqual([]);
    agent.extendBudget({ maxCostUsd: 0.05 });
    expect(await agent.run()).toBe('done');
    expect(w.asked.map((a) => a.step)).toEqual([3]);
    // 1,000 input tokens at 2 and 100 output tokens at 8 dollars per million: 0.0028.
    expect(agent.state.usage.costUsd).toBe(0.0484);
  });

  it('budget-exhausted-cost-unknown: the reason is kept; raising the budget lets one more call be priced', async () => {
    const w = world([{ final: 'ok', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0.25 } }]);
    const agent = Agent.resume(read('budget-exhausted-cost-unknown', V3), { ...w.options, price });
    expect(agent.state).toMatchObject({
      stoppedBy: 'cost',
      error: 'cost unknown: no price for model "o9-preview"',
      usage: { costUsd: 1 },
    });
    expect(await agent.run()).toBe('budget_exhausted');
    agent.extendBudget({ maxCostUsd: 2 });
    expect(await agent.run()).toBe('done');
    expect(agent.state).toMatchObject({ error: null, usage: { costUsd: 1.25 } });
  });
});

describe('every deliberately broken fixture is refused with a CheckpointError', () => {
  const expected: Record<string, { path: string; message: string | RegExp }> = {
    // Made when version 3 was the future: now it is a version-2 snapshot labelled 3.
    'future-version-3': {
      path: 'snapshot.context.usage.costUsd',
      message: /^invalid checkpoint: snapshot\.context\.usage\.costUsd: /,
    },
    // Made when version 4 was the future: now it is a version-3 snapshot labelled 4.
    'future-version-4': {
      path: 'snapshot.context.compaction',
      message: /^invalid checkpoint: snapshot\.context\.compaction: /,
    },
    // Made when version 5 was the future: now it is a version-4 done run (status `done`) labelled 5.
    'future-version-5': {
      path: 'snapshot.status',
      message: 'invalid checkpoint: snapshot.status: status done does not fit state done',
    },
    'future-version-6': {
      path: 'version',
      message: 'invalid checkpoint: unsupported version 6; this build reads 1, 2, 3, 4, 5',
    },
    'v4-with-v5-fields': {
      path: 'snapshot.context.turn',
      message: 'invalid checkpoint: snapshot.context.turn: not a version-4 field',
    },
    'v5-turn-past-the-run': {
      path: 'snapshot.context.turn.steps',
      message: "invalid checkpoint: snapshot.context.turn.steps: a turn cannot begin after step 6, the run's last",
    },
    'v3-with-v4-fields': {
      path: 'snapshot.context.compaction',
      message: 'invalid checkpoint: snapshot.context.compaction: not a version-3 field',
    },
    'v4-summary-covers-itself': {
      path: 'snapshot.context.history.5.covers.to',
      message:
        'invalid checkpoint: snapshot.context.history.5.covers.to: a summary covers entries before it (it is entry 5)',
    },
    'v4-summary-extra-field': {
      path: 'snapshot.context.history.5',
      message: 'invalid checkpoint: snapshot.context.history.5: Unrecognized key: "model"',
    },
    'v4-summarising-renamed-invoke': {
      path: 'snapshot.children',
      message: 'invalid checkpoint: snapshot.children: the invoked actors do not match state {"running":"summarising"}',
    },
    'v2-with-v3-fields': {
      path: 'snapshot.context.usage.costUsd',
      message: 'invalid checkpoint: snapshot.context.usage.costUsd: not a version-2 field',
    },
    'v3-cost-not-micro-dollars': {
      path: 'snapshot.context.usage.costUsd',
      message: 'invalid checkpoint: snapshot.context.usage.costUsd: dollars to the micro-dollar',
    },
    'v3-negative-cost-budget': {
      path: 'snapshot.context.limits.maxCostUsd',
      message: /^invalid checkpoint: snapshot\.context\.limits\.maxCostUsd: /,
    },
    'inflight-while-awaiting': {
      path: 'snapshot.context.calls',
      message:
        'invalid checkpoint: snapshot.context.calls: awaiting approval: the first call without an outcome is pending, none running',
    },
    'renamed-invoke': {
      path: 'snapshot.children',
      message: 'invalid checkpoint: snapshot.children: the invoked actors do not match state {"running":"deciding"}',
    },
    'transient-state': { path: 'snapshot.value', message: /^invalid checkpoint: snapshot\.value: / },
    'unknown-state': { path: 'snapshot.value', message: /^invalid checkpoint: snapshot\.value: / },
    // Version 1 never had these fields; its own schema refused unknown context keys.
    'v1-with-v2-fields': {
      path: 'snapshot.context.calls',
      message: 'invalid checkpoint: snapshot.context.calls: not a version-1 field',
    },
    'v2-with-v1-fields': {
      path: 'snapshot.context',
      message: 'invalid checkpoint: snapshot.context: Unrecognized keys: "inflight", "pending"',
    },
  };

  it('each file has its expected refusal', () => {
    expect(namesIn(BROKEN)).toEqual(Object.keys(expected).sort());
  });

  for (const [name, { path, message }] of Object.entries(expected)) {
    it(name, async () => {
      const blob = read(name, BROKEN);
      const w = world();
      let error: unknown;
      try {
        const agent = Agent.resume(blob, w.options);
        await agent.decide(Object.fromEntries(idsOf(agent).map((id) => [id, { approve: true as const }])));
        await agent.run();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toBeInstanceOf(UserError);
      expect((error as CheckpointError).path).toBe(path);
      if (typeof message === 'string') expect((error as Error).message).toBe(message);
      else expect((error as Error).message).toMatch(message);
      expect(w.made).toEqual([]);
    });
  }
});
