/**
 * Group budgets at the Agent (issue 16): `budgetGroup` puts a run in a group whose budget lives in
 * the store; every policy call holds what it may spend there before it is made and settles after
 * it (reserve, then settle: the group is never overshot); a run over its
 * group's budget stops `budget_exhausted` with `stoppedBy: 'group'`; the run's own `extendBudget`
 * does not lift that, raising the group's budget does; `Agent.load` keeps the group; a store that
 * cannot answer stops the policy from being called (fail closed). On the memory store; SQLite and
 * Postgres under concurrent runs: test/stores/group-budget-agents.int.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resumeOptionsOf } from '../src/define.js';
import { Agent, defineAgent, estimateTokens, OptionsError, type Policy, StoreUnavailableError } from '../src/index.js';
import { FileStore } from '../src/stores/file.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { submitRun, Worker } from '../src/worker/index.js';
import { recorder } from './support/helpers.js';

/** A policy that calls tool `t` forever, each call reporting `costUsd` and 10 tokens; counts its calls. */
function spending(costUsd = 0.1) {
  const policy = (() => {
    policy.calls++;
    return { tool: 't', usage: { inputTokens: 6, outputTokens: 4, costUsd } };
  }) as unknown as Policy & { calls: number };
  policy.calls = 0;
  return policy;
}

