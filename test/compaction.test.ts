/**
 * Compaction (issue 16): a summary entry recorded in the journal, the model's view handed to the
 * policy (goal, latest summary, recent turns), folding summaries, `keep` never splitting a step,
 * the summariser's usage spent from the budgets, failures that leave the run going, and crashes
 * mid-summary that ask again and never record two summaries.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { latestSummary, latestSummaryGrowing, modelView } from '../machines/compaction.js';
import { resumeOptionsOf } from '../src/define.js';
import {
  Agent,
  type CompactionOptions,
  defineAgent,
  type HistoryEntry,
  isSummaryEntry,
  LeaseLostError,
  OptionsError,
  type Policy,
  type RunEvent,
  type SummaryContext,
} from '../src/index.js';
import { joinRun } from '../src/store/contract.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';
import { submitRun, Worker } from '../src/worker/index.js';
import { gate, mortal, recorder, until } from './support/helpers.js';

/** A policy that calls `t` `n` times with its step number, then answers; records the views it got. */
function stepper(n: number) {
  const views: HistoryEntry[][] = [];
  const policy: Policy = (view, ctx) => {
    views.push(view);
    return ctx.step > n ? { final: 'done' } : { tool: 't', args: { i: ctx.step } };
  };
  return { policy, views };
}

/** A summariser that names the entries it was given; records its calls. */
function namer(usage?: { inputTokens: number; outputTokens: number; costUsd?: number }) {
  const calls: { entries: HistoryEntry[]; ctx: SummaryContext }[] = [];
  const summarize: CompactionOptions['summarize'] = (entries, ctx) => {
    calls.push({ entries, ctx });
    const text = `${ctx.covers.from}-${ctx.covers.to}`;
    return usage ? { text, usage } : text;
  };
  return { summarize, calls };
}

describe('the model view', () => {
  it('keeps the journal whole and gives the policy the goal, the latest summary and the recent turns', async () => {
    const { policy, views } = stepper(6);
    const s = namer();
    const agent = new Agent({
      policy,
      tools: [recorder('t').tool],
      maxSteps: 20,
      compaction: { when: { entries: 5 }, keep: 1, summarize: s.summarize },
    });
    expect(await agent.start('goal')).toBe('done');
    const history = agent.state.history;
    // 1 goal, 6 steps of 2 entries, the final, and the summaries.
    expect(history.filter((e) => !isSummaryEntry(e))).toHaveLength(1 + 12 + 1);
    const summaries = history.filter(isSummaryEntry);
    expect(summaries.length).toBeGreaterThan(0);
    for (const view of views) expect(view.length).toBeLessThanOrEqual(5);
    // The first summary: entries 1-4 (steps 1 and 2) when step 3 is done; step 3 kept.
    expect(history[7]).toEqual({ role: 'summary', text: '1-4', covers: { from: 1, to: 4 } });
    expect(s.calls[0]?.entries).toEqual(history.slice(1, 5));
    // Folding: the second summariser call is given the first summary and the newly covered entries.
    expect(s.calls[1]?.entries[0]).toEqual(history[7]);
    expect(s.calls[1]?.entries.slice(1)).toEqual(history.slice(5, 7));
    // The view is the goal, the latest summary, and what follows its range (summaries left out).
    expect(agent.view()).toEqual(modelView(history));
    const latest = summaries.at(-1);
    expect(agent.view().slice(0, 2)).toEqual([history[0], latest]);
  });
});

describe('the latest summary of a growing journal', () => {
  const entry = (k: string, i: number): HistoryEntry =>
    k === 'summary'
      ? { role: 'summary', text: `s${i}`, covers: { from: 1, to: 1 } }
      : { role: 'user', content: `u${i}` };
  it('is what a whole scan finds after any appends, cuts and new arrays (it scans only what is new)', () => {
    const op = fc.oneof(
      fc.record({ push: fc.array(fc.constantFrom('user', 'summary'), { maxLength: 4 }) }),
      fc.record({ cut: fc.nat({ max: 12 }) }),
      fc.record({ copy: fc.constant(true) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        let journal: HistoryEntry[] = [entry('user', 0)];
        for (const [i, o] of ops.entries()) {
          if ('push' in o) journal.push(...o.push.map((k) => entry(k, i)));
          else if ('cut' in o) journal.length = Math.min(journal.length, Math.max(1, o.cut));
          else journal = journal.slice();
          expect(latestSummaryGrowing(journal)).toBe(latestSummary(journal));
        }
      }),
    );
  });
});

