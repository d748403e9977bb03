/**
 * A chaos-suite worker process: the public `Worker` working the `chaos` agent's runs until
 * SIGTERM, its side effects written to the downstream system with their fencing tokens. The
 * parent SIGKILLs, SIGSTOPs and cuts it off at random; told `freeze` on stdin, it stops itself
 * (SIGSTOP) right after its next save, until the parent wakes it (`thaw` takes the order back).
 * It tells the parent its claims and group holds and charges, with their lease tokens.
 * Run: `node --import tsx test/chaos/worker.ts '<ChildConfig JSON>'`.
 */
import { createInterface } from 'node:readline';
import { describeError } from '../../machines/describe-error.js';
import type { CheckpointStore } from '../../src/index.js';
import type { GroupHoldRequest, GroupSettlement } from '../../src/store/contract.js';
import { Worker } from '../../src/worker/index.js';
import { random } from '../support/random.js';
import { type ChildConfig, emit, openStore } from './child.js';
import { openDownstream } from './downstream.js';
import { chaosAgent, type WorkerEvent } from './scenario.js';

const config = JSON.parse(process.argv[2] ?? '') as ChildConfig;
const say = (event: WorkerEvent) => emit(event);
const inner = await openStore(config.store);
const downstream = await openDownstream(config.downstream);
const rng = random(config.seed);
const agent = chaosAgent({ downstream, emit: say, rng }, config.leaseMs);

let freeze = false;
createInterface({ input: process.stdin }).on('line', (line) => {
  freeze = line === 'freeze';
});
/**
 * The store as the worker uses it, watched: each claim's token, each group hold and charge is told
 * to the parent (which finds the ones made by an owner that had lost its run); and after a save,
 * when told to, the process stops itself.
 */
const store = new Proxy(inner, {
  get(target, key) {
    if (key === 'save') {
      return async (...args: Parameters<CheckpointStore['save']>) => {
        const version = await target.save(...args);
        if (freeze) {
          freeze = false;
          say({ type: 'frozen', at: Date.now() }); // a pipe: written before the next line runs
          process.kill(process.pid, 'SIGSTOP');
        }
        return version;
      };
    }
    if (key === 'claimNext') {
      return async (...args: Parameters<CheckpointStore['claimNext']>) => {
        const next = await target.claimNext(...args);
        if (next) say({ type: 'lease', runId: next.lease.runId, token: next.lease.token, at: Date.now() });
        return next;
      };
    }
    if (key === 'holdGroup') {
      return (group: string, request: GroupHoldRequest) => {
        const { runId, token, costMicroUsd } = request;
        say({ type: 'hold', runId, group, token, costMicroUsd: costMicroUsd ?? 0, at: Date.now() });
        return target.holdGroup(group, request);
      };
    }
    if (key === 'settleGroup') {
      return (group: string, settlement: GroupSettlement) => {
        const { runId, token, charge } = settlement;
        say({ type: 'charge', runId, group, token, costMicroUsd: charge.costMicroUsd, at: Date.now() });
        return target.settleGroup(group, settlement);
      };
    }
    const value: unknown = Reflect.get(target, key);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});

const worker = new Worker({ store, agents: [agent], leaseMs: config.leaseMs, pollMs: 100, concurrency: 3 });
worker.observe((event) => {
  if (event.type === 'error') say({ type: 'error', runId: event.runId, error: describeError(event.error) });
  if (event.type === 'settled') say({ type: 'settled', runId: event.runId, status: event.status });
});
process.on('SIGTERM', () => {
  void worker
    .stop({ timeoutMs: 5_000 })
    .then(() => Promise.all([inner.close(), downstream.close()]))
    .then(() => process.exit(0));
});
await worker.start();
say({ type: 'ready' });