const tools = [recorder('t').tool];
const base = (store: MemoryStore, policy: Policy, runId: string) => ({
  store,
  policy,
  tools,
  runId,
  budgetGroup: 'acme',
  maxSteps: 100,
});

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('budgetGroup: the option', () => {
  it('needs a store with group budgets, and a well-formed group id', () => {
    const policy = spending();
    expect(() => new Agent({ policy, tools, budgetGroup: 'acme' })).toThrow(
      /new Agent: budgetGroup needs a store with group budgets .*no store was given/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-group-'));
    dirs.push(dir);
    expect(() => new Agent({ policy, tools, budgetGroup: 'acme', store: new FileStore({ dir }) })).toThrow(
      /budgetGroup needs a store with group budgets .*this store has none/,
    );
    const store = new MemoryStore();
    for (const bad of ['', 'a b', '../x', 'x'.repeat(129), 7]) {
      expect(() => new Agent({ policy, tools, store, budgetGroup: bad as string })).toThrow(OptionsError);
    }
    expect(() => new Agent({ policy, tools, store, budgetGroup: 'a b' })).toThrow(
      'new Agent: budgetGroup must be a group id: 1 to 128 characters of ASCII letters, digits and . _ : @ -, starting with a letter or digit, got "a b"',
    );
  });

  it('is per run: not in a definition, not at resume or load (the store keeps it)', async () => {
    expect(() => defineAgent({ name: 'a', policy: spending(), tools, budgetGroup: 'acme' } as never)).toThrow(
      /defineAgent: unknown option "budgetGroup"/,
    );
    const store = new MemoryStore();
    const agent = new Agent(base(store, spending(), 'r'));
    expect(() => Agent.resume(agent.checkpoint(), { policy: spending(), tools, budgetGroup: 'x' } as never)).toThrow(
      /unknown option "budgetGroup"/,
    );
  });
});

describe('a run in a group', () => {
  it('holds before every policy call, settles after it, and stops with stoppedBy group once the group has spent its budget', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.3 });
    const policy = spending(0.1);
    const agent = new Agent(base(store, policy, 'r1'));
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'group', steps: 3, usage: { costUsd: 0.3 } });
    expect(agent.state.error).toMatch(
      /^the group "acme" has spent \$0\.3 of its cost budget for \d{4}-\d{2}-\d{2}: the next call does not fit$/,
    );
    expect(policy.calls).toBe(3);
    const spend = await store.groupSpend('acme');
    expect(spend).toMatchObject({ tokens: 30, costUsd: 0.3, exhausted: 'cost' });
    expect(await store.groupOf('r1')).toBe('acme');
    // Another run of the group stops before its first call: the policy is never asked.
    const other = spending();
    const second = new Agent(base(store, other, 'r2'));
    expect(await second.start('go')).toBe('budget_exhausted');
    expect(second.state).toMatchObject({ stoppedBy: 'group', steps: 0 });
    expect(other.calls).toBe(0);
    // A run of another group is not stopped by it.
    const free = new Agent({ ...base(store, spending(), 'r3'), budgetGroup: 'other', maxSteps: 2 });
    expect(await free.start('go')).toBe('budget_exhausted');
    expect(free.state.stoppedBy).toBe('steps');
    expect((await store.groupSpend('other')).costUsd).toBe(0.2);
  });

  it('a token limit stops it too — before a call whose estimated request the group cannot fit; the run’s own budgets still apply first', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxTokens: 60 });
    const agent = new Agent(base(store, spending(0), 'r1'));
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('group');
    const spent = (await store.groupSpend('acme')).tokens;
    expect(spent).toBe(10 * agent.state.steps);
    // The next request (the view, a quarter token a character) and one output token did not fit what was left.
    expect(estimateTokens(agent.view()) + 1).toBeGreaterThan(60 - spent);
    expect(agent.state.error).toMatch(/of its tokens budget/);
    const own = new Agent({ ...base(store, spending(0), 'r2'), budgetGroup: 'roomy', maxSteps: 1 });
    expect(await own.start('go')).toBe('budget_exhausted');
    expect(own.state.stoppedBy).toBe('steps');
  });

  it('the run’s extendBudget does not lift a group stop; raising the group’s budget and run() does', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.2 });
    const policy = spending(0.1);
    const agent = new Agent({ ...base(store, policy, 'r1'), maxCostUsd: 1 });
    expect(await agent.start('go')).toBe('budget_exhausted');
    agent.extendBudget({ maxCostUsd: 100, maxSteps: 1000 });
    expect(agent.state.stoppedBy).toBe('group');
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('group');
    expect(policy.calls).toBe(2);
    await store.setGroupBudget('acme', { maxCostUsd: 0.5 });
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'group', steps: 5, usage: { costUsd: 0.5 } });
    expect(policy.calls).toBe(5);
  });

  it('Agent.load keeps the run in its group (from the store), and the group’s spending goes on', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.2 });
    const agent = new Agent(base(store, spending(0.1), 'r1'));
    expect(await agent.start('go')).toBe('budget_exhausted');
    await store.setGroupBudget('acme', { maxCostUsd: 0.3 });
    const policy = spending(0.1);
    const loaded = await Agent.load(store, 'r1', { policy, tools });
    expect(await loaded.run()).toBe('budget_exhausted');
    expect(loaded.state).toMatchObject({ stoppedBy: 'group', steps: 3 });
    expect(policy.calls).toBe(1);
    expect((await store.groupSpend('acme')).costUsd).toBe(0.3);
  });

  it('Agent.load reads the group of a run that can go on, not of one that has ended', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 10 });
    // The store's one-step open reads the group; the parts of it do on a store without open.
    const opened: (string | null)[] = [];
    const open = store.open.bind(store);
    store.open = async (runId, claim) => {
      const found = await open(runId, claim);
      opened.push(found?.group ?? null);
      return found;
    };
    const asked: string[] = [];
    const parts = new MemoryStore();
    await parts.setGroupBudget('acme', { maxCostUsd: 10 });
    const groupOf = parts.groupOf.bind(parts);
    parts.groupOf = (runId) => {
      asked.push(runId);
      return groupOf(runId);
    };
    (parts as { open?: unknown }).open = undefined;
    for (const s of [store, parts]) {
      const done = new Agent({ ...base(s, spending(0.1), 'ended'), maxSteps: 1 });
      expect(await done.start('go')).toBe('budget_exhausted');
      await done.cancel();
      expect((await Agent.load(s, 'ended', { policy: spending(), tools })).status).toBe('cancelled');
      const paused = new Agent({ ...base(s, spending(0.1), 'paused'), maxSteps: 1 });
      expect(await paused.start('go')).toBe('budget_exhausted');
      await Agent.load(s, 'paused', { policy: spending(), tools });
    }
    expect(opened).toEqual([null, 'acme']);
    expect(asked).toEqual(['paused']);
  });

  it('a run id already in another group is refused at its first save, before any policy call', async () => {
    const store = new MemoryStore();
    await store.joinGroup('r1', 'other');
    const policy = spending();
    const agent = new Agent(base(store, policy, 'r1'));
    await expect(agent.start('go')).rejects.toThrow(
      'joinGroup: run "r1" is in group "other"; a run cannot move to group "acme"',
    );
    expect(policy.calls).toBe(0);
    expect(await store.load('r1')).toBeNull();
    expect(await store.groupOf('r1')).toBe('other');
  });

  it('a run id created in a group stays in it: made again without budgetGroup (after a delete), it spends from that group', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.2 });
    const first = new Agent(base(store, spending(0.1), 'r1'));
    expect(await first.start('go')).toBe('budget_exhausted');
    expect(first.state.stoppedBy).toBe('group');
    expect(await store.delete('r1')).toBe(true); // the run is gone; its membership is not
    const policy = spending(0.1);
    const again = new Agent({ store, policy, tools, runId: 'r1', maxSteps: 100 });
    expect(await again.start('go')).toBe('budget_exhausted');
    expect(again.state.stoppedBy).toBe('group');
    expect(policy.calls).toBe(0);
    expect(await store.groupOf('r1')).toBe('acme');
    // And through the worker API: a run submitted without a group under an id that is in one.
    expect(await store.delete('r1')).toBe(true);
    const def = defineAgent({ name: 'spender', policy: spending(0.1), tools, maxSteps: 50 });
    await submitRun(store, { agent: def, goal: 'x', runId: 'r1' });
    await new Worker({ store, agents: [def] }).drain();
    expect((await store.load('r1'))?.status).toBe('budget_exhausted');
    expect((await store.groupSpend('acme')).costUsd).toBe(0.2);
  });

  it("a call waits while other runs hold the group's room, and goes on once they settle", async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 1 });
    let release: (value: unknown) => void = () => {};
    const slow = (() =>
      new Promise((resolve) => {
        release = resolve;
      })) as unknown as Policy;
    // Unpriced: a call holds all the group has left until it settles.
    const a = new Agent({ ...base(store, slow, 'a'), maxSteps: 1 });
    const first = a.start('go');
    await new Promise((r) => setTimeout(r, 20));
    const policy = spending(0.1);
    const b = new Agent({ ...base(store, policy, 'b'), maxSteps: 1 });
    const second = b.start('go');
    await new Promise((r) => setTimeout(r, 100));
    expect(policy.calls).toBe(0); // waiting for a's hold, not stopped: the group is not spent
    expect(b.status).toBe('running');
    release({ tool: 't', usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.3 } });
    expect(await first).toBe('budget_exhausted');
    expect(await second).toBe('budget_exhausted');
    expect(policy.calls).toBe(1);
    expect([a.state.stoppedBy, b.state.stoppedBy]).toEqual(['steps', 'steps']);
    expect((await store.groupSpend('acme')).costUsd).toBe(0.4);
  });

  it('a run loaded with its policy call in flight checks its group before making that call again', async () => {
    const store = new MemoryStore();
    const def = defineAgent({ name: 'spender', policy: spending(), tools, maxSteps: 50 });
    // submitRun stores the write-ahead record of the first policy call: "running, call in flight".
    await submitRun(store, { agent: def, goal: 'x', runId: 'w1', budgetGroup: 'acme' });
    await store.setGroupBudget('acme', { maxCostUsd: 0.1 });
    await store.spendGroup('acme', { tokens: 0, costMicroUsd: 100_000 });
    const policy = spending();
    const agent = await Agent.load(store, 'w1', { policy, tools });
    expect(agent.status).toBe('running');
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'group', steps: 0 });
    expect(policy.calls).toBe(0);
  });

  it('an unknown cost fills the group’s cost limit (fail closed) and stops the group’s runs', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 5 });
    const policy = (() => ({ tool: 't', usage: { inputTokens: 1, outputTokens: 1, model: 'o9' } })) as Policy;
    const agent = new Agent({
      ...base(store, policy, 'r1'),
      price: { 'gpt-4.1': { inputUsdPerMTok: 1, outputUsdPerMTok: 1 } },
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'group', steps: 1 });
    expect(await store.groupSpend('acme')).toMatchObject({ costUsd: 5, exhausted: 'cost' });
  });

  it('a hostile usage cannot overshoot the group: each call is charged at most what it held; costs are capped as the store caps them', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxTokens: 10_000 });
    const huge = Number.MAX_SAFE_INTEGER;
    const policy = (() => ({ tool: 't', usage: { inputTokens: huge, outputTokens: huge, costUsd: 1e12 } })) as Policy;
    const agent = new Agent(base(store, policy, 'r1'));
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('group');
    expect(agent.state.steps).toBeGreaterThan(1);
    expect(await store.groupSpend('acme')).toMatchObject({ tokens: 10_000, costUsd: 1e9, exhausted: 'tokens' });
    expect(agent.state.usage.inputTokens + agent.state.usage.outputTokens).toBe(10_000);
  });

  it('a daily budget starts again at 00:00 UTC on the store’s clock', async () => {
    const clock = { now: Date.parse('2026-05-06T23:00:00.000Z') };
    const store = new MemoryStore({ now: () => clock.now });
    await store.setGroupBudget('acme', { maxCostUsd: 0.2 });
    const agent = new Agent(base(store, spending(0.1), 'r1'));
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.steps).toBe(2);
    clock.now += 3_600_000;
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'group', steps: 4 });
    expect(await store.groupSpend('acme')).toMatchObject({ window: '2026-05-07', costUsd: 0.2 });
  });
});