/** A run of `n` steps of `t` with compaction, at rest once done. */
function compacted(n: number, compaction: Partial<CompactionOptions>, extra: Record<string, unknown> = {}) {
  const { policy, views } = stepper(n);
  const s = namer();
  const agent = new Agent({
    policy,
    tools: [recorder('t').tool],
    maxSteps: 100,
    ...extra,
    compaction: { when: { entries: 5 }, keep: 1, summarize: s.summarize, ...compaction } as CompactionOptions,
  });
  return { agent, views, calls: s.calls };
}

describe('keep', () => {
  it('never splits a step from its results: a step of several calls is kept or summarised whole', async () => {
    const views: HistoryEntry[][] = [];
    const policy: Policy = (view, ctx) => {
      views.push(view);
      if (ctx.step > 4) return { final: 'done' };
      return {
        calls: [
          { tool: 't', args: { a: ctx.step } },
          { tool: 't', args: { b: ctx.step } },
        ],
      };
    };
    const covered: number[] = [];
    const agent = new Agent({
      policy,
      tools: [recorder('t').tool],
      compaction: {
        when: { entries: 4 },
        keep: 1,
        summarize: (_e, ctx) => {
          covered.push(ctx.covers.to);
          return 'sum';
        },
      },
    });
    expect(await agent.start('goal')).toBe('done');
    const history = agent.state.history;
    for (const to of covered) {
      // The entry after the covered range starts a turn: an assistant entry (or a summary).
      expect(['assistant', 'summary']).toContain(history[to + 1]?.role);
      expect(history[to]?.role).toBe('tool');
    }
    for (const view of views) {
      // In the view every call has its result right after its assistant entry.
      for (const [i, e] of view.entries()) {
        if (e.role === 'tool') expect(['assistant', 'tool']).toContain(view[i - 1]?.role);
      }
    }
  });

  it('keeps the goal in every view, and keep: 0 summarises every turn but the goal', async () => {
    const { agent, views } = compacted(5, { keep: 0 });
    expect(await agent.start('the goal')).toBe('done');
    for (const view of views) expect(view[0]).toEqual({ role: 'user', content: 'the goal' });
    expect(views.at(-1)?.map((e) => e.role)).toEqual(['user', 'summary']);
  });

  it('does not summarise again when only kept turns are over the threshold', async () => {
    // Each step is one turn of 2 entries; keep 3 turns = 6 entries > the threshold of 2.
    const { agent, calls } = compacted(6, { keep: 3, when: { entries: 2 } });
    expect(await agent.start('goal')).toBe('done');
    // One summary per step at most (each covers one more turn), never two for one range.
    const tos = agent.state.history.filter(isSummaryEntry).map((e) => e.covers.to);
    expect(new Set(tos).size).toBe(tos.length);
    expect(calls).toHaveLength(tos.length);
    expect(tos).toEqual([2, 4, 6]);
  });
});

describe('the threshold', () => {
  it("on estimated tokens: the default estimate is the view's JSON length / 4", async () => {
    const { agent, views } = compacted(8, { when: { tokens: 60 } });
    expect(await agent.start('goal')).toBe('done');
    expect(agent.state.history.some(isSummaryEntry)).toBe(true);
    // Over the threshold only with the kept turn alone (which is never summarised).
    for (const view of views.slice(1)) expect(Math.ceil(JSON.stringify(view).length / 4)).toBeLessThanOrEqual(60);
  });

  it('on a given estimate; an estimate that throws or is not a number falls back to the default', async () => {
    const counted: number[] = [];
    const ok = compacted(6, {
      when: {
        tokens: 3,
        estimate: (v) => {
          counted.push(v.length);
          return v.length;
        },
      },
    });
    await ok.agent.start('goal');
    expect(counted.length).toBeGreaterThan(0);
    for (const view of ok.views) expect(view.length).toBeLessThanOrEqual(3 + 2);
    for (const bad of [
      () => Number.NaN,
      () => -1,
      () => 'many' as never,
      () => {
        throw new Error('no');
      },
    ]) {
      const run = compacted(6, { when: { tokens: 10_000, estimate: bad } });
      expect(await run.agent.start('goal')).toBe('done');
      expect(run.calls).toEqual([]); // the default estimate stays under 10,000 tokens
    }
  });
});

