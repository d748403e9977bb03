/**
 * Compaction (issue 16): a summary entry recorded in the journal, the model's view handed to the
 * policy (goal, latest summary, recent turns), folding summaries, `keep` never splitting a step,
 * the summariser's usage spent from the budgets, failures that leave the run going, and crashes
 * mid-summary that ask again and never record two summaries.
 */
import { describe, expect, it } from 'vitest';
import { modelView } from '../machines/compaction.js';
import {
  Agent,
  type CompactionOptions,
  type HistoryEntry,
  isSummaryEntry,
  type Policy,
  type SummaryContext,
} from '../src/index.js';
import { recorder, sequence, until } from './support/helpers.js';

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
    for (const view of views) expect(view.length).toBeLessThanOrEqual(5 + 1);
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
