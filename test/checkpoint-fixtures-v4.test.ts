/**
 * The frozen version-4 checkpoints (test/fixtures/checkpoints/v4, made by make.ts.txt there):
 * compaction's summaries, its state and its record. Each is migrated (version 4 → 5: a run that
 * answered is no longer final, so its status is `active`), written back as version 5, which
 * round-trips exactly, loads from a store in the journal form, and goes on: a run stopped
 * mid-summary asks the summariser again for the same range and records one summary.
 */
import { readdirSync, readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, entryOf, headOf, joinRun } from '../src/checkpoint/index.js';
import {
  Agent,
  CheckpointError,
  type CompactionOptions,
  type HistoryEntry,
  isSummaryEntry,
  type Policy,
} from '../src/index.js';
import { MemoryStore } from '../src/stores/memory.js';
import { ManualClock } from '../src/testing/index.js';

const V4 = 'test/fixtures/checkpoints/v4';
const T0 = Date.parse('2026-12-01T09:00:00.000Z');
const names = readdirSync(V4)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort();
const read = (name: string) => readFileSync(`${V4}/${name}.json`, 'utf8');
/** The version-5 checkpoint a version-4 one stands for: a done run's status is `active`. */
function asV5(blob: string): string {
  const c = JSON.parse(blob);
  const status = c.snapshot.value === 'done' ? 'active' : c.snapshot.status;
  return canonicalize({ ...c, version: 5, snapshot: { ...c.snapshot, status } }) as string;
}
const price = { 'gpt-4.1': { inputUsdPerMTok: 2, cachedInputUsdPerMTok: 0.5, outputUsdPerMTok: 8 } };
const usage = { inputTokens: 1000, outputTokens: 100, model: 'gpt-4.1' };

/** The fixtures' world (make.ts.txt): lookups, a refund, then the answer, by step; a recording summariser. */
function world() {
  const made: string[] = [];
  const asked: { step: number; view: HistoryEntry[] }[] = [];
  const summarised: { entries: HistoryEntry[]; covers: { from: number; to: number } }[] = [];
  const policy: Policy = (view, ctx) => {
    asked.push({ step: ctx.step, view });
    if (ctx.step <= 4) return { tool: 'lookup', args: { id: `A-${ctx.step}` }, usage };
    if (ctx.step === 5) return { tool: 'refund', args: { cents: 5000, note: 'ünïcödé ✓' }, usage };
    return { final: { done: true }, usage };
  };
  const compaction: CompactionOptions = {
    when: { entries: 4 },
    keep: 1,
    summarize: (entries, ctx) => {
      summarised.push({ entries, covers: ctx.covers });
      return {
        text: `entries ${ctx.covers.from}–${ctx.covers.to}: ${entries.length} given`,
        usage: { inputTokens: 200, outputTokens: 20, model: 'gpt-4.1' },
      };
    },
  };
  const tools = [
    {
      name: 'lookup',
      fn: ({ id }: any) => {
        made.push(`lookup ${id}`);
        return { id, total: 120 };
      },
    },
    {
      name: 'refund',
      sideEffect: true,
      fn: (a: any) => {
        made.push(`refund ${a.cents}`);
        return { refunded: a.cents };
      },
    },
  ];
  return { made, asked, summarised, options: { policy, tools, clock: new ManualClock(T0), price, compaction } };
}

describe('every version-4 fixture', () => {
  it('is there: compaction at rest, in flight, failed, and stopping a run by its tokens', () => {
    expect(names).toEqual([
      'awaiting-approval-summarised',
      'awaiting-approval-summary-failed',
      'budget-exhausted-by-summary',
      'done-summarised',
      'idle',
      'running-summarising',
    ]);
  });

  for (const name of names) {
    describe(name, () => {
      it('is canonical version 4, written back as version 5, which round-trips exactly', () => {
        const blob = read(name);
        const c = JSON.parse(blob);
        expect(c.version).toBe(4);
        expect(canonicalize(c)).toBe(blob);
        const agent = Agent.resume(blob, world().options);
        expect(agent.checkpoint()).toBe(asV5(blob));
        expect(Agent.resume(agent.checkpoint(), world().options).checkpoint()).toBe(asV5(blob));
      });

      it('loads from a store in the journal form (a version-5 head), as version 5', async () => {
        const blob = asV5(read(name));
        const run = decodeCheckpoint(blob);
        const head = headOf(run);
        const entries = run.context.history.map(entryOf);
        expect(joinRun(head, entries)).toBe(blob);
        const store = new MemoryStore();
        const { pendingCalls } = Agent.resume(blob, world().options).state;
        await store.save('fx-4', { status: 'idle', head, from: 0, append: entries, pendingCalls }, 0);
        const agent = await Agent.load(store, 'fx-4', world().options);
        expect(agent.checkpoint()).toBe(blob);
        expect(agent.view()).toEqual(Agent.resume(blob, world().options).view());
      });
    });
  }
});

