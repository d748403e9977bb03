/**
 * The chaos suite's approver process: it polls the store's inbox and records decisions with
 * `recordDecision`, as an inbox service would — it runs nothing. Most calls are approved, some
 * denied, some payments approved with a smaller amount (an edit); a call asked again after a crash
 * (outcome unknown) is looked up downstream first: denied if it took effect, approved if not.
 * A decision refused for now (a worker holds the run, or the run changed) is tried again at the
 * next look. Each decision is printed once recorded. Stops on SIGTERM. Run:
 * `node --import tsx test/chaos/approver.ts '<ChildConfig JSON>'`.
 */
import { describeError } from '../../machines/describe-error.js';
import { ConflictError, type PendingCall, RunBusyError } from '../../src/index.js';
import type { RunSummary } from '../../src/store/contract.js';
import { recordDecision } from '../../src/worker/index.js';
import { random } from '../support/random.js';
import { type ChildConfig, emit, openStore } from './child.js';
import { openDownstream } from './downstream.js';
import { type ApproverEvent, chaosAgent } from './scenario.js';

const config = JSON.parse(process.argv[2] ?? '') as ChildConfig;
const say = (event: ApproverEvent) => emit(event);
const store = await openStore(config.store);
const downstream = await openDownstream(config.downstream);
const rng = random(config.seed);
const agent = chaosAgent(null, config.leaseMs);
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
});

/** Every call id decided so far: one seen pending again, with no decision recorded, was dropped. */
const decided = new Set<string>();

interface Choice {
  approve: boolean;
  note: string;
  args?: Record<string, unknown>;
}

async function choose(call: PendingCall): Promise<Choice> {
  if (call.outcome === 'unknown') {
    // A careful human looks the effect up before letting it run again (and may not edit it).
    const found = await downstream.lookup(call.key, null);
    return found
      ? { approve: false, note: 'downstream: it took effect' }
      : { approve: true, note: 'downstream: not done' };
  }
  const roll = rng();
  if (roll < 0.1) return { approve: false, note: 'not this one' };
  if (call.tool === 'pay' && roll < 0.3) {
    return { approve: true, note: 'half of it', args: { cents: Math.max(1, Math.floor(Number(call.args.cents) / 2)) } };
  }
  return { approve: true, note: 'ok' };
}

async function decide(run: RunSummary): Promise<void> {
  // All the pending calls in one decision, or only the first (the others wait, or queue behind it).
  const calls = rng() < 0.7 ? run.pendingCalls : run.pendingCalls.slice(0, 1);
  const choices = new Map<PendingCall, Choice>();
  for (const call of calls) choices.set(call, await choose(call));
  const map = Object.fromEntries(
    [...choices].map(([call, c]) => [
      call.id,
      c.approve
        ? { approve: true as const, note: c.note, ...(c.args ? { args: c.args } : {}) }
        : { approve: false as const, note: c.note },
    ]),
  );
  try {
    await recordDecision(store, run.runId, map, { by: 'chaos-approver', agent });
  } catch (error) {
    const kind = error instanceof RunBusyError || error instanceof ConflictError ? 'retry' : 'refused';
    say({ type: kind, runId: run.runId, error: describeError(error) });
    return;
  }
  for (const [call, c] of choices) {
    if (decided.has(call.id)) say({ type: 'dropped', runId: run.runId, callId: call.id });
    decided.add(call.id);
    say({
      type: 'decided',
      runId: run.runId,
      callId: call.id,
      key: call.key,
      tool: call.tool,
      attempt: call.attempt,
      unknown: call.outcome === 'unknown',
      approve: c.approve,
      args: c.args ?? call.args,
      edited: c.args !== undefined,
      note: c.note,
    });
  }
}

say({ type: 'ready' });
while (!stopping) {
  try {
    for (const run of await store.list({ status: 'awaiting_approval' })) {
      if (stopping) break;
      if (run.decision === null && run.pendingCalls.length > 0) await decide(run);
    }
  } catch (error) {
    say({ type: 'refused', runId: '', error: describeError(error) });
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await Promise.all([store.close(), downstream.close()]);
process.exit(0);
