/**
 * An owner paused past its lease right after its write-ahead save (SIGSTOP on a real worker
 * process, as a long GC pause or a VM migration would freeze it) must not start the side effect
 * when it wakes: another worker took the run over meanwhile, a human decided again, and the effect
 * ran under the new owner. Before the fence reached the effect, the woken worker called the tool
 * too (two payments). On SQLite and on Postgres, with the `Worker` class.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type CheckpointStore, defineAgent, RunBusyError } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { recordDecision, submitRun } from '../../src/worker/index.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';

const child = join(import.meta.dirname, 'zombie-child.ts');
const payer = defineAgent({
  name: 'payer',
  tools: [{ name: 'pay', sideEffect: true, fn: () => 'never called here' }],
  policy: () => ({ final: 'never called here' }),
});

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
});

interface Started {
  child: ChildProcess;
  out: string[];
}

function startWorker(args: string[], freeze: boolean): Promise<Started> {
  const c = spawn(process.execPath, ['--import', 'tsx', child, ...args], {
    env: { ...process.env, FREEZE: freeze ? '1' : '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(c);
  const out: string[] = [];
  return new Promise((ready, fail) => {
    let buffered = '';
    c.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      out.push(...lines);
      if (lines.includes('ready')) ready({ child: c, out });
    });
    c.on('exit', (code) => fail(new Error(`worker exited early (${code})`)));
  });
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 800; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const attempts = (ledger: string) =>
  existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];

async function zombie(store: CheckpointStore, args: string[], ledger: string): Promise<void> {
  const a = await startWorker(args, true);
  const runId = await submitRun(store, { agent: payer, goal: 'pay once', runId: 'order-7' });
  const pendingId = async () => (await store.load(runId))?.pendingCalls[0]?.id;
  await until(async () => (await pendingId()) !== undefined, 'the first approval request');
  await recordDecision(
    store,
    runId,
    { [(await pendingId()) as string]: { approve: true, note: 'ok' } },
    { by: 'dana' },
  );
  // A claims the run to apply the decision, saves the write-ahead record, and freezes.
  await until(() => a.out.includes('frozen'), 'worker A to freeze after its write-ahead save');
  expect(attempts(ledger)).toEqual([]);

  // B takes the run over once A's lease lapsed: the call was in flight, so a human is asked again.
  const b = await startWorker(args, false);
  await until(async () => (await store.load(runId))?.pendingCalls[0]?.outcome === 'unknown', 'the call asked again');
  // B may not have given the run up yet (RunBusyError: try again shortly, as an inbox does).
  await until(async () => {
    const id = (await pendingId()) as string;
    return recordDecision(store, runId, { [id]: { approve: true, note: 'again' } }, { by: 'dana' }).then(
      () => true,
      (error) => {
        if (error instanceof RunBusyError) return false;
        throw error;
      },
    );
  }, 'the second decision recorded');
  await until(async () => (await store.load(runId))?.status === 'done', 'B to finish the run');
  expect(attempts(ledger)).toHaveLength(1);
  expect(attempts(ledger)[0]).toContain(`pid ${b.child.pid}`);

  // A wakes: it must not pay.
  a.child.kill('SIGCONT');
  await until(() => a.out.includes('woke') && a.out.some((l) => l.startsWith('error ')), 'A to wake and give up');
  await new Promise((r) => setTimeout(r, 300));
  expect(a.out.find((l) => l.startsWith('error '))).toMatch(/LeaseLostError/);
  expect(attempts(ledger)).toHaveLength(1);
  expect((await store.load(runId))?.status).toBe('done');
}

describe('an owner paused past its lease after its write-ahead save never starts the effect', () => {
  it('on SQLite, with the Worker class', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-zombie-'));
    const db = join(dir, 'runs.db');
    const ledger = join(dir, 'ledger.txt');
    const store = SqliteStore.open(db);
    try {
      await zombie(store, ['sqlite', db, ledger], ledger);
    } finally {
      await store.close();
    }
  }, 60_000);

  const schemas: string[] = [];
  afterAll(async () => {
    const { url } = await postgresTarget();
    if (url) for (const s of schemas) await dropSchema(url, s);
  });

  it('on Postgres, with the Worker class', async (ctx) => {
    const { url } = await postgresTarget();
    if (!url) return ctx.skip();
    const schema = freshSchema('zombie');
    schemas.push(schema);
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-zombie-'));
    const ledger = join(dir, 'ledger.txt');
    const store = new PostgresStore(url, { schema });
    try {
      await zombie(store, ['postgres', url, schema, ledger], ledger);
    } finally {
      await store.close();
    }
  }, 60_000);
});