describe('budgets', () => {
  it("spends a summary's tokens and cost, counts no step for it, and says it remains in ctx", async () => {
    const seen: SummaryContext['remaining'][] = [];
    const agent = new Agent({
      policy: (_v, ctx) =>
        ctx.step > 4
          ? { final: 'ok', usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01 } }
          : { tool: 't', usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01 } },
      tools: [recorder('t').tool],
      maxCostUsd: 10,
      maxTokens: 10_000,
      compaction: {
        when: { entries: 4 },
        keep: 1,
        summarize: (_e, ctx) => {
          seen.push(ctx.remaining);
          return { text: 's', usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.5 } };
        },
      },
    });
    expect(await agent.start('go')).toBe('done');
    const n = agent.state.history.filter(isSummaryEntry).length;
    // After steps 2, 3 and 4 (the view over 4 entries each time); a summary is no step.
    expect(n).toBe(3);
    expect(agent.state.steps).toBe(5);
    expect(agent.state.usage).toEqual({ inputTokens: 50 + 300, outputTokens: 5 + 60, costUsd: 0.05 + 1.5 });
    // The first summary, after 2 policy calls: what the budgets leave then (maxSteps defaults to 8).
    expect(seen[0]).toEqual({ steps: 6, tokens: 10_000 - 22, activeMs: null, costUsd: 9.98 });
    expect(seen[1]).toEqual({ steps: 5, tokens: 10_000 - 33 - 120, activeMs: null, costUsd: 9.47 });
  });

  it('is checked before summarising: a spent budget stops the run before the summary, as before a policy call', async () => {
    const stopped = compacted(9, {}, { maxSteps: 3 });
    expect(await stopped.agent.start('go')).toBe('budget_exhausted');
    // 3 steps: 7 entries over 5; but the budget is checked first, so no summary is made.
    expect(stopped.calls).toEqual([]);
    expect(stopped.agent.state.stoppedBy).toBe('steps');
  });

  it('a summary that spends the token budget stops the run before the next policy call', async () => {
    const agent = new Agent({
      policy: (_v, ctx) => ({ tool: 't', usage: { inputTokens: 1, outputTokens: 1 }, ...(ctx.step > 9 ? {} : {}) }),
      tools: [recorder('t').tool],
      maxTokens: 100,
      compaction: {
        when: { entries: 4 },
        keep: 1,
        summarize: () => ({ text: 's', usage: { inputTokens: 90, outputTokens: 10 } }),
      },
    });
    expect(await agent.start('go')).toBe('budget_exhausted');
    expect(agent.state.stoppedBy).toBe('tokens');
    expect(agent.state.history.at(-1)?.role).toBe('summary');
    // 2 steps of 2 tokens, then the summary's 100 — charged at the 96 left, never past the budget:
    // no third policy call.
    expect(agent.state.steps).toBe(2);
    expect(agent.state.usage).toMatchObject({ inputTokens: 92, outputTokens: 8 });
    expect(agent.state.error).toBe('the call reported 100 tokens, more than the 96 it could spend: charged 96');
  });

  it('a summary whose cost cannot be known fails closed under a cost budget (it spends what is left)', async () => {
    for (const usage of [
      undefined,
      { inputTokens: -5, outputTokens: 1 },
      { inputTokens: 1, outputTokens: 1, costUsd: -1 },
    ]) {
      const agent = new Agent({
        policy: () => ({ tool: 't', usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.001 } }),
        tools: [recorder('t').tool],
        maxCostUsd: 1,
        compaction: {
          when: { entries: 4 },
          keep: 1,
          summarize: () => (usage === undefined ? 'plain text' : { text: 's', usage }),
        },
      });
      expect(await agent.start('go')).toBe('budget_exhausted');
      expect(agent.state.stoppedBy).toBe('cost');
      expect(agent.state.usage.costUsd).toBe(1);
      expect(agent.state.error).toMatch(/^cost unknown: /);
      expect(agent.state.history.at(-1)?.role).toBe('summary');
    }
  });
});

