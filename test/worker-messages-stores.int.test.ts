/**
 * `submitMessage` on the stores users deploy: SQLite and Postgres. The next message of a run that
 * answered is saved for a worker, which answers it; a run another owner holds is refused with
 * RunBusyError and left exactly as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type CheckpointStore, defineAgent, type Policy, RunBusyError } from '../src/index.js';
import { PostgresStore } from '../src/stores/postgres.js';
import { SqliteStore } from '../src/stores/sqlite.js';
import { checkInvariants } from '../src/testing/index.js';
import { submitMessage, submitRun, Worker } from '../src/worker/index.js';
import { dropSchema, freshSchema, postgresTarget } from './support/postgres.js';

const target = await postgresTarget();
const root = mkdtempSync(join(tmpdir(), 'tollgate-messages-'));
const closing: { close(): Promise<unknown> | unknown }[] = [];
const schemas: string[] = [];

afterAll(async () => {
  for (const c of closing) await c.close();
  if (target.url) for (const schema of schemas) await dropSchema(target.url, schema);
  rmSync(root, { recursive: true, force: true });
});

const policy: Policy = (history) => {
  const last = history.at(-1);
  return last?.role === 'user' ? { tool: 'lookup', args: { q: last.content } } : { final: 'answered' };
};
const desk = defineAgent({
  name: 'desk',
  policy,
  tools: [{ name: 'lookup', fn: ({ q }: { q: string }) => `found ${q}` }],
  maxSteps: 20,
});

const stores: [string, () => CheckpointStore | null][] = [
  ['SQLite', () => new SqliteStore({ path: join(root, `${Math.random().toString(36).slice(2)}.db`) })],
  [
    `Postgres${target.skipReason ? ` (skipped: ${target.skipReason})` : ''}`,
    () => {
      if (!target.url) return null;
      const schema = freshSchema('messages');
      schemas.push(schema);
      return new PostgresStore(target.url, { schema });
    },
  ],
];

describe.each(stores)('submitMessage on %s', (_name, make) => {
  const open = () => {
    const store = make();
    if (store) closing.unshift(store);
    return store;
  };

  it('saves the next message; a worker answers the new turn', async (t) => {
    const store = open();
    if (!store) return t.skip();
    await submitRun(store, { agent: desk, goal: 'first', runId: 'c' });
    expect(await new Worker({ store, agents: [desk] }).drain()).toBe(1);
    expect(await submitMessage(store, { agent: desk, runId: 'c', message: 'second' })).toBe('running');
    expect(await store.load('c')).toMatchObject({ status: 'running', agent: 'desk' });
    // A worker at work picks it up (a drain right after may find the run released a moment ago
    // not yet claimable on Postgres; the loop polls).
    const worker = new Worker({ store, agents: [desk], pollMs: 20 });
    await worker.start();
    try {
      for (let i = 0; i < 500 && (await store.load('c'))?.status !== 'done'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      await worker.stop();
    }
    const run = await Agent.load(store, 'c', { policy, tools: desk.tools });
    expect(run.status).toBe('done');
    expect(run.state.history.filter((e) => e.role === 'user').map((e) => e.content)).toEqual(['first', 'second']);
    expect(await checkInvariants(run)).toEqual([]);
  });

  it('refuses a run another owner holds with RunBusyError, and changes nothing', async (t) => {
    const store = open();
    if (!store) return t.skip();
    await submitRun(store, { agent: desk, goal: 'first', runId: 'h' });
    expect(await new Worker({ store, agents: [desk] }).drain()).toBe(1);
    const before = await store.load('h');
    const lease = await store.claim('h', { owner: 'someone-else', leaseMs: 60_000 });
    const refused = await submitMessage(store, { agent: desk, runId: 'h', message: 'second' }).catch((e) => e);
    expect(refused).toBeInstanceOf(RunBusyError);
    expect(refused).toMatchObject({ holder: 'someone-else' });
    const after = await store.load('h');
    expect({ version: after?.version, status: after?.status, entries: after?.entries }).toEqual({
      version: before?.version,
      status: 'done',
      entries: before?.entries,
    });
    await store.release(lease);
  });
});
