/**
 * The chaos suite's submitter process: submits the planned runs with `submitRun`, one every
 * `everyMs`, then exits. Its own process because an SQLite write waits for the lock synchronously:
 * in the parent it would block the very timer that wakes a paused worker holding that lock. Run:
 * `node --import tsx test/chaos/submitter.ts '<ChildConfig JSON>'`.
 */
import { submitRun } from '../../src/worker/index.js';
import { type ChildConfig, emit, openStore } from './child.js';
import { chaosAgent } from './scenario.js';

const config = JSON.parse(process.argv[2] ?? '') as ChildConfig;
const store = await openStore(config.store);
const agent = chaosAgent(null, config.leaseMs);
emit({ type: 'ready' });
for (const run of config.submit?.runs ?? []) {
  const limits = run.limits ? { limits: run.limits } : {};
  await submitRun(store, { agent, goal: 'pay, ship and tell', runId: run.runId, budgetGroup: run.group, ...limits });
  emit({ type: 'submitted', runId: run.runId });
  await new Promise((resolve) => setTimeout(resolve, config.submit?.everyMs ?? 0));
}
await store.close();
process.exit(0);