describe('a failed summary', () => {
  /** An agent of 8 steps that summarises with `summarize` once its view is over 5 entries; not started. */
  const summarising = (summarize: CompactionOptions['summarize'], extra: Partial<CompactionOptions> = {}) => {
    const { policy, views } = stepper(8);
    let asked = 0;
    const agent = new Agent({
      policy,
      tools: [recorder('t').tool],
      maxSteps: 100,
      compaction: {
        when: { entries: 5 },
        keep: 1,
        summarize: (e, c) => {
          asked++;
          return summarize(e, c);
        },
        ...extra,
      },
    });
    return { agent, views, asked: () => asked };
  };
  const failing = async (summarize: CompactionOptions['summarize'], extra: Partial<CompactionOptions> = {}) => {
    const made = summarising(summarize, extra);
    return { ...made, status: await made.agent.start('go') };
  };

  it('leaves the history uncompacted and the run going, the error kept; tried once a step, given up after 3', async () => {
    const steps: number[] = [];
    const r = await failing((_e, ctx) => {
      steps.push(ctx.step);
      throw new TypeError('model down');
    });
    expect(r.status).toBe('done');
    expect(r.asked()).toBe(3);
    // Never twice before one policy call: before steps 4, 5 and 6 (the view is first over 5 entries after step 3).
    expect(steps).toEqual([4, 5, 6]);
    expect(r.agent.state.history.some(isSummaryEntry)).toBe(false);
    expect(r.agent.state.compaction).toMatchObject({ failures: 3, error: 'TypeError: model down' });
    // The policy got the whole history each time.
    expect(r.views.at(-1)).toEqual(r.agent.state.history.slice(0, -1));
    expect(r.agent.state.error).toBeNull();
  });

  it('is reported to observers (a success after failures too); a summary that succeeds is an entry', async () => {
    const { policy } = stepper(6);
    let n = 0;
    const agent = new Agent({
      policy,
      tools: [recorder('t').tool],
      compaction: {
        when: { entries: 5 },
        keep: 1,
        summarize: () => {
          n++;
          if (n === 1) throw new Error('busy');
          return 'ok';
        },
      },
    });
    const events: RunEvent[] = [];
    agent.observe((e) => events.push(e));
    expect(await agent.start('go')).toBe('done');
    expect(events.filter((e) => e.type === 'compaction')).toEqual([
      { type: 'compaction', compaction: { failures: 1, error: 'Error: busy', retryAt: 8 } },
      { type: 'compaction', compaction: { failures: 0, error: null, retryAt: 0 } },
    ]);
    const summaries = events.flatMap((e) => (e.type === 'entry' && isSummaryEntry(e.entry) ? [e.entry] : []));
    expect(summaries).toEqual(agent.state.history.filter(isSummaryEntry));
  });

  it('a success after failures resets the count and clears the error', async () => {
    let n = 0;
    const r = await failing(() => {
      n++;
      if (n <= 2) throw new Error(`down ${n}`);
      return 'back';
    });
    expect(r.status).toBe('done');
    expect(r.agent.state.compaction).toEqual({ failures: 0, error: null, retryAt: 0 });
    expect(r.agent.state.history.filter(isSummaryEntry).length).toBeGreaterThan(1);
  });

  it('hostile answers are failures with a typed reason, never a crash', async () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const cases: [unknown, RegExp][] = [
      [42, /^Error: summarize returned 42, not a string or \{ text, usage\? \}$/],
      [null, /not a string or/],
      [{ text: 7 }, /summarize returned text 7, not a string/],
      ['   ', /an empty summary/],
      [revoked.proxy, /summarize returned|could not be read/],
      [
        Object.defineProperty({}, 'text', {
          enumerable: true,
          get() {
            throw new Error('boom');
          },
        }),
        /could not be read: Error: boom/,
      ],
    ];
    for (const [answer, reason] of cases) {
      const r = await failing(() => answer as string);
      expect(r.status).toBe('done');
      expect(r.agent.state.compaction.error).toMatch(reason);
      expect(() => Agent.resume(r.agent.checkpoint(), { policy: () => ({ final: 1 }), tools: [] })).not.toThrow();
    }
  });

  it('a huge summary is cut to MAX_SUMMARY_LENGTH characters, with a note', async () => {
    const r = await failing(() => 'x'.repeat(1_000_000));
    const summary = r.agent.state.history.find(isSummaryEntry);
    expect(summary?.text.length).toBeLessThan(20_100);
    expect(summary?.text.endsWith('… (980000 more characters cut)')).toBe(true);
    expect(Agent.resume(r.agent.checkpoint(), { policy: () => ({ final: 1 }), tools: [] }).view()).toEqual(
      r.agent.view(),
    );
  });

  it('a summary that hangs is abandoned at timeoutMs (its signal aborted), and the run goes on', async () => {
    const clock = new ManualClock(0);
    const signals: AbortSignal[] = [];
    const { policy } = stepper(8);
    const agent = new Agent({
      policy,
      tools: [recorder('t').tool],
      clock,
      maxSteps: 100,
      compaction: {
        when: { entries: 5 },
        keep: 1,
        timeoutMs: 1_000,
        summarize: (_e, ctx) => {
          signals.push(ctx.signal);
          return new Promise<string>(() => {});
        },
      },
    });
    const done = agent.start('go');
    for (let i = 1; i <= 3; i++) {
      await until(() => clock.sleepers > 0);
      clock.advance(1_000);
    }
    expect(await done).toBe('done');
    expect(signals).toHaveLength(3);
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(agent.state.compaction.error).toBe('TimeoutError: summary timed out after 1000 ms');
    expect(agent.state.activeMs).toBe(3_000);
  });

  it('a run cancelled while summarising aborts the summariser’s signal; what it gives after is not recorded', async () => {
    const signals: AbortSignal[] = [];
    const { agent } = summarising((_e, ctx) => {
      signals.push(ctx.signal);
      // Answers once aborted, as a summariser that ignores its signal would.
      return new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve('late')));
    });
    const done = agent.start('go');
    await until(() => signals.length === 1);
    expect(signals[0]?.aborted).toBe(false);
    await agent.cancel('enough');
    expect(await done).toBe('cancelled');
    expect(signals[0]?.aborted).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(agent.state.history.filter((e) => e.role === 'summary')).toEqual([]);
    expect(agent.state.compaction.failures).toBe(0);
  });
});

