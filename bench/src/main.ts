/**
 * `npm run bench [-- --quick] [-- --out FILE] [-- --workers | --long | --parallel]`: Tollgate against the floor and its peers, in one
 * process, interleaved; prints the results and writes them as Markdown (docs/performance.md;
 * `--quick` writes reports/performance-quick.md unless --out is given).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, release, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { floor, floorAppendOnly, floorPostgres, floorSqlite } from './contestants/floor.js';
import {
  fileStore,
  memoryStore,
  PG_URL,
  postgresStore,
  saveStats,
  sqliteNormalStore,
  sqliteStore,
  tollgate,
  tollgateWith,
} from './contestants/tollgate.js';
import { tollgateMachine } from './contestants/tollgate-machine.js';
import { BARE_XSTATE, bareXState, naiveXState } from './contestants/xstate.js';
import { keptLong, type LongPlan, longSection, measureLong, spliceLong } from './long.js';
import { keptParallel, measureParallel, parallelSection, spliceParallel } from './parallel.js';
import { keptSection, MACHINE, type Results, render, spliceSection } from './report.js';
import { measureConcurrent, measureDecide, measurePaused } from './scale.js';
import { measureCheckpoints, measureSteps, type StepPlan } from './steps.js';
import { targets } from './targets.js';
import { measurePool, type PoolPlan } from './workers/pool.js';
import { keptPool, poolSection, splicePool } from './workers/report.js';
import type { Contestant } from './workload.js';

// No tracing to anyone's servers: the peers stay on this machine.
for (const name of ['LANGSMITH_TRACING', 'LANGCHAIN_TRACING_V2', 'LANGSMITH_API_KEY', 'OPENAI_API_KEY'])
  delete process.env[name];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string' },
    workers: { type: 'boolean', default: false },
    long: { type: 'boolean', default: false },
    parallel: { type: 'boolean', default: false },
  },
});
const quick = values.quick ?? false;
const root = resolve(import.meta.dirname, '../..');
const out = resolve(root, values.out ?? (quick ? 'reports/performance-quick.md' : 'docs/performance.md'));

const plan: StepPlan = quick
  ? {
      sizes: [10, 100, 1000],
      minSamples: 2,
      maxSamples: 3,
      cellBudgetMs: 200,
      maxSampleMs: 8_000,
      slowSampleMs: 2_000,
      minStepsPerSample: 200,
    }
  : {
      sizes: [10, 100, 1000, 10_000],
      minSamples: 3,
      maxSamples: 15,
      cellBudgetMs: 4_000,
      maxSampleMs: 240_000,
      slowSampleMs: 20_000,
      minStepsPerSample: 2_000,
    };
const scale = quick
  ? { checkpointSteps: 100, checkpointSamples: 2, decideSamples: 2, concurrentRuns: 100, pausedRuns: 1000 }
  : { checkpointSteps: 1000, checkpointSamples: 7, decideSamples: 9, concurrentRuns: 1000, pausedRuns: 10_000 };

const pool: PoolPlan = quick
  ? { processes: [1, 2], runs: 40, concurrency: 16, decisions: 3, takeovers: 1, leaseMs: 1_000 }
  : { processes: [1, 2, 4], runs: 1_000, concurrency: 16, decisions: 25, takeovers: 7, leaseMs: 2_000 };

const long: LongPlan = quick
  ? { steps: 1_000, samples: 2, loadSamples: 2 }
  : { steps: 10_000, samples: 5, loadSamples: 7 };

const log = (line: string) => console.log(line);
const readPage = () => (existsSync(out) ? readFileSync(out, 'utf8') : '');

/** The worker-pool section, or why it was not measured (no Postgres: the section is kept). */
async function poolMarkdown(date: string, command: string): Promise<string | undefined> {
  log(`a pool of worker processes on Postgres (${pool.runs} runs × 10 steps):`);
  try {
    return poolSection(await measurePool(pool, log), date, command);
  } catch (error) {
    log(`  not measured: ${String((error as Error).message ?? error)}`);
    if (process.env.CI) throw error;
    return undefined;
  }
}

/** `npm run bench -- --workers`: the worker-pool section alone, put in place in the page. */
async function workersOnly() {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const section = await poolMarkdown(`${date} UTC`, `npm run bench -- --workers${quick ? ' --quick' : ''}`);
  if (!section) process.exit(1);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, splicePool(readPage(), section));
  console.log(`${section}\nwritten to ${out}`);
}

/** Calls side by side: a step of 4 pure 20 ms calls, concurrent and one at a time, against Promise.all. */
async function parallelMarkdown(date: string, command: string): Promise<string> {
  log('calls side by side (4 × 20 ms):');
  return parallelSection(await measureParallel(quick ? 5 : 21, log), date, command);
}

/** `npm run bench -- --parallel`: the calls-side-by-side section alone, put in place in the page. */
async function parallelOnly() {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const section = await parallelMarkdown(`${date} UTC`, `npm run bench -- --parallel${quick ? ' --quick' : ''}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, spliceParallel(readPage(), section));
  console.log(`${section}\nwritten to ${out}`);
}

/** The long-history section (before and after compaction). */
async function longMarkdown(date: string, command: string): Promise<string> {
  log(`long histories, before and after compaction (${long.steps} steps):`);
  return longSection(await measureLong(long, log), date, command);
}

/** `npm run bench -- --long`: the long-history section alone, put in place in the page. */
async function longOnly() {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const section = await longMarkdown(`${date} UTC`, `npm run bench -- --long${quick ? ' --quick' : ''}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, spliceLong(readPage(), section));
  console.log(`${section}\nwritten to ${out}`);
}

