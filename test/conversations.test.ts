/**
 * Conversations: `send(message)` goes on from a run that answered (or that a budget stopped) with
 * a new turn. The history keeps every turn; the run's budgets are the run's, `perTurn` limits count
 * from zero at each message; approvals and stored runs work as in the first turn; a stale copy of
 * a stored run is refused before it asks the policy.
 */
import { describe, expect, it } from 'vitest';
import {
  Agent,
  CheckpointError,
  type HistoryEntry,
  isSummaryEntry,
  OptionsError,
  type Policy,
  RunStateError,
  type Tool,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { scriptedPolicy } from '../src/testing/index.js';

/** Looks up each new message once, then answers with how long the history it saw was. */
const echo: Policy = (history) => {
  const last = history[history.length - 1];
  if (last?.role === 'user') return { tool: 'lookup', args: { q: last.content } };
  return { final: `answered after ${history.length} entries` };
};
const lookup: Tool = { name: 'lookup', fn: (args: { q: string }) => `found ${args.q}` };

describe('send', () => {
  it('goes on from done with a new turn: the history keeps every turn, steps and spending add up', async () => {
    const seen: number[] = [];
    const policy: Policy = (history, ctx) => {
      seen.push(history.length);
      return echo(history, ctx);
    };
    const agent = new Agent({ runId: 'chat', policy, tools: [lookup], maxSteps: 10 });
    expect(await agent.start('refund policy?')).toBe('done');
    expect(agent.state.turn).toMatchObject({ number: 1, steps: 2 });
    expect(await agent.send('and for gift cards?')).toBe('done');
    const { history, steps, answer, turn } = agent.state;
    expect(history.map((e) => e.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(history[4]).toEqual({ role: 'user', content: 'and for gift cards?' });
    expect(answer).toBe('answered after 7 entries');
    expect(steps).toBe(4);
    expect(turn).toMatchObject({ number: 2, steps: 2 });
    // Usage the policy did not report is charged at its estimate, in the turn as in the run.
    expect(turn.tokens).toBeGreaterThan(0);
    // The policy saw the whole conversation, each turn's message included.
    expect(seen).toEqual([1, 3, 5, 7]);
  });

  it("budgets are the run's: what earlier turns spent counts", async () => {
    const agent = new Agent({ policy: echo, tools: [lookup], maxSteps: 3 });
    expect(await agent.start('one')).toBe('done');
    expect(await agent.send('two')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ steps: 3, stoppedBy: 'steps', answer: null });
    agent.extendBudget({ maxSteps: 4 });
    expect(await agent.run()).toBe('done');
    expect(agent.state.answer).toBe('answered after 7 entries');
  });

  it('perTurn limits count from zero at each message; the run stopped by one goes on with the next', async () => {
    const talk: Policy = () => ({ tool: 'lookup', args: { q: 'more' } }); // never answers
    const agent = new Agent({ policy: talk, tools: [lookup], maxSteps: 10, perTurn: { maxSteps: 3 } });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ steps: 3, stoppedBy: 'turn', turn: { number: 1, steps: 3 } });
    // Running again does not lift a turn's limit…
    expect(await agent.run()).toBe('budget_exhausted');
    expect(agent.state.steps).toBe(3);
    // …a new message does, and the run's budget still holds.
    expect(await agent.send('try again')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ steps: 6, stoppedBy: 'turn', turn: { number: 2, steps: 3 } });
    expect(await agent.send('once more')).toBe('budget_exhausted');
    expect(await agent.send('and again')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ steps: 10, stoppedBy: 'steps', turn: { number: 4, steps: 1 } });
  });

  it('perTurn tokens and dollars: the policy is told the least of what the run and the turn leave', async () => {
    const told: unknown[] = [];
    const policy: Policy = (history, ctx) => {
      told.push(ctx.remaining);
      const action = echo(history, ctx);
      return { ...action, usage: { inputTokens: 40, outputTokens: 10, costUsd: 0.01 } };
    };
    const agent = new Agent({
      policy,
      tools: [lookup],
      maxSteps: 20,
      maxTokens: 1000,
      maxCostUsd: 1,
      perTurn: { maxTokens: 150, maxCostUsd: 0.025 },
    });
    expect(await agent.start('go')).toBe('done');
    expect(told[0]).toMatchObject({ steps: 20, tokens: 150, costUsd: 0.025 });
    expect(told[1]).toMatchObject({ steps: 19, tokens: 100, costUsd: 0.015 });
    expect(await agent.send('more')).toBe('done');
    expect(told[2]).toMatchObject({ steps: 18, tokens: 150, costUsd: 0.025 });
    expect(agent.state.usage).toMatchObject({ inputTokens: 160, outputTokens: 40, costUsd: 0.04 });
    // A turn that spends its dollars stops for the turn.
    agent.extendBudget({ perTurn: { maxCostUsd: 0.01 } });
    expect(await agent.send('third')).toBe('budget_exhausted');
    expect(agent.state).toMatchObject({ stoppedBy: 'turn', turn: { number: 3, steps: 1, costUsd: 0.01 } });
    // Without limits on a turn, it answers.
    expect(agent.extendBudget({ perTurn: null }).perTurn).toBeNull();
    expect(await agent.run()).toBe('done');
  });

  it('refuses a bad message or options, and every status but done and budget_exhausted; nothing changes', async () => {
    const pay: Tool = { name: 'pay', sideEffect: true, fn: () => 'paid' };
    const policy = scriptedPolicy([{ tool: 'pay', args: {} }, { final: 'paid' }]);
    const agent = new Agent({ runId: 'r', policy, tools: [pay] });
    await expect(agent.send('hello')).rejects.toMatchObject({
      name: 'RunStateError',
      message: 'send: the run is idle; expected done or budget_exhausted',
    });
    expect(await agent.start('pay')).toBe('awaiting_approval');
    const before = agent.checkpoint();
    await expect(agent.send('hello')).rejects.toBeInstanceOf(RunStateError);
    await expect(agent.send(42 as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(agent.send('x', { signal: 'no' } as never)).rejects.toThrow(
      'send: signal must be an AbortSignal, got "no"',
    );
    const aborted = new AbortController();
    aborted.abort(new Error('stop'));
    expect(await agent.decide(true)).toBe('done');
    const done = agent.checkpoint();
    await expect(agent.send('x', { signal: aborted.signal })).rejects.toThrow('stop');
    expect(agent.checkpoint()).toBe(done);
    expect(before).not.toBe(done);
    await agent.cancel('closed');
    await expect(agent.send('hello')).rejects.toMatchObject({
      message: 'send: the run is cancelled; the run was cancelled',
    });
  });

  it('a side effect in a later turn waits for a human as in the first, under a key of its own', async () => {
    let paid = 0;
    const pay: Tool = { name: 'pay', sideEffect: true, fn: (_args, key) => `paid ${++paid} ${key}` };
    const policy: Policy = (history) => {
      const last = history[history.length - 1];
      return last?.role === 'user' ? { tool: 'pay', args: { for: last.content } } : { final: 'ok' };
    };
    const agent = new Agent({ runId: 'p', policy, tools: [pay] });
    expect(await agent.start('first')).toBe('awaiting_approval');
    expect(await agent.decide(true)).toBe('done');
    expect(await agent.send('second')).toBe('awaiting_approval');
    expect(agent.state.pending).toMatchObject({ key: 'p:3', tool: 'pay', args: { for: 'second' } });
    expect(await agent.decide(true)).toBe('done');
    const results = agent.state.history.filter((e) => e.role === 'tool').map((e) => (e as { result: unknown }).result);
    expect(results).toEqual(['paid 1 p:1', 'paid 2 p:3']);
  });
});

