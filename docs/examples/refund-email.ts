/**
 * `npm run example`: the refund-email scenario end to end. The agent searches, asks to email ops
 * (a side effect, so it pauses for a human), is checkpointed to a file, resumed from that file
 * as a new process would, approved, and finishes. No API key: the policy is scripted.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type Policy, type Tool } from '../../src/index.js';

const outbox: { to: string; key: string }[] = [];

const tools: Tool[] = [
  {
    name: 'search',
    fn: ({ q }: { q?: string }) => {
      if (!q) throw new Error('empty query');
      return { hits: ['Refunds are accepted within 30 days of purchase.'] };
    },
  },
  {
    name: 'send_email',
    sideEffect: true, // needs a human's approval before it runs
    idempotent: true, // the mailer deduplicates by key, so a crash mid-send is safe to retry
    fn: ({ to }: { to: string }, key: string) => {
      outbox.push({ to, key });
      return { queued: true };
    },
  },
];

// A scripted stand-in for the model: search, email ops, then answer.
const policy: Policy = (history) => {
  const last = history.at(-1);
  if (history.length === 1) return { tool: 'search', args: { q: 'refund policy' } };
  if (last?.role === 'tool' && last.tool === 'search') {
    return { tool: 'send_email', args: { to: 'ops@example.com', body: 'Refunds: 30 days.' } };
  }
  return { final: last && 'error' in last ? 'cancelled' : 'emailed' };
};

const show = (label: string, value: unknown) => console.log(`${label.padEnd(12)} ${JSON.stringify(value)}`);

const agent = new Agent({ policy, tools, runId: 'run-1', approvalTtlMs: 24 * 3600 * 1000 });
show('start', await agent.start('email ops the refund policy'));
for (const entry of agent.state.history) show('  history', entry);
show('pending', agent.state.pending);
show('outbox', outbox);

const file = join(mkdtempSync(join(tmpdir(), 'tollgate-demo-')), 'run-1.json');
writeFileSync(file, agent.checkpoint());
show('checkpoint', `${file} (${readFileSync(file).length} bytes)`);

// Later, in any process: load the run from the checkpoint and decide.
const resumed = Agent.resume(readFileSync(file, 'utf8'), { policy, tools });
show('resumed', resumed.status);
const pending = resumed.state.pending;
show('approve', await resumed.decide(true, 'looks right', { by: 'demo-user', callId: pending?.id }));
show('answer', resumed.state.answer);
show('outbox', outbox);
show('steps', `${resumed.state.steps} of ${resumed.state.limits.maxSteps}`);
