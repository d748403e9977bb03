/**
 * The one workload every contestant runs: a scripted policy that calls the `echo` tool until
 * the run has taken `steps` steps, then answers; an instant tool whose result is ~200 bytes of
 * JSON. A step is one policy call plus one tool call.
 */

/** The tool's result: ~200 bytes as JSON, the same for every contestant. */
export function toolResult(n: number): { n: number; text: string } {
  return { n, text: 'r'.repeat(200 - 18 - String(n).length) };
}

/** The tool's arguments at step `n` (0-based). */
export function toolArgs(n: number): { n: number } {
  return { n };
}

export const TOOL = 'echo';
export const ANSWER = 'done';
export const GOAL = 'run the benchmark';

/**
 * What the scripted policy decides after `calls` tool calls: another call while calls < steps,
 * then the final answer. Every contestant's policy derives `calls` from what it is given (its
 * own history or messages), the way a real policy reads its input.
 */
export function nextAction(calls: number, steps: number): { tool: string; args: { n: number } } | { final: string } {
  return calls < steps ? { tool: TOOL, args: toolArgs(calls) } : { final: ANSWER };
}

/** What one contestant reports for one run. */
export interface RunReport {
  /** Bytes handed to durable storage during the run, or null when nothing is persisted. */
  bytes: number | null;
}

/**
 * How many times each checkpoint sample loads the run it saved: a finished run's checkpoint can be
 * read back any number of times, and one load right after a 1,000-step run pays for the garbage
 * that run left (a collection lands in it), so the sample's load time is the median of these.
 */
export const LOADS_PER_SAMPLE = 5;

/** The median time in ms of `LOADS_PER_SAMPLE` calls of `load`, one after another; `check` sees each result. */
export async function timeLoads<T>(load: () => T | Promise<T>, check: (loaded: T) => void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < LOADS_PER_SAMPLE; i++) {
    const t = performance.now();
    const made = load();
    // A synchronous load is timed without the microtask an await of its value would add.
    const loaded = made instanceof Promise ? await made : made;
    times.push(performance.now() - t);
    check(loaded);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** Timings of the final checkpoint of a finished run: serialise + store, and read + restore. */
export interface CheckpointTimes {
  saveMs: number;
  loadMs: number;
  bytes: number;
}

/**
 * A contestant. `run` does one whole run of `steps` steps (steps policy calls that call the
 * tool, plus the final policy call) and must throw if the run did not finish with ANSWER after
 * exactly `steps` tool calls. Everything a contestant needs (databases, temp dirs) is made in
 * `setup` and removed in `teardown`.
 */
export interface Contestant {
  readonly name: string;
  /** What it persists, in a few words: 'nothing', 'SQLite on disk (WAL)', ... */
  readonly persists: string;
  setup?(): Promise<void>;
  run(steps: number, runId: string): Promise<RunReport>;
  /** Save and load the final checkpoint of a finished run of `steps` steps (made by this call). */
  checkpoint?(steps: number, runId: string): Promise<CheckpointTimes>;
  teardown?(): Promise<void>;
}