describe('a version-4 run goes on', () => {
  it('running-summarising: the summariser is asked again for the same range, and one summary is recorded', async () => {
    const w = world();
    const agent = Agent.resume(read('running-summarising'), w.options);
    expect(agent.state.history.filter(isSummaryEntry)).toEqual([]);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.summarised[0]?.covers).toEqual({ from: 1, to: 2 });
    const covers = agent.state.history.filter(isSummaryEntry).map((s) => s.covers.to);
    expect(new Set(covers).size).toBe(covers.length);
    expect(covers[0]).toBe(2);
    expect(w.made).toEqual(['lookup A-3', 'lookup A-4']);
  });

  it('running-summarising, resumed without the compaction option: nothing to summarise, the policy is asked', async () => {
    const w = world();
    const { compaction: _c, ...options } = w.options;
    const agent = Agent.resume(read('running-summarising'), options);
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.summarised).toEqual([]);
    expect(w.asked[0]?.step).toBe(3);
    expect(agent.state.history.filter(isSummaryEntry)).toEqual([]);
  });

  it('awaiting-approval-summarised: the approved refund runs and the policy gets the compacted view', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-summarised'), w.options);
    expect(agent.view().map((e) => e.role)).toEqual(['user', 'summary', 'assistant', 'tool', 'assistant']);
    expect(await agent.decide(true, 'ok', { by: 'alice' })).toBe('done');
    expect(w.made).toEqual(['refund 5000']);
    expect(w.asked.map((a) => a.view.length)).toEqual([4]);
    expect(agent.state.history.filter(isSummaryEntry).at(-1)?.covers).toEqual({ from: 1, to: 10 });
    expect(agent.checkpoint()).toBe(asV5(read('done-summarised')));
  });

  it('awaiting-approval-summary-failed: three failures in a row: the run summarises no more, the error kept', async () => {
    const w = world();
    const agent = Agent.resume(read('awaiting-approval-summary-failed'), w.options);
    expect(agent.state.compaction).toEqual({ failures: 3, error: 'Error: model unavailable', retryAt: 10 });
    expect(await agent.decide(true, 'ok')).toBe('done');
    expect(w.summarised).toEqual([]);
    expect(w.asked[0]?.view).toEqual(agent.state.history.slice(0, 11));
  });

  it('budget-exhausted-by-summary: the summary spent the last tokens; raising maxTokens goes on', async () => {
    const w = world();
    const agent = Agent.resume(read('budget-exhausted-by-summary'), w.options);
    expect(agent.state).toMatchObject({ stoppedBy: 'tokens', usage: { inputTokens: 3200, outputTokens: 320 } });
    expect(agent.state.steps).toBe(3);
    agent.extendBudget({ maxTokens: 100_000 });
    expect(await agent.run()).toBe('awaiting_approval');
    expect(w.asked[0]?.step).toBe(4);
  });
});

describe('summaries a run never makes are refused', () => {
  const edited = (edit: (history: any[]) => void) => {
    const c = JSON.parse(read('done-summarised'));
    edit(c.snapshot.context.history);
    return canonicalize(c) as string;
  };
  const refusal = (blob: string) => {
    try {
      decodeCheckpoint(blob);
    } catch (error) {
      return error as CheckpointError;
    }
    throw new Error('accepted');
  };

  it('one that covers no more than the summary before it', () => {
    const blob = edited((h) => {
      const [first, second] = h.filter((e) => e.role === 'summary');
      second.covers.to = first.covers.to;
    });
    const error = refusal(blob);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.message).toMatch(/covers\.to: a summary covers more than the one before it \(to 2\)$/);
  });

  it('one that starts anywhere but entry 1, or has an empty text', () => {
    const from = refusal(edited((h) => (h.find((e) => e.role === 'summary').covers.from = 2)));
    expect(from.path).toMatch(/^snapshot\.context\.history\.5/);
    const empty = refusal(edited((h) => (h.find((e) => e.role === 'summary').text = '')));
    expect(empty.path).toMatch(/^snapshot\.context\.history\.5/);
  });
});
