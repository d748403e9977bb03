/**
 * A fresh process for invariants 4 and 5: `node --import tsx child.ts <job.json> <out.json>`.
 * One process takes a whole batch (starting one per path would cost more than the paths).
 *   { handoffs: Handoff[] }  → continues each path from its checkpoint: [{ pathId, violations, final }]
 *   { blobs: string[] }      → loads each blob and writes it back: [{ index, problem }]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent } from '../../../src/agent.js';
import { continueFrom, type Handoff } from './drive.js';
import { worldTools } from './world-tools.js';

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error('usage: child.ts <job.json> <out.json>');
const job = JSON.parse(readFileSync(input, 'utf8')) as { handoffs?: Handoff[]; blobs?: string[] };

const results: unknown[] = [];
for (const handoff of job.handoffs ?? []) {
  const run = await continueFrom(handoff);
  results.push({ pathId: handoff.pathId, violations: run.violations, final: run.final });
}
const refuse = () => {
  throw new Error('loading a checkpoint must call nothing');
};
for (const [index, blob] of (job.blobs ?? []).entries()) {
  let problem: string | null = null;
  try {
    const tools = worldTools(() => refuse, refuse);
    if (Agent.resume(blob, { policy: refuse, tools }).checkpoint() !== blob)
      problem = 'resume(blob).checkpoint() !== blob';
  } catch (error) {
    problem = `does not load: ${String(error)}`;
  }
  results.push({ index, problem });
}
writeFileSync(output, JSON.stringify({ pid: process.pid, results }));
