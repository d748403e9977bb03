/**
 * One worker process of the pool bench (bench/src/workers/pool.ts starts K of them):
 * `node --import tsx child.ts <schema> <concurrency> <leaseMs> <hangMs>`.
 *
 * It opens the Postgres store, prints `ready`, waits for `go` on stdin, then runs a `Worker` over
 * the bench's agents until stdin closes or SIGTERM. It reports on stdout, one line each:
 * `settled <runId> <status>`, `call <tool> <key> <wall ms>` when a measured tool is entered
 * (wall ms: `performance.timeOrigin + performance.now()`, comparable across processes on one
 * machine) and `error <text>`.
 */
import { createInterface } from 'node:readline';
import { PostgresStore } from 'tollgate/postgres';
import { Worker } from 'tollgate/worker';
import { PG_URL } from '../contestants/tollgate.js';
import { benchAgents } from './agents.js';

const [schema = '', concurrency = '16', leaseMs = '30000', hangMs = '0'] = process.argv.slice(2);
const wall = () => performance.timeOrigin + performance.now();
const say = (line: string) => process.stdout.write(`${line}\n`);

const store = new PostgresStore(PG_URL, { schema, connectTimeoutMs: 5_000 });
await store.list({ limit: 1 }); // connects and migrates before `ready`
const agents = benchAgents({
  onCall: (tool, key) => say(`call ${tool} ${key} ${wall().toFixed(3)}`),
  hangMs: Number(hangMs),
});
const worker = new Worker({
  store,
  agents,
  concurrency: Number(concurrency),
  leaseMs: Number(leaseMs),
  pollMs: 250,
});
worker.observe((event) => {
  if (event.type === 'settled') say(`settled ${event.runId} ${event.status}`);
  if (event.type === 'error') say(`error ${String((event.error as Error)?.message ?? event.error).slice(0, 200)}`);
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await worker.stop({ graceful: false });
  await store.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop());

const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (line.trim() === 'go') void worker.start();
});
input.on('close', () => void stop());
say('ready');