/** A memory store whose group holds (`check`) or settlements (`spend`) fail while `down` says so. */
function flaky() {
  const store = new MemoryStore();
  const state = { down: { check: false, spend: false } };
  const hold = store.holdGroup.bind(store);
  const settle = store.settleGroup.bind(store);
  store.holdGroup = async (group, request) => {
    if (state.down.check) throw new Error('connection refused');
    return hold(group, request);
  };
  store.settleGroup = async (group, settlement) => {
    if (state.down.spend) throw new Error('connection reset');
    return settle(group, settlement);
  };
  return { store, state };
}

describe('a run that lost its lease', () => {
  it('is refused its hold (LeaseLostError): it stops in this process, calls no policy, and the new owner’s hold still counts', async () => {
    const clock = { now: Date.parse('2026-05-06T07:08:09.010Z') };
    const store = new MemoryStore({ now: () => clock.now });
    await store.setGroupBudget('acme', { maxTokens: 10_000 });
    const hold = store.holdGroup.bind(store);
    let taken: { token: number } | null = null;
    // Between A's save and its next hold, A is paused past its lease and B takes the run over and holds.
    store.holdGroup = async (group, request) => {
      if (request.runId === 'r1' && taken === null && policy.calls === 1) {
        clock.now += 120_000;
        taken = await store.claim('r1', { owner: 'b', leaseMs: 60_000 });
        expect((await hold(group, { ...request, token: taken.token, tokens: 9_000, minTokens: 9_000 })).held).toEqual({
          tokens: 9_000,
          costMicroUsd: 0,
        });
      }
      return hold(group, request);
    };
    const policy = spending(0);
    const a = new Agent({ ...base(store, policy, 'r1'), owner: 'a', leaseMs: 60_000 });
    const stopped = await a.start('go').catch((error: unknown) => error);
    // The hold's refusal itself stops the run (not a later save): the run is not saved as failed.
    expect(stopped).toMatchObject({
      name: 'LeaseLostError',
      message: expect.stringMatching(
        /^holdGroup: run "r1" asked a hold with lease token 1, which is not live: the run was claimed again \(token 2\) by "b"/,
      ),
      currentToken: (taken as { token: number } | null)?.token,
    });
    expect(policy.calls).toBe(1);
    // B's hold of 9,000 still keeps another run out of all but 1,000 tokens.
    const c = await store.claim('r2', { owner: 'c', leaseMs: 60_000 });
    const other = { runId: 'r2', token: c.token, tokens: 2_000, costMicroUsd: 0, minTokens: 1_001, minCostMicroUsd: 0 };
    expect((await hold('acme', other)).held).toBeNull();
  });
});

