/**
 * A process that holds a run and is then killed, for test/crash/dead-holder.int.test.ts: it starts
 * run `<runId>` with an `Agent` (default lease, 30 s) whose first tool call never returns, says
 * `holding` once the call is in flight and its step saved (the run `running`, its lease held by this process),
 * and waits to be killed. Run: `node --import tsx test/crash/dead-holder-child.ts sqlite <db> <runId>`
 * or `… postgres <url> <schema> <runId>`.
 */
import { Agent, type CheckpointStore } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const [kind = '', where = '', ...rest] = process.argv.slice(2);
const schema = kind === 'postgres' ? rest.shift() : undefined;
const runId = rest[0] ?? '';

const store: CheckpointStore =
  kind === 'sqlite' ? SqliteStore.open(where) : new PostgresStore(where, { schema: schema as string });
const agent = new Agent({
  runId,
  store,
  policy: (history) => (history.some((e) => e.role === 'tool') ? { final: 'looked' } : { tool: 'look' }),
  tools: [
    {
      name: 'look',
      fn: async () => {
        // The lease is claimed with the run's first save: say `holding` only once the store has
        // the run, whatever the order of that save and this call.
        for (let record = await store.load(runId); record === null; record = await store.load(runId)) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        process.stdout.write('holding\n');
        return new Promise(() => {}); // until killed
      },
    },
  ],
});
void agent.start('look it up');
