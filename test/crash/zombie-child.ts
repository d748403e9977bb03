/**
 * A worker process for test/crash/zombie.int.test.ts: works the `payer` agent's runs with the
 * `Worker` class until SIGTERM, on SQLite or Postgres. It freezes itself (SIGSTOP) right after
 * the first save of its second claim — the write-ahead save of the approved call, when the run was
 * claimed to apply a recorded decision — as a long GC pause or a VM migration would. Its `pay`
 * tool writes every attempt to the ledger, with the fencing token it was given. Run:
 * `node --import tsx test/crash/zombie-child.ts sqlite <db> <ledger>` or `… postgres <url> <schema> <ledger>`.
 */
import { appendFileSync } from 'node:fs';
import type { CheckpointStore } from '../../src/index.js';
import { defineAgent } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { Worker } from '../../src/worker/index.js';

const [kind = '', where = '', ...rest] = process.argv.slice(2);
const schema = kind === 'postgres' ? rest.shift() : undefined;
const ledger = rest[0] ?? '';

const payer = defineAgent({
  name: 'payer',
  tools: [
    {
      name: 'pay',
      sideEffect: true,
      fn: (_args, key, ctx) => {
        appendFileSync(ledger, `attempt ${key} fence ${ctx.fence} pid ${process.pid}\n`);
        return 'paid';
      },
    },
  ],
  policy: (history) =>
    history.some((e) => e.role === 'tool') ? { final: 'over' } : { tool: 'pay', args: { cents: 1 } },
});

const inner: CheckpointStore =
  kind === 'sqlite' ? SqliteStore.open(where) : new PostgresStore(where, { schema: schema as string });
let claims = 0;
let savesThisClaim = 0;
let frozen = false;
const store = new Proxy(inner, {
  get(target, key) {
    if (key === 'claimNext') {
      return async (options: Parameters<CheckpointStore['claimNext']>[0]) => {
        const next = await target.claimNext(options);
        if (next) {
          claims++;
          savesThisClaim = 0;
        }
        return next;
      };
    }
    if (key === 'save') {
      return async (...args: Parameters<CheckpointStore['save']>) => {
        const version = await target.save(...args);
        savesThisClaim++;
        if (!frozen && process.env.FREEZE === '1' && claims === 2 && savesThisClaim === 1) {
          frozen = true;
          process.stdout.write('frozen\n'); // a pipe: written before the next line runs
          process.kill(process.pid, 'SIGSTOP');
          process.stdout.write('woke\n');
        }
        return version;
      };
    }
    const value: unknown = Reflect.get(target, key);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});

const worker = new Worker({ store, agents: [payer], leaseMs: 600, pollMs: 50 });
worker.observe((event) => {
  if (event.type === 'error') process.stdout.write(`error ${String(event.error)}\n`);
  if (event.type === 'settled') process.stdout.write(`settled ${event.runId} ${event.status}\n`);
});
process.on('SIGTERM', () => {
  void worker
    .stop({ graceful: false })
    .then(() => store.close())
    .then(() => process.exit(0));
});
await worker.start();
process.stdout.write('ready\n');