describe('a call that fails', () => {
  it('gives its hold back: a policy that throws is charged nothing, as the run’s own budget charges it', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxTokens: 1_000 });
    const failing = (() => {
      throw new Error('model server said 500');
    }) as Policy;
    const a = new Agent({ ...base(store, failing, 'r1'), policyRetries: 0 });
    expect(await a.start('go')).toBe('failed');
    // Another run's hold charges the holds of leases no longer live: r1's was given back, so nothing.
    const policy = spending(0);
    const b = new Agent({ ...base(store, policy, 'r2'), maxSteps: 1 });
    expect(await b.start('go')).toBe('budget_exhausted');
    expect(await store.groupSpend('acme')).toMatchObject({ tokens: 10 });
  });

  it('but the hold of an owner gone with its call in flight is charged as spent at the next hold: the call may have been billed', async () => {
    const clock = { now: Date.parse('2026-05-06T07:08:09.010Z') };
    const store = new MemoryStore({ now: () => clock.now });
    await store.setGroupBudget('acme', { maxTokens: 100_000 });
    let called = () => {};
    const inFlight = new Promise<void>((resolve) => {
      called = resolve;
    });
    const hanging = ((_view: unknown, ctx: { signal: AbortSignal }) => {
      called();
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    }) as unknown as Policy;
    const a = new Agent({ ...base(store, hanging, 'r1'), owner: 'a', leaseMs: 60_000 });
    const gone = a.start('go').catch((error: unknown) => error);
    await inFlight;
    clock.now += 120_000; // a's process is gone as far as the store knows: its lease lapsed, the call in flight
    const b = new Agent({ ...base(store, spending(0), 'r2'), owner: 'b', maxSteps: 1 });
    expect(await b.start('go')).toBe('budget_exhausted');
    const { tokens } = await store.groupSpend('acme');
    // a's hold: its estimated request and the default output cap (4,096); then b's call, 10 tokens.
    expect(tokens - 10).toBe(estimateTokens([{ type: 'goal', text: 'go' }] as never) + 4_096);
    expect(await a.cancel()).toBe('cancelled'); // nobody took r1 over: its owner may still end it
    expect(await gone).toBe('cancelled');
    expect((await store.groupSpend('acme')).tokens).toBe(tokens);
  });
});

