/**
 * A worker process for test/crash/worker-kill.int.test.ts: works the `payer` agent's runs of an
 * SQLite store until SIGTERM. Its `pay` tool writes `start <key>` to the ledger before it pays;
 * with HANG=1 it then never returns (the parent SIGKILLs the process in the call), else it
 * writes `paid <key>`. Run: `node --import tsx test/crash/worker-child.ts <db> <ledger>`.
 */
import { appendFileSync } from 'node:fs';
import { defineAgent } from '../../src/index.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { Worker } from '../../src/worker/index.js';

const [db = '', ledger = ''] = process.argv.slice(2);
export const payer = defineAgent({
  name: 'payer',
  tools: [
    {
      name: 'pay',
      sideEffect: true,
      fn: async (_args, key) => {
        appendFileSync(ledger, `start ${key}\n`);
        if (process.env.HANG === '1') await new Promise(() => {});
        appendFileSync(ledger, `paid ${key}\n`);
        return 'paid';
      },
    },
  ],
  policy: (history) =>
    history.some((e) => e.role === 'tool') ? { final: 'over' } : { tool: 'pay', args: { cents: 1 } },
});

const store = SqliteStore.open(db);
const worker = new Worker({ store, agents: [payer], leaseMs: 500, pollMs: 50 });
process.on('SIGTERM', () => {
  void worker
    .stop()
    .then(() => store.close())
    .then(() => process.exit(0));
});
await worker.start();
process.stdout.write('ready\n');
