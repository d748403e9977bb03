/** Turns the measurements into the Markdown of docs/performance.md (and the console table). */
import type { SaveStats } from './contestants/tollgate.js';
import type { ConcurrentResult, DecideResult, PausedResult } from './scale.js';
import { fmt } from './stats.js';
import type { Cell, CheckpointResult, StepResults } from './steps.js';
import { LOADS_PER_SAMPLE } from './workload.js';

export interface Results {
  date: string;
  quick: boolean;
  machine: string[];
  command: string;
  durationS: number;
  contestants: { name: string; persists: string; error?: string }[];
  /** The peers' names, for the ratios. */
  peers: string[];
  sizes: number[];
  steps: StepResults;
  /** What each Tollgate contestant with a store handed it, per step and per save, by N. */
  saves: Map<string, Map<number, SaveStats>>;
  checkpointSteps: number;
  checkpoints: Map<string, CheckpointResult>;
  decide: DecideResult | null;
  concurrent: Map<string, ConcurrentResult | { error: string }>;
  paused: PausedResult | null;
}

export const FLOOR = 'floor';
export const FLOOR_LOG = 'floor + append-only log';
export const FLOOR_SQLITE = 'floor + SQLite append';
export const FLOOR_PG = 'floor + Postgres append';
export const BARE = 'bare XState loop (two invokes)';
export const MACHINE = "Tollgate's machine (instant actors)";
export const TOLLGATE = 'tollgate';

const cell = (r: Results, name: string, n: number): Cell | undefined => r.steps.get(name)?.get(n);
const median = (r: Results, name: string, n: number) => cell(r, name, n)?.perStepUs?.median ?? null;

export function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function stepTable(r: Results): string {
  const rows = [...r.steps.keys()].map((name) => [
    name,
    ...r.sizes.map((n) => {
      const c = cell(r, name, n);
      if (!c?.perStepUs) return c?.skipped ?? 'n/a';
      const s = c.perStepUs;
      return `${fmt.us(s.median)} (${fmt.us(s.min)}–${fmt.us(s.max)}, n=${s.n})`;
    }),
  ]);
  return table(['contestant', ...r.sizes.map((n) => `${n.toLocaleString('en')} steps`)], rows);
}

function ratioTable(r: Results): string {
  // Each Tollgate variant against its own floor first (the targets' ratios), then the peers.
  const pairs: [string, string][] = [
    [TOLLGATE, BARE],
    [MACHINE, BARE],
    [TOLLGATE, MACHINE],
    [TOLLGATE, FLOOR],
    ['tollgate + SQLite', FLOOR_SQLITE],
    ['tollgate + SQLite (durability points)', FLOOR_SQLITE],
    ['tollgate + Postgres', FLOOR_PG],
    ['tollgate + Postgres (durability points)', FLOOR_PG],
    ...[TOLLGATE, 'tollgate + SQLite', 'tollgate + Postgres'].flatMap((name) =>
      r.peers.map((other) => [name, other] as [string, string]),
    ),
  ];
  const rows = pairs
    .filter(([name, other]) => r.steps.has(name) && r.steps.has(other))
    .map(([name, other]) => [
      `${name} ÷ ${other}`,
      ...r.sizes.map((n) => {
        const a = median(r, name, n);
        const b = median(r, other, n);
        return a === null || b === null ? 'n/a' : fmt.ratio(a / b);
      }),
    ]);
  return table(['ratio of medians (same run)', ...r.sizes.map((n) => `${n.toLocaleString('en')}`)], rows);
}

function savesTable(r: Results): string {
  const rows = [...r.saves].map(([name, byN]) => [
    name,
    ...r.sizes.map((n) => {
      const s = byN.get(n);
      return s
        ? `${s.savesPerStep.toFixed(2)} × ${fmt.bytes(s.headBytesPerSave)} + ${fmt.bytes(s.entryBytesPerStep)}`
        : 'n/a';
    }),
  ]);
  return table(
    ['saves per step × head per save + entries per step', ...r.sizes.map((n) => `${n.toLocaleString('en')} steps`)],
    rows,
  );
}

function bytesTable(r: Results): string {
  const rows = [...r.steps.keys()]
    .filter((name) => r.sizes.some((n) => cell(r, name, n)?.bytesPerRun != null))
    .map((name) => [
      name,
      ...r.sizes.map((n) => {
        const c = cell(r, name, n);
        return c?.bytesPerStep == null || c.bytesPerRun == null
          ? 'n/a'
          : `${fmt.bytes(c.bytesPerStep)} / ${fmt.bytes(c.bytesPerRun)}`;
      }),
    ]);
  return table(['persisted per step / per run', ...r.sizes.map((n) => `${n.toLocaleString('en')} steps`)], rows);
}