async function peers(): Promise<Contestant[]> {
  const found: Contestant[] = [];
  try {
    const lg = await import('./contestants/langgraph.js');
    found.push(lg.langgraphMemory(), lg.langgraphSqlite());
  } catch (error) {
    log(`LangGraph.js not available: ${String(error)}`);
  }
  try {
    const oa = await import('./contestants/openai-agents.js');
    found.push(oa.openaiAgents(), oa.openaiAgents({ snapshotEveryTurn: false }));
  } catch (error) {
    log(`OpenAI Agents SDK not available: ${String(error)}`);
  }
  return found;
}

function machine(): string[] {
  const cpu = cpus();
  return [
    `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM (${(freemem() / 2 ** 30).toFixed(1)} GiB free at the start)`,
    `Linux ${release()}, Node.js ${process.version}`,
    `load average at the start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  ];
}

async function main() {
  const started = performance.now();
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const description = machine();
  const floors = [floor(), floorAppendOnly(), floorSqlite(), floorPostgres(PG_URL)];
  const ours = [
    tollgate(),
    ...[memoryStore, fileStore, sqliteStore, sqliteNormalStore].map((kind) => tollgateWith(kind)),
    tollgateWith(sqliteStore, 'points'),
    tollgateWith(postgresStore),
    tollgateWith(postgresStore, 'points'),
  ];
  const others = [bareXState(), tollgateMachine(), naiveXState(), ...(await peers())];
  // Peers for the ratio table; the bare XState loop and Tollgate's machine are floors there, not peers.
  const peerNames = others.map((c) => c.name).filter((name) => name !== BARE_XSTATE && name !== MACHINE);
  let contestants = [...floors, ...ours, ...others];
  if (values.only) {
    const only = new RegExp(values.only, 'i');
    contestants = contestants.filter((c) => only.test(c.name) || c.name === 'floor');
  }
  const listed: Results['contestants'] = [];
  const ready: Contestant[] = [];
  for (const c of contestants) {
    try {
      await c.setup?.();
      await c.run(10, `check-${process.pid}`); // each must finish a run correctly to take part
      ready.push(c);
      listed.push({ name: c.name, persists: c.persists });
    } catch (error) {
      listed.push({
        name: c.name,
        persists: c.persists,
        error: String((error as Error).message ?? error).slice(0, 200),
      });
      log(`${c.name}: not measured: ${String(error)}`);
    }
  }
  try {
    log(`per-step cost (${plan.sizes.join(', ')} steps):`);
    const steps = await measureSteps(ready, plan, log);
    // Counted during the timed runs (the runs below would overwrite them, concurrent ones wrongly).
    const saves = structuredClone(saveStats);
    log(`final checkpoint of a ${scale.checkpointSteps}-step run:`);
    const checkpoints = await measureCheckpoints(
      ready,
      scale.checkpointSteps,
      scale.checkpointSamples,
      steps,
      plan.slowSampleMs,
      log,
    );
    log('decide() on a 1 MB history:');
    const decide = await measureDecide(scale.decideSamples, log);
    log(`${scale.concurrentRuns} concurrent runs of 10 steps:`);
    const concurrent = await measureConcurrent(
      ready.filter((c) => c.name !== 'floor + append-only log'),
      scale.concurrentRuns,
      10,
      log,
    );
    log(`${scale.pausedRuns} runs paused for approval:`);
    const paused = await measurePaused(scale.pausedRuns, log);
    const flags = [...(quick ? ['--quick'] : []), ...(values.only ? [`--only "${values.only}"`] : [])];
    const command = `npm run bench${flags.length ? ` -- ${flags.join(' ')}` : ''}`;
    const workers = values.only
      ? keptPool(readPage())
      : ((await poolMarkdown(`${date} UTC`, command)) ?? keptPool(readPage()));
    const longHistories = values.only ? keptLong(readPage()) : await longMarkdown(`${date} UTC`, command);
    const parallel = values.only ? keptParallel(readPage()) : await parallelMarkdown(`${date} UTC`, command);
    description.push(
      `load average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
    const results: Results = {
      date: `${date} UTC`,
      quick,
      machine: description,
      command,
      durationS: (performance.now() - started) / 1000,
      contestants: listed,
      peers: peerNames.filter((n) => steps.has(n)),
      sizes: plan.sizes,
      steps,
      saves,
      checkpointSteps: scale.checkpointSteps,
      checkpoints,
      decide,
      concurrent,
      paused,
    };
    const page = render(results, targets(results));
    const withPool = workers ? splicePool(page, workers) : page;
    const withLong = longHistories ? spliceLong(withPool, longHistories) : withPool;
    const measured = parallel ? spliceParallel(withLong, parallel) : withLong;
    // The hand-written section (what each change paid, what did not), kept from the page before, after the targets.
    const notes = keptSection(readPage(), 'notes');
    const markdown = notes ? spliceSection(measured, notes, 'notes', '## µs per step') : measured;
    console.log(`\n${markdown}`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, markdown);
    console.log(`written to ${out}`);
  } finally {
    for (const c of ready) await c.teardown?.().catch(() => {});
  }
}

if (values.workers) await workersOnly();
else if (values.long) await longOnly();
else if (values.parallel) await parallelOnly();
else await main();