describe('compaction across turns', () => {
  it("keeps the current turn's message in view once a summary covers it", async () => {
    const views: HistoryEntry[][] = [];
    const policy: Policy = (view, ctx) => {
      views.push(view);
      // Turn 2 looks up four times before it answers.
      const lookups = view.filter((e) => e.role === 'assistant' && 'tool' in e).length;
      return ctx.step === 1 || (ctx.step > 2 && ctx.step < 7 && lookups < 9)
        ? { tool: 'lookup', args: { q: `${ctx.step}` } }
        : { final: `answer ${ctx.step}` };
    };
    const agent = new Agent({
      policy,
      tools: [lookup],
      maxSteps: 20,
      compaction: { when: { entries: 5 }, keep: 1, summarize: (entries) => ({ text: `${entries.length} entries` }) },
    });
    expect(await agent.start('first')).toBe('done');
    expect(await agent.send('second')).toBe('done');
    const summaries = agent.state.history.filter(isSummaryEntry);
    const message = agent.state.history.findIndex((e) => e.role === 'user' && e.content === 'second');
    // A summary covers the message…
    expect(summaries.some((e) => e.covers.to >= message)).toBe(true);
    // …and every view of turn 2 still holds it, right after the goal and the summary.
    const second = views.slice(2);
    expect(second.length).toBeGreaterThan(2);
    for (const view of second)
      expect(view.filter((e) => e.role === 'user').map((e) => e.content)).toEqual(['first', 'second']);
    expect(agent.view()[2]).toEqual({ role: 'user', content: 'second' });
  });
});