function checkpointTable(r: Results): string {
  const rows = [...r.checkpoints].map(([name, c]) => [
    name,
    `${fmt.ms(c.save.median)} (${fmt.ms(c.save.min)}–${fmt.ms(c.save.max)})`,
    `${fmt.ms(c.load.median)} (${fmt.ms(c.load.min)}–${fmt.ms(c.load.max)})`,
    fmt.bytes(c.bytes),
    String(c.save.n),
  ]);
  return table(['contestant', 'save', 'load', 'size', 'n'], rows);
}

function scaleSection(r: Results): string {
  const out: string[] = [];
  if (r.decide) {
    const d = r.decide;
    out.push(
      `**\`decide()\` on a run with a ${fmt.bytes(d.historyBytes)} history** (approve → the call runs → the policy answers → done), median of ${d.memory.n}: ` +
        `no store ${fmt.ms(d.memory.median)} (${fmt.ms(d.memory.min)}–${fmt.ms(d.memory.max)}), ` +
        `SQLite ${fmt.ms(d.sqlite.median)} (${fmt.ms(d.sqlite.min)}–${fmt.ms(d.sqlite.max)}).`,
    );
  }
  const conc = [...r.concurrent].map(([name, c]) =>
    'error' in c
      ? [name, 'failed', c.error, '']
      : [name, fmt.ms(c.totalMs), `+${fmt.bytes(c.peakHeapBytes)}`, fmt.us((c.totalMs * 1000) / (c.runs * c.steps))],
  );
  const first = [...r.concurrent.values()].find((c): c is ConcurrentResult => !('error' in c));
  if (first) {
    out.push(
      `\n**${first.runs.toLocaleString('en')} concurrent runs of ${first.steps} steps** (started at once, one process):\n`,
    );
    out.push(table(['contestant', 'total time', 'peak heap (sampled)', 'per step'], conc));
  }
  if (r.paused) {
    const p = r.paused;
    out.push(
      `\n**${p.runs.toLocaleString('en')} runs paused for approval**: with a SQLite store and the \`Agent\` objects dropped, the process holds ` +
        `${fmt.bytes(p.storedBytes)} (${fmt.bytes(p.storedBytes / p.runs)} per run, heap after a full GC); the runs are in the store's inbox and ` +
        `one is loaded and approved in ${fmt.ms(p.resumeMs)}. Kept alive as ${p.runs.toLocaleString('en')} \`Agent\` objects instead (no store), they hold ` +
        `${fmt.bytes(p.inMemoryBytes)} (${fmt.bytes(p.inMemoryBytes / p.runs)} per run).`,
    );
  }
  return out.join('\n');
}

const NOTES = `## Reading the figures

**Why the per-step figure moves.** Tollgate's runtime does O(1) work per step: the machine's
context grows in place (\`appendInPlace\`; the pure machine in \`machines/\` keeps its
copy-on-append for model checking), checkpoints are encoded from cached entry texts, and a store
receives only the head and the new entries. Two things still grow with the history: the copy of
the history each policy call is given (the API contract: the policy sees a copy, never the live
array — at 10,000 steps that is 20,000 pointers per call, and garbage in V8's large-object space),
and V8's garbage collection of a bigger live heap. At 10 steps the figure also carries each
run's fixed cost (creating the Agent and its actor, the final policy call) spread over few steps.
Every step is two XState invocations (policy, tool) plus an eventless budget check, which is
where most of the remaining time goes (XState's own code and GC in a CPU profile).

**What "bytes" means.** Tollgate's figure is what it hands to the store: a head (the checkpoint
without its history: on a store that keeps bases, a delta against the run's base, with the base
itself when a save writes a new one) and the new entries, at every save. A pure tool's call is saved with its
result, not before (a crash re-runs it), so this workload makes about one save per step (see the
table under "Bytes persisted"); a side effect keeps its write-ahead save. It does not grow with N. The append-only floor writes each step's entries once. LangGraph's default
messages channel and the Agents SDK's \`RunState\` store the whole history in every checkpoint, so
their bytes per step grow with N (quadratic in total).

**Like for like, and not.** Every contestant runs the same scripted policy and instant tool in
this process. LangGraph's time includes LangChain's chat-model \`invoke\` on the whole message list
and the \`deleteThread\` that keeps its saver from holding every run; the Agents SDK copies its
whole input every turn, and its \`RunState#toString()\` is itself O(n²) in 0.20.0 (so "every turn"
is O(n³) per run: it is measured up to the size it finishes in minutes, and "no snapshots" beyond).
A contestant is skipped at a size where one run is estimated over the limit shown.
Tollgate's stores write to this machine's disk (file, SQLite) or its local Postgres; the SQLite
floor is one fsynced commit per step, the Postgres floor one autocommitted INSERT per step (a
named prepared statement, one connection). With \`durability: 'points'\` only the saves guarding
an effect, a pause or the end of a run are durable; the others are written at SQLite
\`synchronous=NORMAL\` / Postgres \`synchronous_commit=off\` (they survive the process's crash,
not a power cut: pure steps since the last point are redone). The bare XState loop is the same
machine as the naive one, persisting nothing and growing its history in place: the floor of a
design whose policy and tool calls are invoked actors. "Tollgate's machine (instant actors)" is
Tollgate's own machine (\`tollgate/machine\`) driven by invoked actors that only replay the
decisions and tool outcomes a real run of the same length made: the machine's own cost per step,
which the runtime cannot go under without changing the machine.`;

