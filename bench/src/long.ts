/**
 * Long histories, before and after compaction (docs/long-runs.md): the policy's view and the
 * cost of a step at 10,000 steps, `Agent.load` of a 10,000-step run from SQLite, and `decide()`
 * on a run whose history is 1 MB — each measured with and without `compaction`, interleaved in
 * one process, so the ratios are of the same conditions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type HistoryEntry, type Policy, type Tool } from 'tollgate';
import { SqliteStore } from 'tollgate/sqlite';
import { keptSection, markers, spliceSection, table } from './report.js';
import { collect, fmt, type Summary, summarise } from './stats.js';

const [START, END] = markers('long');

/** What the runs below are given as compaction: a view of at most ~40 entries, a fixed summary. */
const COMPACTION = {
  when: { entries: 40 },
  keep: 4,
  // A summariser that calls no model: what is measured is Tollgate's own cost of compacting.
  summarize: (entries: HistoryEntry[]) => ({
    text: `Summary of ${entries.length} entries: pages read, nothing paid yet.`,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 },
  }),
};

export interface LongPlan {
  steps: number;
  samples: number;
  loadSamples: number;
}

interface Variant<T> {
  plain: T;
  compacted: T;
}

export interface LongResult {
  plan: LongPlan;
  /** Per-step cost of a whole run, in memory (µs). */
  stepUs: Variant<Summary>;
  /** What the policy got at its last call: entries and JSON bytes; and building it (`agent.view()`), µs. */
  view: Variant<{ entries: number; bytes: number; buildUs: Summary }>;
  journal: Variant<{ entries: number; bytes: number }>;
  /** `Agent.load` of the finished run from SQLite, ms. */
  loadMs: Variant<Summary>;
  /** `decide()` on a run paused for approval after a 1 MB history, SQLite store, ms. */
  decideMs: Variant<Summary>;
  decideHistoryBytes: number;
}

/** A policy that reads `pages` pages (a pure tool), then asks to pay, then ends; it records the size of each view. */
function reader(pages: number, text: string) {
  const seen = { entries: 0, bytes: 0, most: 0 };
  const policy: Policy = (history, ctx) => {
    seen.entries = history.length;
    seen.most = Math.max(seen.most, history.length);
    if (ctx.step <= pages) return { tool: 'read', args: { page: ctx.step } };
    seen.bytes = JSON.stringify(history).length;
    if (ctx.step === pages + 1) return { tool: 'pay', args: { cents: 100 } };
    return { final: 'paid' };
  };
  const tools: Tool[] = [
    { name: 'read', fn: (args) => ({ page: (args as { page: number }).page, text }) },
    { name: 'pay', sideEffect: true, fn: () => ({ ok: true }) },
  ];
  return { policy, tools, seen };
}

function timeUs(fn: () => unknown, rounds = 20): Summary {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    fn();
    samples.push((performance.now() - t) * 1000);
  }
  return summarise(samples);
}

