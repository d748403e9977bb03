/**
 * Calls side by side (docs/api.md, "Calls side by side"): a step of 4 pure tools that each take
 * 20 ms, run with the default `concurrency` (4) and with `concurrency: 1`, against its floor —
 * the same 4 waits under one `Promise.all` — interleaved in one process, so the ratios are of the
 * same conditions. The target: the step takes about one call's time, not four.
 */
import { Agent, type Policy, type Tool } from 'tollgate';
import { keptSection, markers, spliceSection, table } from './report.js';
import { fmt, type Summary, summarise } from './stats.js';

const [START, END] = markers('parallel');
const CALLS = 4;
const CALL_MS = 20;

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const tools: Tool[] = [
  {
    name: 'fetch',
    fn: async (args) => {
      await wait(CALL_MS);
      return { page: (args as { page: number }).page };
    },
  },
];

/** One step of CALLS look-ups, then the answer. */
const policy: Policy = (history) =>
  history.length === 1
    ? { calls: Array.from({ length: CALLS }, (_, page) => ({ tool: 'fetch', args: { page } })) }
    : { final: 'read' };

export interface ParallelResult {
  samples: number;
  /** Whole runs (start → done), ms. */
  together: Summary;
  alone: Summary;
  floor: Summary;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await work();
  return performance.now() - t;
}

export async function measureParallel(samples: number, log: (line: string) => void): Promise<ParallelResult> {
  const together: number[] = [];
  const alone: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i <= samples; i++) {
    const a = await timed(async () => {
      const status = await new Agent({ policy, tools }).start('read four pages');
      if (status !== 'done') throw new Error(`parallel: ${status}`);
    });
    const b = await timed(async () => {
      const status = await new Agent({ policy, tools, concurrency: 1 }).start('read four pages');
      if (status !== 'done') throw new Error(`parallel: ${status}`);
    });
    const c = await timed(() => Promise.all(Array.from({ length: CALLS }, () => wait(CALL_MS))));
    if (i === 0) continue; // the first round warms up
    together.push(a);
    alone.push(b);
    floor.push(c);
  }
  const result = { samples, together: summarise(together), alone: summarise(alone), floor: summarise(floor) };
  log(
    `  ${CALLS} × ${CALL_MS} ms: concurrency 4 ${fmt.ms(result.together.median)}, 1 ${fmt.ms(result.alone.median)}, floor ${fmt.ms(result.floor.median)}`,
  );
  return result;
}

export function parallelSection(r: ParallelResult, date: string, command: string): string {
  const span = (s: Summary) => `${fmt.ms(s.median)} (${fmt.ms(s.min)}–${fmt.ms(s.max)})`;
  const ratio = r.together.median / r.floor.median;
  return `${START}
## Calls side by side

Measured by \`${command}\` on ${date}, interleaved, ${r.samples} rounds (the first round warms up and is not counted).
A run of one step that asks for ${CALLS} calls of a pure tool taking ${CALL_MS} ms each (a timer), then answers; the floor is the same ${CALLS} timers under one \`Promise.all\`.

**Target: the step takes about one call's time, not ${CALLS}** (the run with the default \`concurrency\` ≤ 1.25 × the floor): **${ratio <= 1.25 ? 'met' : 'missed'}**, ${fmt.ratio(ratio)} the floor; \`concurrency: 1\` takes ${fmt.ratio(r.alone.median / r.together.median)} as long.

${table(
  ['run', 'median (min–max)', 'ratio to the floor'],
  [
    ['`concurrency: 4` (the default)', span(r.together), fmt.ratio(r.together.median / r.floor.median)],
    ['`concurrency: 1`', span(r.alone), fmt.ratio(r.alone.median / r.floor.median)],
    [`floor: ${CALLS} timers, \`Promise.all\``, span(r.floor), '1.00×'],
  ],
)}
${END}`;
}

export const spliceParallel = (page: string, section: string) => spliceSection(page, section, 'parallel');
export const keptParallel = (page: string) => keptSection(page, 'parallel');
