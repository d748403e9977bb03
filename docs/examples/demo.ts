/**
 * `npm start`: the support-desk agent through the real `tollgate` CLI, on an SQLite file in
 * `.tollgate/`. It pauses for approval at the terminal. Killed at any point and started again,
 * it resumes the unfinished demo run where it was; a finished one makes way for a new run.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { SqliteStore } from '../../src/stores/sqlite.js';

const store = process.env.TOLLGATE_DEMO_STORE ?? '.tollgate/demo.db';
const agent = fileURLToPath(new URL('./support-desk.js', import.meta.url));
const goal = 'Customer ana@example.com: order A-1001 arrived broken, please refund it.';

async function unfinishedRun(): Promise<{ id: string | null; count: number }> {
  mkdirSync(dirname(store), { recursive: true });
  const s = SqliteStore.open(store);
  try {
    const runs = (await s.list()).filter((r) => r.runId.startsWith('demo-'));
    const open = runs.filter((r) => r.status !== 'done' && r.status !== 'cancelled').at(-1);
    return { id: open?.runId ?? null, count: runs.length };
  } finally {
    await s.close();
  }
}

const { id, count } = await unfinishedRun();
const args = id
  ? ['resume', id, '--agent', agent, '--store', store]
  : ['run', agent, goal, '--store', store, '--run-id', `demo-${count + 1}`];
if (id) process.stdout.write(`resuming unfinished ${id}\n`);
process.exitCode = await main([...args, ...process.argv.slice(2)]);