describe('a stored conversation', () => {
  it('is saved with each turn; a stale copy of it is refused before it asks the policy', async () => {
    const store = new MemoryStore();
    let asked = 0;
    const policy: Policy = (history, ctx) => {
      asked++;
      return echo(history, ctx);
    };
    const first = new Agent({ runId: 'c', store, policy, tools: [lookup] });
    expect(await first.start('one')).toBe('done');
    const a = await Agent.load(store, 'c', { policy, tools: [lookup] });
    const b = await Agent.load(store, 'c', { policy, tools: [lookup] });
    expect(await a.send('two')).toBe('done');
    const stored = await Agent.load(store, 'c', { policy, tools: [lookup] });
    expect(stored.state.history).toEqual(a.state.history);
    expect(stored.state.turn.number).toBe(2);
    asked = 0;
    await expect(b.send('three')).rejects.toMatchObject({ name: 'ConflictError' });
    expect(asked).toBe(0);
    expect((await Agent.load(store, 'c', { policy, tools: [lookup] })).checkpoint()).toBe(stored.checkpoint());
  });

  it('a new turn of a run in a budget group spends from the group', async () => {
    const store = new MemoryStore();
    await store.setGroupBudget('acme', { maxCostUsd: 0.2 });
    const policy: Policy = (history, ctx) => ({
      ...echo(history, ctx),
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.1 },
    });
    const agent = new Agent({ runId: 'g', store, budgetGroup: 'acme', policy, tools: [lookup], maxSteps: 20 });
    expect(await agent.start('one')).toBe('done');
    expect((await store.groupSpend('acme')).costUsd).toBe(0.2);
    // Loaded at its answer: read without its group, which the new turn joins again.
    const again = await Agent.load(store, 'g', { policy, tools: [lookup] });
    expect(await again.send('two')).toBe('budget_exhausted');
    expect(again.state).toMatchObject({ stoppedBy: 'group', steps: 2 });
    expect((await store.groupSpend('acme')).costUsd).toBe(0.2);
  });

  it('a checkpoint taken mid-turn resumes the turn; one whose turn begins past the run is refused', async () => {
    const agent = new Agent({ runId: 'm', policy: echo, tools: [lookup], perTurn: { maxSteps: 5 } });
    await agent.start('one');
    await agent.send('two');
    const blob = agent.checkpoint();
    const again = Agent.resume(blob, { policy: echo, tools: [lookup] });
    expect(again.state.turn).toEqual(agent.state.turn);
    expect(await again.send('three')).toBe('done');
    const parsed = JSON.parse(blob);
    parsed.snapshot.context.turn.steps = 99;
    expect(() => Agent.resume(JSON.stringify(parsed), { policy: echo, tools: [lookup] })).toThrow(CheckpointError);
    expect(() => Agent.resume(JSON.stringify(parsed), { policy: echo, tools: [lookup] })).toThrow(
      "snapshot.context.turn.steps: a turn cannot begin after step 4, the run's last",
    );
  });

  it('perTurn is checked like every option', () => {
    const make = (perTurn: unknown) => new Agent({ policy: echo, tools: [lookup], perTurn } as never);
    expect(() => make({ maxSteps: 0 })).toThrow('new Agent: perTurn.maxSteps must be a whole number ≥ 1, got 0');
    expect(() => make({ maxSteep: 2 })).toThrow(OptionsError);
    expect(() => make(3)).toThrow(
      'new Agent: perTurn must be an object ({ maxSteps?, maxTokens?, maxCostUsd? }) or null, got 3',
    );
    expect(make({}).state.limits.perTurn).toBeUndefined();
    expect(make({ maxTokens: 9 }).state.limits.perTurn).toEqual({ maxTokens: 9 });
  });
});