describe('a crash mid-summary', () => {
  it('from a checkpoint taken while summarising: asks again for the same range, records one summary', async () => {
    const held = gate<string>();
    const first = compacted(6, { summarize: () => held.promise });
    void first.agent.start('go');
    await until(() => JSON.parse(first.agent.checkpoint()).snapshot.value.running === 'summarising');
    const blob = first.agent.checkpoint();
    await first.agent.cancel('crash');
    held.resolve('too late');
    const s = namer();
    const { policy } = stepper(6);
    const again = Agent.resume(blob, {
      policy,
      tools: [recorder('t').tool],
      compaction: { when: { entries: 5 }, keep: 1, summarize: s.summarize },
    });
    expect(await again.run()).toBe('done');
    expect(s.calls[0]?.ctx.covers).toEqual({ from: 1, to: 4 });
    const tos = again.state.history.filter(isSummaryEntry).map((e) => e.covers.to);
    expect(new Set(tos).size).toBe(tos.length);
    expect(again.state.history.filter((e) => e.role === 'summary' && e.text === 'too late')).toEqual([]);
    // The same run uninterrupted.
    const whole = compacted(6, {});
    await whole.agent.start('go');
    expect(again.state.history).toEqual(whole.agent.state.history);
  });

  it('through a store: the write-ahead save holds the summarising state; a new process asks again', async () => {
    const store = new MemoryStore();
    const dying = mortal(store);
    const held = gate<string>();
    let asked = 0;
    const { policy } = stepper(6);
    const agent = new Agent({
      runId: 'r',
      store: dying.store,
      leaseMs: 100,
      policy,
      tools: [recorder('t').tool],
      compaction: {
        when: { entries: 5 },
        keep: 1,
        summarize: () => {
          asked++;
          return held.promise;
        },
      },
    });
    const first = agent.start('go');
    first.catch(() => {}); // it rejects once the process is cut off: asserted below
    await until(() => asked === 1);
    dying.die();
    const stored = await store.load('r');
    expect(JSON.parse(joinRun(stored?.head ?? '', [], stored?.base)).snapshot.value).toEqual({
      running: 'summarising',
    });
    const s = namer();
    const resumed = await Agent.load(store, 'r', {
      policy: stepper(6).policy,
      tools: [recorder('t').tool],
      leaseWaitMs: 5_000,
      compaction: { when: { entries: 5 }, keep: 1, summarize: s.summarize },
    });
    expect(await resumed.run()).toBe('done');
    expect(s.calls[0]?.ctx.covers).toEqual({ from: 1, to: 4 });
    const record = await store.load('r');
    const summaries = (record?.entries ?? []).filter((e) => e.includes('"role":"summary"'));
    const tos = summaries.map((e) => JSON.parse(e).covers.to);
    expect(new Set(tos).size).toBe(tos.length);
    expect(tos[0]).toBe(4);
    // The dead process's own call gave up once its lease could no longer be renewed.
    await expect(first).rejects.toBeInstanceOf(LeaseLostError);
  });
});

