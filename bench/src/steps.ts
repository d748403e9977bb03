/**
 * Per-step cost: runs of N steps, sampled repeatedly, contestants interleaved sample by sample
 * (a slow minute on this shared machine hits all of them alike). A sample is a batch of runs
 * of at least `minStepsPerSample` steps in all; its figure is µs per step.
 */
import { type Summary, summarise } from './stats.js';
import type { CheckpointTimes, Contestant } from './workload.js';

export interface StepPlan {
  sizes: number[];
  minSamples: number;
  maxSamples: number;
  /** Stop sampling a (contestant, N) cell once it has used this much time. */
  cellBudgetMs: number;
  /** Skip a cell whose one sample is estimated to take longer than this. */
  maxSampleMs: number;
  /** A cell whose one sample is estimated over this gets one sample and no warm-up. */
  slowSampleMs: number;
  minStepsPerSample: number;
}

export interface Cell {
  perStepUs: Summary | null;
  bytesPerStep: number | null;
  bytesPerRun: number | null;
  /** Why the cell was not measured. */
  skipped?: string;
}

export type StepResults = Map<string, Map<number, Cell>>;

let runCounter = 0;
const nextRunId = (name: string) => `${name.replace(/[^a-z0-9]+/gi, '-')}-${process.pid}-${++runCounter}`;

// No forced GC before a sample: a full collection resets V8's heap sizing, and the next sample
// of an allocation-heavy loop then pays ~40-60 µs a step more than in steady state (measured).
async function sample(c: Contestant, steps: number, runs: number) {
  let bytes: number | null = 0;
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const report = await c.run(steps, nextRunId(c.name));
    bytes = report.bytes === null || bytes === null ? null : bytes + report.bytes;
  }
  const ms = performance.now() - started;
  return { usPerStep: (ms * 1000) / (runs * steps), ms, bytesPerRun: bytes === null ? null : bytes / runs };
}

export async function measureSteps(
  contestants: Contestant[],
  plan: StepPlan,
  log: (line: string) => void,
): Promise<StepResults> {
  const results: StepResults = new Map(contestants.map((c) => [c.name, new Map()]));
  const history = new Map<string, number[]>();
  for (const steps of plan.sizes) {
    const samples = new Map<string, number[]>();
    const spent = new Map<string, number>();
    const bytes = new Map<string, number | null>();
    // A run's time at this size, estimated from the sizes before: per-step cost may grow with
    // N, so assume it grows as it did over the last size step (at least doubling).
    const runEstimateMs = (c: Contestant) => {
      const seen = history.get(c.name) ?? [];
      const prior = seen.at(-1);
      if (prior === undefined) return 0;
      const before = seen.at(-2);
      const growth = Math.max(2, before === undefined ? 2 : prior / before);
      return (prior * growth * steps) / 1000;
    };
    // A sample is a batch of runs of minStepsPerSample steps in all, fewer for slow contestants.
    const runsOf = (c: Contestant) => {
      const wanted = Math.max(1, Math.ceil(plan.minStepsPerSample / steps));
      const estimate = runEstimateMs(c);
      return estimate === 0 ? wanted : Math.max(1, Math.min(wanted, Math.floor(plan.cellBudgetMs / estimate)));
    };
    const estimate = (c: Contestant) => runEstimateMs(c) * runsOf(c);
    const slow = (c: Contestant) => estimate(c) > plan.slowSampleMs;
    const live = contestants.filter((c) => {
      const estimateMs = estimate(c);
      if (estimateMs > plan.maxSampleMs) {
        results.get(c.name)?.set(steps, {
          perStepUs: null,
          bytesPerStep: null,
          bytesPerRun: null,
          skipped: `not run: one run estimated at ${Math.round(estimateMs / 1000)} s`,
        });
        log(`  ${c.name} @ ${steps}: skipped (estimated ${Math.round(estimateMs / 1000)} s per run)`);
        return false;
      }
      return true;
    });
    // Warm-up: one untimed sample at this size (the JIT has not optimised a cold loop).
    for (const c of live) if (!slow(c)) await sample(c, steps, runsOf(c));
    for (let i = 0; i < plan.maxSamples; i++) {
      const order = live.map((_, k) => live[(k + i) % live.length] as Contestant);
      let any = false;
      for (const c of order) {
        const mine = samples.get(c.name) ?? [];
        const enough = slow(c) ? 1 : plan.minSamples;
        if (mine.length >= enough && (spent.get(c.name) ?? 0) >= plan.cellBudgetMs) continue;
        any = true;
        const s = await sample(c, steps, runsOf(c));
        mine.push(s.usPerStep);
        samples.set(c.name, mine);
        spent.set(c.name, (spent.get(c.name) ?? 0) + s.ms);
        bytes.set(c.name, s.bytesPerRun);
      }
      if (!any) break;
    }
    for (const c of live) {
      const perStepUs = summarise(samples.get(c.name) ?? []);
      const perRun = bytes.get(c.name) ?? null;
      history.set(c.name, [...(history.get(c.name) ?? []), perStepUs.median]);
      results
        .get(c.name)
        ?.set(steps, { perStepUs, bytesPerRun: perRun, bytesPerStep: perRun === null ? null : perRun / steps });
      log(`  ${c.name} @ ${steps}: ${perStepUs.median.toFixed(1)} µs/step (n=${perStepUs.n})`);
    }
  }
  return results;
}

export interface CheckpointResult {
  save: Summary;
  load: Summary;
  bytes: number;
}

/**
 * Save and load of the final checkpoint of a finished run of `steps` steps, per contestant.
 * A contestant whose run of that size takes over `slowRunMs` (by its per-step figure) gets one
 * sample and no warm-up; one not measured at that size is left out.
 */
export async function measureCheckpoints(
  contestants: Contestant[],
  steps: number,
  samples: number,
  perStep: StepResults,
  slowRunMs: number,
  log: (line: string) => void,
): Promise<Map<string, CheckpointResult>> {
  const out = new Map<string, CheckpointResult>();
  const times = new Map<string, CheckpointTimes[]>();
  const runMs = (c: Contestant) => {
    const cells = [...(perStep.get(c.name)?.entries() ?? [])].filter(([, cell]) => cell.perStepUs);
    const nearest = cells.filter(([n]) => n <= steps).at(-1);
    if (!nearest) return Number.POSITIVE_INFINITY;
    const [n, cell] = nearest;
    return ((cell.perStepUs?.median ?? 0) * steps * (steps / n)) / 1000; // linear growth assumed beyond n
  };
  const able = contestants.filter((c) => c.checkpoint && runMs(c) < 20 * slowRunMs);
  const slow = (c: Contestant) => runMs(c) > slowRunMs;
  for (const c of able) if (!slow(c)) await c.checkpoint?.(steps, nextRunId(c.name)); // warm-up
  for (let i = 0; i < samples; i++) {
    for (const c of able) {
      if (slow(c) && i > 0) continue;
      const t = await c.checkpoint?.(steps, nextRunId(c.name));
      if (t) times.set(c.name, [...(times.get(c.name) ?? []), t]);
    }
  }
  for (const [name, list] of times) {
    const result = {
      save: summarise(list.map((t) => t.saveMs)),
      load: summarise(list.map((t) => t.loadMs)),
      bytes: (list.at(-1) as CheckpointTimes).bytes,
    };
    out.set(name, result);
    log(`  ${name}: save ${result.save.median.toFixed(3)} ms, load ${result.load.median.toFixed(3)} ms`);
  }
  return out;
}
