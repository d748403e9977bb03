/**
 * Issue 16, "done means": a 10,000-step run with compaction keeps the model's view under its
 * threshold at every policy call while `state.history` holds every entry, and resuming from a
 * checkpoint taken at any point (sampled across the run: while the policy decides and while a
 * summary is in flight) ends in exactly the state of the uninterrupted run.
 *
 * Running each of ~45 resumes to the end would replay ~225,000 steps; instead each resume runs to
 * the next sampled point and must write there exactly the checkpoint the uninterrupted run wrote.
 * As the runs are deterministic, these segments chain: a resume from any sampled point reaches the
 * next one in the same state, from which the next segment was checked, and so on to the end. The
 * last segments, and two resumes from mid-run (one mid-summary), run to the end and are compared
 * with the final checkpoint directly.
 */
import { describe, expect, it } from 'vitest';
import { modelView } from '../machines/compaction.js';
import { Agent, type CompactionOptions, type HistoryEntry, isSummaryEntry, type Policy } from '../src/index.js';
import { ManualClock } from '../src/testing/index.js';

const STEPS = 10_000;
const THRESHOLD = 24;
const KEEP = 3;
/** Checkpoints are taken at every SAMPLE-th policy call and at every SAMPLE-th summary. */
const SAMPLE = 250;

interface Sample {
  /** `deciding` at policy call `step`, or `summarising` before policy call `step`. */
  kind: 'deciding' | 'summarising';
  step: number;
  blob: string;
}

interface Probe {
  views: number[];
  samples: Sample[];
  /** A resumed run stops at this policy call (after sampling it): its checkpoint there is compared. */
  stopAt: number | null;
  stopped: (() => void) | null;
}

/** A fast policy: `STEPS` calls of `t` (every 7th step with two calls), then the answer; a trivial summariser. */
function world(probe: Probe, agent: () => Agent | undefined) {
  const policy: Policy = (view, ctx) => {
    probe.views.push(view.length);
    const a = agent();
    if (a && ctx.step % SAMPLE === 0) probe.samples.push({ kind: 'deciding', step: ctx.step, blob: a.checkpoint() });
    if (ctx.step === probe.stopAt) {
      probe.stopped?.();
      return new Promise<never>(() => {});
    }
    if (ctx.step > STEPS) return { final: { steps: ctx.step - 1 }, usage: { inputTokens: 1, outputTokens: 1 } };
    const usage = { inputTokens: view.length, outputTokens: 1 };
    if (ctx.step % 7 === 0) {
      return {
        calls: [
          { tool: 't', args: { i: ctx.step } },
          { tool: 't', args: { j: 1 } },
        ],
        usage,
      };
    }
    return { tool: 't', args: { i: ctx.step }, usage };
  };
  let summaries = 0;
  const compaction: CompactionOptions = {
    when: { entries: THRESHOLD },
    keep: KEEP,
    summarize: (entries, ctx) => {
      summaries++;
      const a = agent();
      if (a && summaries % SAMPLE === 1)
        probe.samples.push({ kind: 'summarising', step: ctx.step, blob: a.checkpoint() });
      return {
        text: `steps to entry ${ctx.covers.to} (${entries.length} given)`,
        usage: { inputTokens: 2, outputTokens: 1 },
      };
    },
  };
  const tools = [{ name: 't', fn: (args: { i?: number }) => args.i ?? 0 }];
  return { policy, tools, compaction, clock: new ManualClock(0) };
}

const probeOf = (stopAt: number | null = null): Probe => ({ views: [], samples: [], stopAt, stopped: null });

/** Resumes `blob` in a "new process" and runs it to policy call `stopAt` (null: to the end); returns its checkpoint there. */
async function resumeTo(blob: string, stopAt: number | null): Promise<string> {
  const probe = probeOf(stopAt);
  let agent: Agent | undefined;
  agent = Agent.resume(
    blob,
    world(probe, () => agent),
  );
  if (stopAt === null) {
    expect(await agent.run()).toBe('done');
    return agent.checkpoint();
  }
  const reached = new Promise<void>((resolve) => {
    probe.stopped = resolve;
  });
  const running = agent.run();
  await reached;
  const at = probe.samples.find((s) => s.kind === 'deciding' && s.step === stopAt);
  await agent.cancel('segment checked');
  await running;
  return at?.blob ?? '';
}

describe('a 10,000-step run with compaction', () => {
  it('keeps every view under the threshold, every entry in the journal, and resumes from any sampled point to the same end', async () => {
    const probe = probeOf();
    let agent: Agent | undefined;
    agent = new Agent({ ...world(probe, () => agent), maxSteps: STEPS + 1, maxTokens: 10_000_000 });
    expect(await agent.start('count to ten thousand')).toBe('done');
    const final = agent.checkpoint();
    const { history, steps, usage } = agent.state;

    expect(steps).toBe(STEPS + 1);
    expect(probe.views).toHaveLength(STEPS + 1);
    // At every policy call the view was within its threshold.
    expect(Math.max(...probe.views)).toBeLessThanOrEqual(THRESHOLD);
    // The journal holds every entry: the goal, each step's assistant and tool entries, the answer,
    // and the summaries besides, in the order they were made.
    const twoCallSteps = Math.floor(STEPS / 7);
    const journal = history.filter((e) => !isSummaryEntry(e));
    expect(journal).toHaveLength(1 + STEPS * 2 + twoCallSteps + 1);
    expect(journal.filter((e) => e.role === 'tool')).toHaveLength(STEPS + twoCallSteps);
    const tos = history.filter(isSummaryEntry).map((s) => s.covers.to);
    expect(tos.length).toBeGreaterThan(STEPS / 10);
    expect(tos).toEqual([...tos].sort((a, b) => a - b));
    expect(new Set(tos).size).toBe(tos.length);
    // The summariser's tokens are counted beside the policy's.
    const policyInput = probe.views.slice(0, -1).reduce((n, v) => n + v, 0) + 1;
    expect(usage.inputTokens).toBe(policyInput + tos.length * 2);
    expect(agent.view()).toEqual(modelView(history as HistoryEntry[]));

    const deciding = new Map(probe.samples.filter((s) => s.kind === 'deciding').map((s) => [s.step, s.blob]));
    const stops = [...deciding.keys()].sort((a, b) => a - b);
    expect(stops.length).toBe(STEPS / SAMPLE);
    expect(probe.samples.filter((s) => s.kind === 'summarising').length).toBeGreaterThan(3);
    for (const sample of probe.samples) {
      expect(JSON.parse(sample.blob).snapshot.value).toEqual({ running: sample.kind });
      // The next deciding sample after this point, or the end.
      const next = stops.find((s) => s > sample.step || (s === sample.step && sample.kind === 'summarising'));
      const label = `${sample.kind} ${sample.step} → ${next ?? 'end'}`;
      const reached = await resumeTo(sample.blob, next ?? null);
      expect(reached === (next === undefined ? final : deciding.get(next)), label).toBe(true);
    }
    // Two resumes from mid-run straight to the end: one deciding, one mid-summary.
    const half = probe.samples.filter((s) => s.step > STEPS * 0.8);
    for (const kind of ['deciding', 'summarising'] as const) {
      const sample = half.find((s) => s.kind === kind);
      expect(sample, kind).toBeDefined();
      expect((await resumeTo(sample?.blob ?? '', null)) === final, `${kind} ${sample?.step} → end`).toBe(true);
    }
  }, 300_000);
});