describe('fail closed', () => {
  const unavailable =
    /^the budget of group "acme" could not be checked, so the call was not made: Error: connection refused$/;

  it('a group check the store cannot answer calls no policy: the run stops in this process, still running, and a reload goes on', async () => {
    const { store, state } = flaky();
    state.down.check = true;
    const policy = spending(0.1);
    const { store: _, runId, budgetGroup, ...options } = { ...base(store, policy, 'r1'), maxSteps: 2 };
    const agent = new Agent({ ...options, store, runId, budgetGroup });
    const stopped = await agent.start('go').catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(StoreUnavailableError);
    expect((stopped as Error).message).toMatch(unavailable);
    expect(policy.calls).toBe(0);
    // Not ended: the run is at its write-ahead point, its lease given up, for whoever takes it next.
    expect((await store.load('r1'))?.status).toBe('running');
    const probe = await store.claim('r1', { owner: 'probe', leaseMs: 1_000 });
    await store.release(probe);
    // This process does not work it any more.
    await expect(agent.run()).rejects.toBe(stopped);
    state.down.check = false;
    const again = await Agent.load(store, runId, options);
    expect(await again.run()).toBe('budget_exhausted');
    expect(again.state).toMatchObject({ stoppedBy: 'steps', error: null });
    expect(policy.calls).toBe(2);
  });

  it('a charge the store cannot take stops the run at the next check; the hold it left is charged as spent, never less', async () => {
    const { store, state } = flaky();
    await store.setGroupBudget('acme', { maxCostUsd: 1 });
    const policy = spending(0.1);
    const { store: _, runId, budgetGroup, ...options } = { ...base(store, policy, 'r1'), maxSteps: 3 };
    const agent = new Agent({ ...options, store, runId, budgetGroup });
    state.down.spend = true;
    // The first call's charge fails, and so does the check before the second (it must add it first).
    await expect(agent.start('go')).rejects.toThrow(
      /could not be checked, so the call was not made: Error: connection reset/,
    );
    expect(policy.calls).toBe(1);
    state.down.spend = false;
    // The lease was given up with the hold unsettled: the hold is charged as spent. A call that
    // cannot be priced in advance held all the group's room, so the group is spent.
    const again = await Agent.load(store, runId, options);
    expect(await again.run()).toBe('budget_exhausted');
    expect(again.state.stoppedBy).toBe('group');
    expect(policy.calls).toBe(1);
    expect(await store.groupSpend('acme')).toMatchObject({ costUsd: 1, exhausted: 'cost' });
  });

  it('a worker whose group check fails gives the run up, and works it again once the store answers', async () => {
    const { store, state } = flaky();
    const clock = new ManualClock(Date.parse('2026-05-06T07:08:09.010Z'));
    const def = defineAgent({ name: 'spender', policy: spending(0.1), tools, maxSteps: 2 });
    await submitRun(store, { agent: def, goal: 'x', runId: 'w1', budgetGroup: 'acme' });
    state.down.check = true;
    const worker = new Worker({ store, agents: [def], clock });
    const events: string[] = [];
    worker.observe((event) => events.push(event.type));
    await worker.drain();
    expect((await store.load('w1'))?.status).toBe('running');
    expect(events).toContain('error');
    state.down.check = false;
    await worker.drain();
    const agent = await Agent.load(store, 'w1', resumeOptionsOf(def));
    expect(agent.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'steps', steps: 2, error: null });
  });
});