export async function measureLong(plan: LongPlan, log: (line: string) => void): Promise<LongResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-long-'));
  const store = new SqliteStore({ path: join(dir, 'long.db') });
  const stepUs: Variant<number[]> = { plain: [], compacted: [] };
  const loadMs: Variant<number[]> = { plain: [], compacted: [] };
  const decideMs: Variant<number[]> = { plain: [], compacted: [] };
  const view = {} as LongResult['view'];
  const journal = {} as LongResult['journal'];
  let decideHistoryBytes = 0;
  try {
    // 1. A run of `steps` pure steps, in memory: the cost of a step and the policy's view at the end.
    for (let i = 0; i <= plan.samples; i++) {
      for (const kind of ['plain', 'compacted'] as const) {
        const { policy, tools, seen } = reader(plan.steps, 'short page');
        const agent = new Agent({
          policy,
          tools,
          maxSteps: plan.steps + 2,
          ...(kind === 'compacted' ? { compaction: COMPACTION } : {}),
        });
        collect();
        const t = performance.now();
        const status = await agent.start('read every page, then pay');
        const ms = performance.now() - t;
        if (status !== 'awaiting_approval') throw new Error(`long run: ${status}`);
        if (i > 0) stepUs[kind].push((ms * 1000) / plan.steps); // the first round warms up
        if (i === plan.samples) {
          const shown = agent.view();
          view[kind] = {
            entries: seen.entries,
            bytes: seen.bytes,
            buildUs: timeUs(() => agent.view()),
          };
          if (kind === 'compacted' && seen.most > COMPACTION.when.entries + 2 * COMPACTION.keep + 2) {
            throw new Error(`compaction let the view grow to ${seen.most} entries`);
          }
          const history = agent.state.history;
          journal[kind] = { entries: history.length, bytes: JSON.stringify(history).length };
          if (shown.length > history.length) throw new Error('a view longer than the journal');
        }
      }
    }
    // 2. The same runs saved to SQLite, then loaded again (each load reads the whole journal).
    const ids: Variant<string> = { plain: `long-plain-${process.pid}`, compacted: `long-compacted-${process.pid}` };
    for (const kind of ['plain', 'compacted'] as const) {
      const { policy, tools } = reader(plan.steps, 'short page');
      const agent = new Agent({
        runId: ids[kind],
        store,
        policy,
        tools,
        maxSteps: plan.steps + 2,
        ...(kind === 'compacted' ? { compaction: COMPACTION } : {}),
      });
      if ((await agent.start('read every page, then pay')) !== 'awaiting_approval') throw new Error('long: not paused');
    }
    for (let i = 0; i <= plan.loadSamples; i++) {
      for (const kind of ['plain', 'compacted'] as const) {
        const { policy, tools } = reader(plan.steps, 'short page');
        collect();
        const t = performance.now();
        const loaded = await Agent.load(store, ids[kind], {
          policy,
          tools,
          ...(kind === 'compacted' ? { compaction: COMPACTION } : {}),
        });
        const ms = performance.now() - t;
        if (loaded.status !== 'awaiting_approval') throw new Error(`load: ${loaded.status}`);
        if (i > 0) loadMs[kind].push(ms);
      }
    }
    // 3. decide() on a run paused after a 1 MB history (4 KB pages), with SQLite.
    const pages = Math.ceil((1024 * 1024) / 4100);
    for (let i = 0; i <= plan.samples; i++) {
      for (const kind of ['plain', 'compacted'] as const) {
        const { policy, tools } = reader(pages, 'p'.repeat(4000));
        const agent = new Agent({
          store,
          policy,
          tools,
          maxSteps: pages + 3,
          ...(kind === 'compacted' ? { compaction: COMPACTION } : {}),
        });
        if ((await agent.start('read, then pay')) !== 'awaiting_approval') throw new Error('decide: not paused');
        decideHistoryBytes = JSON.stringify(agent.state.history).length;
        collect();
        const t = performance.now();
        const status = await agent.decide(true, 'ok');
        const ms = performance.now() - t;
        if (status !== 'done') throw new Error(`decide: ${status}`);
        if (i > 0) decideMs[kind].push(ms);
      }
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const both = <T, U>(v: Variant<T>, f: (x: T) => U): Variant<U> => ({ plain: f(v.plain), compacted: f(v.compacted) });
  const result: LongResult = {
    plan,
    stepUs: both(stepUs, summarise),
    view,
    journal,
    loadMs: both(loadMs, summarise),
    decideMs: both(decideMs, summarise),
    decideHistoryBytes,
  };
  log(
    `  ${plan.steps} steps: ${fmt.us(result.stepUs.plain.median)} / step plain, ${fmt.us(result.stepUs.compacted.median)} compacted; view ${view.plain.entries} → ${view.compacted.entries} entries; load ${fmt.ms(result.loadMs.plain.median)} / ${fmt.ms(result.loadMs.compacted.median)}; decide ${fmt.ms(result.decideMs.plain.median)} / ${fmt.ms(result.decideMs.compacted.median)}`,
  );
  return result;
}

const span = (s: Summary, f: (v: number) => string) => `${f(s.median)} (${f(s.min)}–${f(s.max)}, n ${s.n})`;

export function longSection(r: LongResult, date: string, command: string): string {
  const { plan } = r;
  // A ratio far below 1 reads better as a fraction: "1/560" rather than "0.00×".
  const ratio = (a: number, b: number) =>
    a / b < 0.1 ? `1/${Math.round(b / a).toLocaleString('en')}` : fmt.ratio(a / b);
  return `${START}
## Long histories, before and after compaction

Measured by \`${command}\` on ${date}, interleaved (a run without compaction, then one with it, each round; the first round warms up and is not counted).
A run reads ${plan.steps.toLocaleString('en')} pages with a pure tool (each result about 60 B), then asks to pay (a side effect: it pauses for approval).
"Compacted" gives it \`compaction: { when: { entries: ${COMPACTION.when.entries} }, keep: ${COMPACTION.keep}, summarize }\` with a summariser that calls no model (a fixed text, zero usage), so what is measured is Tollgate's own cost of compacting, not a model's.

${table(
  ['', 'without compaction', 'with compaction', 'with ÷ without'],
  [
    [
      `per step, a ${plan.steps.toLocaleString('en')}-step run in memory`,
      span(r.stepUs.plain, fmt.us),
      span(r.stepUs.compacted, fmt.us),
      ratio(r.stepUs.compacted.median, r.stepUs.plain.median),
    ],
    [
      `the policy's view at step ${(plan.steps + 1).toLocaleString('en')}`,
      `${r.view.plain.entries.toLocaleString('en')} entries, ${fmt.bytes(r.view.plain.bytes)}`,
      `${r.view.compacted.entries.toLocaleString('en')} entries, ${fmt.bytes(r.view.compacted.bytes)}`,
      ratio(r.view.compacted.bytes, r.view.plain.bytes),
    ],
    [
      '`agent.view()` at that point',
      span(r.view.plain.buildUs, fmt.us),
      span(r.view.compacted.buildUs, fmt.us),
      ratio(r.view.compacted.buildUs.median, r.view.plain.buildUs.median),
    ],
    [
      'the journal (`state.history`, every entry kept)',
      `${r.journal.plain.entries.toLocaleString('en')} entries, ${fmt.bytes(r.journal.plain.bytes)}`,
      `${r.journal.compacted.entries.toLocaleString('en')} entries, ${fmt.bytes(r.journal.compacted.bytes)}`,
      ratio(r.journal.compacted.bytes, r.journal.plain.bytes),
    ],
    [
      `\`Agent.load\` of the ${plan.steps.toLocaleString('en')}-step run from SQLite`,
      span(r.loadMs.plain, fmt.ms),
      span(r.loadMs.compacted, fmt.ms),
      ratio(r.loadMs.compacted.median, r.loadMs.plain.median),
    ],
    [
      `\`decide()\` after a ${fmt.bytes(r.decideHistoryBytes)} history, SQLite`,
      span(r.decideMs.plain, fmt.ms),
      span(r.decideMs.compacted, fmt.ms),
      ratio(r.decideMs.compacted.median, r.decideMs.plain.median),
    ],
  ],
)}

What compaction changes is what the policy is handed: the view stays under its threshold however long the run, while the journal keeps every entry (it grows by the summaries, which are entries too).
A step's cost includes the copy of the history the policy is given, which grows with the run without compaction; with it the copy stays small, and the summaries (one every ${Math.round(r.plan.steps / Math.max(1, r.journal.compacted.entries - r.journal.plain.entries))} steps here, with a threshold of ${COMPACTION.when.entries} entries) cost a state of the machine, a save and an entry each.
\`Agent.load\` reads and checks the whole journal either way.
\`decide()\` runs the approved call and asks the policy again: the saves write only what changed (the journal is append-only), and with compaction the policy's copy of the history is small.
${END}`;
}

export const spliceLong = (page: string, section: string) => spliceSection(page, section, 'long');
export const keptLong = (page: string) => keptSection(page, 'long');