describe('limits given on resume', () => {
  it('a run resumed mid-summary with a budget it has spent stops before asking the summariser again', async () => {
    const held = gate<string>();
    const first = compacted(6, { summarize: () => held.promise }, { maxTokens: 1_000 });
    void first.agent.start('go');
    await until(() => JSON.parse(first.agent.checkpoint()).snapshot.value.running === 'summarising');
    const blob = first.agent.checkpoint();
    await first.agent.cancel('crash');
    const s = namer();
    const options = { policy: stepper(6).policy, tools: [recorder('t').tool] };
    const compaction = { when: { entries: 5 }, keep: 1, summarize: s.summarize };
    // A budget of 0 tokens is spent already.
    const again = Agent.resume(blob, { ...options, compaction, maxTokens: 0 });
    expect(again.status).toBe('budget_exhausted');
    expect(again.state.stoppedBy).toBe('tokens');
    expect(await again.run()).toBe('budget_exhausted');
    expect(s.calls).toEqual([]);
    again.extendBudget({ maxTokens: 10_000 });
    expect(await again.run()).toBe('done');
    expect(s.calls[0]?.ctx.covers).toEqual({ from: 1, to: 4 });
  });
});

describe('options', () => {
  const base = { policy: () => ({ final: 1 }), tools: [] };
  const summarize = () => 's';
  it('refuses a bad compaction option with an OptionsError naming the path', () => {
    const cases: [unknown, string][] = [
      [42, 'new Agent: compaction must be an object { when, keep?, summarize, timeoutMs? }, got 42'],
      [
        { when: { entries: 3 }, summarize, kep: 1 },
        'new Agent: compaction: unknown option "kep" (did you mean "keep"?)',
      ],
      [
        { summarize },
        'new Agent: compaction.when must be an object: { entries: n } or { tokens: n, estimate? }, got undefined',
      ],
      [{ when: { entries: 0 }, summarize }, 'new Agent: compaction.when.entries must be a whole number ≥ 1, got 0'],
      [{ when: { tokens: 1.5 }, summarize }, 'new Agent: compaction.when.tokens must be a whole number ≥ 1, got 1.5'],
      [
        { when: { tokens: 9, estimate: 'x' }, summarize },
        'new Agent: compaction.when.estimate must be a function, got "x"',
      ],
      [
        { when: { entries: 3, tokens: 3 }, summarize },
        'new Agent: compaction.when: unknown option "tokens" (known: entries)',
      ],
      [{ when: { entries: 3 }, keep: -1, summarize }, 'new Agent: compaction.keep must be a whole number ≥ 0, got -1'],
      [{ when: { entries: 3 } }, 'new Agent: compaction.summarize must be a function, got undefined'],
      [
        { when: { entries: 3 }, summarize, timeoutMs: 0 },
        'new Agent: compaction.timeoutMs must be a number of milliseconds > 0 and ≤ 2147483647, got 0',
      ],
    ];
    for (const [compaction, message] of cases) {
      expect(() => new Agent({ ...base, compaction } as never)).toThrow(new OptionsError(message));
    }
    expect(() => Agent.resume('x', { ...base, compaction: { when: {} } } as never)).toThrow(
      /^Agent.resume: compaction.when must be/,
    );
  });

  it('is taken by defineAgent and carried by resumeOptionsOf (a function is never saved)', async () => {
    const compaction = { when: { entries: 5 }, keep: 1, summarize: namer().summarize };
    const def = defineAgent({ name: 'a', policy: stepper(6).policy, tools: [recorder('t').tool], compaction });
    expect(resumeOptionsOf(def).compaction).toBe(compaction);
    expect(() =>
      defineAgent({ name: 'b', ...base, compaction: { when: { entries: -1 }, summarize } } as never),
    ).toThrow(/^defineAgent: compaction.when.entries must be/);
    const agent = new Agent({ ...base, compaction });
    expect(agent.checkpoint()).not.toContain('summarize');
  });

  it("a worker compacts the runs it takes up with the definition's option", async () => {
    const store = new MemoryStore();
    const s = namer();
    const def = defineAgent({
      name: 'counter',
      policy: stepper(6).policy,
      tools: [recorder('t').tool],
      maxSteps: 20,
      compaction: { when: { entries: 5 }, keep: 1, summarize: s.summarize },
    });
    await submitRun(store, { agent: def, goal: 'count', runId: 'w1' });
    await new Worker({ store, agents: [def] }).drain();
    const agent = await Agent.load(store, 'w1', resumeOptionsOf(def));
    expect(agent.status).toBe('done');
    expect(s.calls.length).toBeGreaterThan(0);
    expect(agent.state.history.filter(isSummaryEntry)).toHaveLength(s.calls.length);
    expect(agent.view().length).toBeLessThanOrEqual(6);
  });
});