describe('workers', () => {
  it('submitRun({ budgetGroup }) puts the run in its group before it is stored; a worker’s run stops for the group', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.25 });
    const def = defineAgent({ name: 'spender', policy: spending(0.1), tools, maxSteps: 50 });
    await submitRun(store, { agent: def, goal: 'x', runId: 'w1', budgetGroup: 'acme' });
    expect(await store.groupOf('w1')).toBe('acme');
    await new Worker({ store, agents: [def] }).drain();
    const agent = await Agent.load(store, 'w1', resumeOptionsOf(def));
    expect(agent.state).toMatchObject({ status: 'budget_exhausted', stoppedBy: 'group', steps: 3 });
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-group-'));
    dirs.push(dir);
    await expect(submitRun(new FileStore({ dir }), { agent: def, goal: 'x', budgetGroup: 'acme' })).rejects.toThrow(
      /submitRun: budgetGroup needs a store with group budgets/,
    );
    await expect(submitRun(store, { agent: def, goal: 'x', budgetGroup: 'no way' })).rejects.toThrow(OptionsError);
  });
});

describe('budgetGroup with compaction', () => {
  /** A policy that calls `t` forever, reporting 10 tokens and no cost. */
  const looping: Policy = () => ({ tool: 't', usage: { inputTokens: 6, outputTokens: 4 } });

  it('a summary’s tokens and cost are spent by the group too', async () => {
    const store = new MemoryStore();
    const summaries: number[] = [];
    const agent = new Agent({
      store,
      tools,
      runId: 'r',
      budgetGroup: 'acme',
      maxSteps: 6,
      policy: looping,
      compaction: {
        when: { entries: 6 },
        keep: 1,
        summarize: (_entries, ctx) => {
          summaries.push(ctx.step);
          return { text: 'so far', usage: { inputTokens: 100, outputTokens: 1, costUsd: 0.5 } };
        },
      },
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('steps');
    expect(summaries.length).toBeGreaterThan(0);
    const spend = await store.groupSpend('acme');
    expect(spend.tokens).toBe(6 * 10 + summaries.length * 101);
    expect(spend.costUsd).toBe(summaries.length * 0.5);
    expect(agent.state.usage.inputTokens + agent.state.usage.outputTokens).toBe(spend.tokens);
  });

  it('a group out of budget pays for no summary: the run stops for the group before summarising', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxTokens: 300 });
    let summaries = 0;
    const agent = new Agent({
      store,
      tools,
      runId: 'r',
      budgetGroup: 'acme',
      maxSteps: 50,
      policy: () => ({ tool: 't', usage: { inputTokens: 90, outputTokens: 10 } }),
      compaction: {
        when: { entries: 6 },
        keep: 1,
        summarize: () => {
          summaries++;
          return { text: 'so far', usage: { inputTokens: 1, outputTokens: 1 } };
        },
      },
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('group');
    // Three policy calls spend the 300 tokens; the history then asks for a summary, but the group is out.
    expect(agent.state.steps).toBe(3);
    expect(summaries).toBe(0);
    expect((await store.groupSpend('acme')).tokens).toBe(300);
  });
});
