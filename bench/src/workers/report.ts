/** The worker-pool section of docs/performance.md, and how it is put in place. */
import { cpus } from 'node:os';
import { keptSection, markers, spliceSection, table } from '../report.js';
import { fmt } from '../stats.js';
import { STEPS, TOOL_MS } from './agents.js';
import type { PoolResult } from './pool.js';

const [START, END] = markers('workers');

export function poolSection(r: PoolResult, date: string, command: string): string {
  const { plan } = r;
  const one = r.throughput[0];
  const span = (s: { median: number; min: number; max: number; n: number }) =>
    `median ${fmt.ms(s.median)} (${fmt.ms(s.min)}–${fmt.ms(s.max)}, n ${s.n})`;
  return `${START}
## Worker pool on Postgres

Measured by \`${command}\` on ${date}.
K worker processes on one Postgres, each a \`Worker\` (\`tollgate/worker\`) with concurrency ${plan.concurrency}, \`pollMs\` 250 and \`leaseMs\` ${plan.leaseMs.toLocaleString('en')}.
${plan.runs.toLocaleString('en')} runs are submitted with \`submitRun\` before the workers are told to go; each run makes ${STEPS} calls to a pure tool that waits ${TOOL_MS} ms, then answers.
Total is the time from "go" to the last run settled \`done\` (every run must end \`done\`).

${table(
  ['worker processes', 'total', 'runs/s', 'steps/s', 'vs 1 process'],
  r.throughput.map((t) => [
    String(t.processes),
    fmt.ms(t.totalMs),
    t.runsPerS.toFixed(0),
    t.stepsPerS.toFixed(0),
    one ? fmt.ratio(one.totalMs / t.totalMs) : '',
  ]),
)}

The pool is bound by CPU, not by waiting: ${cpus().length} cores run Postgres and every worker process, and a step costs two fenced saves (write-ahead, then the result) plus the policy and tool calls' work.
More processes than cores add no throughput here; a machine where Postgres has cores of its own has not been measured.

**Recorded decision → tool call.**
One worker process holds a run paused for approval; \`recordDecision\` records an approval (the call itself, which reads, checks and queues: ${span(r.recordMs)}).
From its return to the approved tool being entered in the worker process: ${span(r.decisionToCallMs)}.
The worker hears of the decision through \`LISTEN\`/\`NOTIFY\`, not its poll.

**Take-over of a dead worker's run.**
A worker is killed with SIGKILL at a random point of its lease while its run's call is in flight; a second worker, already running, takes the run over when the lease lapses and calls the (pure) tool again.
From the kill to that call: ${span(r.takeoverMs)}.
It is bounded by \`leaseMs\` after the dead owner's last renewal, plus one poll: a lapse makes no notification, so the survivor finds it by polling.
${END}`;
}

/** Puts the section in place of the last one in `page`, or before "## Reading the figures". */
export const splicePool = (page: string, section: string) => spliceSection(page, section, 'workers');

/** The section kept from a page written before, so a full run without Postgres does not drop it. */
export const keptPool = (page: string) => keptSection(page, 'workers');