export interface Target {
  name: string;
  met: boolean | null;
  figure: string;
  /** Why it is missed and what would fix it; shown only when missed. */
  whenMissed: string;
}

export function render(r: Results, targets: Target[]): string {
  const status = (t: Target) => (t.met === null ? 'not measured' : t.met ? '**met**' : '**missed**');
  const missed = targets.filter((t) => t.met === false);
  return `# Performance

Measured by \`${r.command}\` on ${r.date}${r.quick ? ' (the quick version: fewer sizes and samples)' : ''}, in ${Math.round(r.durationS)} s.
Every contestant runs the same workload in the same process, interleaved sample by sample: a
scripted policy that calls an \`echo\` tool until the run has taken N steps, then answers; the
tool returns ~200 bytes of JSON at once. A step is one policy call plus one tool call. Figures
are medians with (min–max, n samples); a sample is a batch of runs of at least 2,000 steps in
all (one run from 1,000 steps up; fewer for contestants too slow for that), after one untimed
warm-up sample, without a forced GC (one resets V8's heap sizing and slows the next sample of
any allocation-heavy loop). These machines are shared and noisy: compare figures within this
page, measured in the same run, rather than with other runs.

## Machine

${r.machine.map((l) => `- ${l}`).join('\n')}

## Contestants

${r.contestants.map((c) => `- **${c.name}**: ${c.persists}${c.error ? ` — *not measured: ${c.error}*` : ''}`).join('\n')}

## Targets

${table(
  ['target', 'status', 'measured'],
  targets.map((t) => [t.name, status(t), t.figure]),
)}
${missed.length ? `\n### Missed, why, and the next step\n\n${missed.map((t) => `- **${t.name}**: ${t.whenMissed}`).join('\n')}\n` : ''}
## µs per step

${stepTable(r)}

## Ratios

${ratioTable(r)}

## Bytes persisted

Bytes handed to durable storage (Tollgate: each save's head and base plus its new entries; the floor: each
step's new entries; peers: what their checkpointer stores), per step and per run.

${bytesTable(r)}

What Tollgate hands its store, counted by a wrapper around it during the timed runs: saves per
step, the head each save writes (a delta, plus a base when it writes one), and the entries.

${savesTable(r)}

## Final checkpoint of a ${r.checkpointSteps.toLocaleString('en')}-step run

Save: Tollgate with no store serialises \`checkpoint()\`; with a store, the last save of the run
(its head and final entry: the run is already stored). Load: \`Agent.resume(blob)\` or
\`Agent.load(store, runId)\` (read, join, validate, restore). Peers: their own save and load. A
sample runs the whole run again, saves once and loads ${LOADS_PER_SAMPLE} times: its load time is
the median of those (one load right after the run pays for the garbage the run left).

${checkpointTable(r)}

## At scale

${scaleSection(r)}

${NOTES}
`;
}

/**
 * A section of the page between its own markers (`<!-- bench:NAME -->`), measured by a run of its
 * own (or written by hand): put in place of the last one, or before the heading `before`.
 */
export function spliceSection(page: string, section: string, name: string, before = '## Reading the figures'): string {
  const [start, end] = markers(name);
  const from = page.indexOf(start);
  const to = page.indexOf(end);
  if (from >= 0 && to > from) return page.slice(0, from) + section + page.slice(to + end.length);
  const at = page.indexOf(before);
  if (at < 0) return `${page.trimEnd()}\n\n${section}\n`;
  return `${page.slice(0, at)}${section}\n\n${page.slice(at)}`;
}

/** The section `name` kept from a page written before, so a run that does not measure it keeps it. */
export function keptSection(page: string, name: string): string | undefined {
  const [start, end] = markers(name);
  const from = page.indexOf(start);
  const to = page.indexOf(end);
  return from >= 0 && to > from ? page.slice(from, to + end.length) : undefined;
}

export function markers(name: string): [string, string] {
  return [`<!-- bench:${name} -->`, `<!-- /bench:${name} -->`];
}
