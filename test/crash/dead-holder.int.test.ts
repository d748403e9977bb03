/**
 * A run whose holder was killed (SIGKILL) on this machine is taken up at once: `Agent.load` proves
 * the holder dead from the process identity its claim recorded (boot id, pid namespace, pid, start
 * time), releases exactly that lease and claims the run — no wait for the 30 s lease to lapse. A
 * live holder still refuses; a holder recorded on another boot or in another pid namespace is
 * never released early, though its pid is gone here. On SQLite and on Postgres, with real processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore, type ProcessIdentity, RunBusyError, type Tool } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres.js';
import { SqliteStore } from '../../src/stores/sqlite.js';
import { sequence } from '../support/helpers.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';

const childScript = join(import.meta.dirname, 'dead-holder-child.ts');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A child holding `runId` (its call in flight), once it says so. */
function holding(args: string[], runId: string): Promise<ChildProcess> {
  const c = spawn(process.execPath, ['--import', 'tsx', childScript, ...args, runId], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(c);
  return new Promise((ready, fail) => {
    c.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('holding')) ready(c);
    });
    c.on('exit', (code) => fail(new Error(`the holder exited early (${code})`)));
  });
}

function kill(c: ChildProcess): Promise<void> {
  return new Promise((done) => {
    c.once('exit', () => done());
    c.kill('SIGKILL');
  });
}

const look: Tool = { name: 'look', fn: () => 'found' };
const options = () => ({ policy: sequence({ final: 'looked' }), tools: [look], leaseWaitMs: 0 });

/** A run at rest, for a holder to be recorded on by hand. */
async function atRest(store: CheckpointStore, runId: string): Promise<void> {
  const pay: Tool = { name: 'pay', sideEffect: true, fn: () => 'paid' };
  const agent = new Agent({ runId, store, policy: sequence({ tool: 'pay' }), tools: [pay] });
  expect(await agent.start('pay')).toBe('awaiting_approval');
}

async function deadHolder(store: CheckpointStore, args: string[]): Promise<void> {
  // Alive: refused, and the error names the holder's process, with its token.
  const child = await holding(args, 'r1');
  const busy = await Agent.load(store, 'r1', options()).catch((e: unknown) => e);
  if (!(busy instanceof RunBusyError)) {
    // Seen twice in CI, under load, never alone: say what the store and the child were then.
    const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8').catch((e: unknown) => String(e));
    const shown = busy instanceof Agent ? { status: busy.status, state: busy.state } : busy;
    expect.fail(`the live holder's run was not refused: ${JSON.stringify(shown)}; child stat: ${stat}`);
  }
  const dead = (busy as RunBusyError).holderProcess as ProcessIdentity;
  expect(dead).toMatchObject({ pid: child.pid });
  expect(dead.startTime).toMatch(/^\d+$/);
  const token = (busy as RunBusyError).token as number;
  expect(token).toBeGreaterThan(0);

  // Killed: the next load on this machine takes the run at once, though its 30 s lease is live.
  await kill(child);
  const started = performance.now();
  const taken = await Agent.load(store, 'r1', options());
  const tookMs = performance.now() - started;
  expect(tookMs).toBeLessThan(5_000);
  expect(taken.status).toBe('running');
  expect(await taken.run()).toBe('done');

  // A holder recorded on another boot, or in another pid namespace, is never released early —
  // whatever its pid is here (this one is the dead child's). The same identity as recorded is.
  for (const [runId, other] of [
    ['r2', { bootId: '00000000-0000-4000-8000-000000000000' }],
    ['r3', { pidNamespace: '4026530000' }],
    ['r4', {}],
  ] as const) {
    await atRest(store, runId);
    await store.claim(runId, { owner: 'ghost', leaseMs: 60_000, process: { ...dead, ...other } });
    const loaded = await Agent.load(store, runId, options()).catch((e: unknown) => e);
    if (runId === 'r4') expect((loaded as Agent).status).toBe('awaiting_approval');
    else expect(loaded).toMatchObject({ name: 'RunBusyError', holder: 'ghost' });
  }
}

describe('a holder killed on this machine is released at once', () => {
  it('on SQLite', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'tollgate-dead-holder-')), 'runs.db');
    const store = SqliteStore.open(db);
    try {
      await deadHolder(store, ['sqlite', db]);
    } finally {
      await store.close();
    }
  }, 60_000);

  const schemas: string[] = [];
  afterAll(async () => {
    const { url } = await postgresTarget();
    if (url) for (const s of schemas) await dropSchema(url, s);
  });

  it('on Postgres', async (ctx) => {
    const { url } = await postgresTarget();
    if (!url) return ctx.skip();
    const schema = freshSchema('dead_holder');
    schemas.push(schema);
    const store = new PostgresStore(url, { schema });
    try {
      await deadHolder(store, ['postgres', url, schema]);
    } finally {
      await store.close();
    }
  }, 60_000);
});
