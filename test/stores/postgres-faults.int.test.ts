// PostgresStore under network faults: the real server at TOLLGATE_PG_URL behind a TCP proxy
// (./tcp-proxy.ts) that cuts connections and black-holes them. Each store gets short timeouts,
// so every wait here is a real socket timeout of at most a second; the upper bounds checked (3 s)
// leave room for a loaded machine while still telling a timeout from the 20 s+ hangs they replace.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Agent, RunBusyError, type RunWrite, StoreUnavailableError } from '../../src/index.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/stores/postgres.js';
import { recorder, sequence } from '../support/helpers.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';
import { TcpProxy } from './tcp-proxy.js';

const target = await postgresTarget();
const url = target.url ?? '';
const schemas: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

const write = (from: number, append: string[] = [], status: RunWrite['status'] = 'running'): RunWrite => ({
  status,
  head: '{"head":true}',
  from,
  append,
  pendingCalls: [],
});

/** A store in a fresh schema, reached through a fresh proxy, with short timeouts. */
async function faultyStore(options: PostgresStoreOptions = {}) {
  const server = new URL(url);
  const proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port || 5432) });
  const schema = freshSchema('faults');
  schemas.push(schema);
  const app = `tollgate_${schema.slice(-10)}`;
  const through = new URL(proxy.urlFor(url));
  through.searchParams.set('application_name', app);
  const store = new PostgresStore(through.toString(), {
    schema,
    connectTimeoutMs: 500,
    statementTimeoutMs: 5_000,
    queryTimeoutMs: 800,
    ...options,
  });
  cleanups.push(
    () => store.close(),
    () => proxy.close(),
  );
  return { store, proxy, schema, app };
}

/** A direct connection to the server (no proxy), for locks and for reading the truth. */
async function admin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanups.push(() => client.end());
  return client;
}

/** Polls the server until `sql` returns a row (a state to reach, not a deadline to sleep through). */
async function untilRow(client: pg.Client, sql: string, values: unknown[]): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await client.query(sql, values)).rowCount) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never true: ${sql}`);
}

const waitingOnLock = `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`;
/** A run's save statement: it writes the runs table (a lease claim or renewal writes only leases). */
const isSave = (chunk: Buffer) => chunk.includes('.runs (') || (chunk.includes('UPDATE "') && chunk.includes('.runs'));

/** Polls `done` (a listener's call arrives after a commit, over the network); 5 s at most. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(done()).toBe(true);
}

/** How long `promise` takes to settle, and its rejection. */
async function timed(promise: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = Date.now();
  const error = await promise.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  return { ms: Date.now() - started, error };
}

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

afterAll(async () => {
  if (target.url) for (const schema of schemas) await dropSchema(url, schema);
});

describe.skipIf(!target.url)(
  `PostgresStore under faults ${target.skipReason ? `(skipped: ${target.skipReason})` : ''}`,
  () => {
    it('a connection cut as a save goes out: StoreUnavailableError, no crash, the run unchanged, the next save works', async () => {
      const { store, proxy } = await faultyStore();
      expect(await store.save('r', write(0, ['"a"']), 0)).toBe(1);
      proxy.onClientBytes = (chunk) => (isSave(chunk) ? 'cut' : 'forward');
      const { ms, error } = await timed(store.save('r', write(1, ['"b"']), 1));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^PostgresStore\.save: lost the connection to postgres:\/\/.*\(Connection terminated unexpectedly\); the write may or may not have been committed: load the run/,
      );
      expect(ms).toBeLessThan(3_000);
      proxy.heal();
      const run = await store.load('r');
      expect(run).toMatchObject({ version: 1, entries: ['"a"'] });
      expect(await store.save('r', write(1, ['"b"']), 1)).toBe(2);
    });

    it('a pool of your own: a cut mid-save is a StoreUnavailableError too, and the query timeout bounds it', async () => {
      const { proxy } = await faultyStore();
      const pool = new pg.Pool({ connectionString: proxy.urlFor(url), max: 2 });
      pool.on('error', () => {}); // idle connections are the pool owner's to listen to
      cleanups.push(() => pool.end());
      const schema = freshSchema('own_pool');
      schemas.push(schema);
      const store = new PostgresStore(pool, { schema, queryTimeoutMs: 600 });
      await store.save('r', write(0), 0);
      proxy.onClientBytes = (chunk) => (isSave(chunk) ? 'forward-then-cut' : 'forward');
      const cut = await timed(store.save('r', write(0, ['"b"']), 1));
      expect(cut.error).toBeInstanceOf(StoreUnavailableError);
      expect((cut.error as Error).message).toMatch(/^PostgresStore\.save: lost the connection to the given pool/);
      proxy.heal();
      const version = (await store.load('r'))?.version as number;
      proxy.onClientBytes = (chunk) => (isSave(chunk) ? 'stall' : 'forward');
      const stalled = await timed(store.save('r', write(version === 2 ? 1 : 0), version));
      expect(stalled.error).toBeInstanceOf(StoreUnavailableError);
      expect((stalled.error as Error).message).toMatch(/did not answer within queryTimeoutMs \(600 ms\)/);
      expect(stalled.ms).toBeLessThan(3_000);
      await store.close();
    });

    it('a connection cut while the save waits on the server: typed error at once; the statement may still commit — a reload reads the truth', async () => {
      const { store, proxy, schema, app } = await faultyStore();
      await store.save('r', write(0), 0);
      const lock = await admin();
      await lock.query('BEGIN');
      await lock.query(`SELECT 1 FROM "${schema}".runs WHERE run_id = 'r' FOR UPDATE`);
      const saving = timed(store.save('r', write(0, ['"late"'], 'done'), 1));
      await untilRow(lock, waitingOnLock, [app]);
      proxy.cut();
      const { ms, error } = await saving;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/may or may not have been committed/);
      expect(ms).toBeLessThan(3_000);
      // The server still holds the statement; once the lock goes, it commits, client or no client
      // (unless client_connection_check_interval makes it look for the client while it waits).
      const checks = (await lock.query('SHOW client_connection_check_interval')).rows[0]
        .client_connection_check_interval;
      await lock.query('ROLLBACK');
      await untilRow(lock, 'SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1)', [
        app,
      ]);
      const truth = await store.load('r');
      if (checks === '0') expect(truth).toMatchObject({ version: 2, status: 'done', entries: ['"late"'] });
      else expect(truth?.version).toBeOneOf([1, 2]);
    });

    it('a process whose connection is cut mid-query lives on: typed error, exit code 0', async () => {
      const server = new URL(url);
      const script = `
      const { TcpProxy } = await import(${JSON.stringify(join(import.meta.dirname, 'tcp-proxy.ts'))});
      const { PostgresStore } = await import(${JSON.stringify(join(import.meta.dirname, '../../src/stores/postgres.ts'))});
      const proxy = await TcpProxy.start({ host: ${JSON.stringify(server.hostname)}, port: ${Number(server.port || 5432)} });
      const schema = ${JSON.stringify(freshSchema('child'))};
      const store = new PostgresStore(proxy.urlFor(${JSON.stringify(url)}), { schema, queryTimeoutMs: 2000 });
      const w = { status: 'running', head: '{}', from: 0, append: [], pendingCalls: [] };
      await store.save('r', w, 0);
      proxy.onClientBytes = (chunk) => (chunk.includes('UPDATE "') ? 'forward-then-cut' : 'forward');
      const error = await store.save('r', w, 1).catch((e) => e);
      // Let any stray 'error' event fire before saying we survived.
      await new Promise((resolve) => setTimeout(resolve, 100));
      process.stdout.write(JSON.stringify({ name: error?.name }));
      proxy.heal();
      const pg = (await import('pg')).default;
      const admin = new pg.Client(${JSON.stringify(url)});
      await admin.connect();
      await admin.query('DROP SCHEMA "' + schema + '" CASCADE');
      await admin.end();
      await store.close();
      await proxy.close();`;
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        stdio: 'pipe',
      });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect(err).not.toMatch(/Unhandled 'error' event/);
      expect({ code, out }).toEqual({ code: 0, out: JSON.stringify({ name: 'StoreUnavailableError' }) });
    }, 20_000);

    it('a statement stuck behind a lock is cancelled by the server after statementTimeoutMs: nothing written, the connection kept', async () => {
      const { store, proxy, schema } = await faultyStore({ statementTimeoutMs: 300, queryTimeoutMs: 3_000 });
      await store.save('r', write(0, ['"a"']), 0);
      const connections = proxy.accepted;
      const lock = await admin();
      await lock.query('BEGIN');
      await lock.query(`SELECT 1 FROM "${schema}".runs WHERE run_id = 'r' FOR UPDATE`);
      const { ms, error } = await timed(store.save('r', write(1, ['"b"']), 1));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^PostgresStore\.save: postgres:\/\/.* cancelled the statement \(statementTimeoutMs is 300 ms\); nothing was written$/,
      );
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(3_000);
      await lock.query('ROLLBACK');
      expect(await store.load('r')).toMatchObject({ version: 1, entries: ['"a"'] });
      expect(await store.save('r', write(1, ['"b"']), 1)).toBe(2);
      expect(proxy.accepted).toBe(connections); // the server's own cancel leaves the connection usable
    });

    it('a black-holed connection mid-save: StoreUnavailableError within queryTimeoutMs, the run unchanged, saving resumes once healed', async () => {
      const { store, proxy } = await faultyStore();
      await store.save('r', write(0, ['"a"']), 0);
      proxy.onClientBytes = (chunk) => (isSave(chunk) ? 'stall' : 'forward');
      const { ms, error } = await timed(store.save('r', write(1, ['"b"']), 1));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(
        /^PostgresStore\.save: postgres:\/\/.* did not answer within queryTimeoutMs \(800 ms\); the connection was dropped; the write may or may not have been committed/,
      );
      expect(ms).toBeGreaterThanOrEqual(750);
      expect(ms).toBeLessThan(3_000);
      proxy.heal();
      expect(await store.load('r')).toMatchObject({ version: 1, entries: ['"a"'] });
      expect(await store.save('r', write(1, ['"b"']), 1)).toBe(2);
    });

    it('a server that never answers a new connection: start() rejects within connectTimeoutMs instead of hanging', async () => {
      const { store, proxy } = await faultyStore();
      proxy.stall();
      const mail = recorder('mail', { sideEffect: true });
      const agent = new Agent({
        runId: 'r',
        store,
        policy: sequence({ tool: 'mail' }, { final: 'ok' }),
        tools: [mail.tool],
      });
      const { ms, error } = await timed(agent.start('go'));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/^PostgresStore\.(save|migrate|claim): cannot connect to postgres:\/\//);
      expect(ms).toBeLessThan(3_000);
      expect(mail.calls).toEqual([]);
    });

    it('an Agent whose store stops answering mid-run: start() rejects with the typed error, later calls fail, a reload reads the truth', async () => {
      const { store, proxy } = await faultyStore();
      await store.migrate();
      const mail = recorder('mail', { sideEffect: true });
      const tools = [mail.tool, recorder('look').tool];
      // The second save (after the policy's first answer) is black-holed.
      let saves = 0;
      proxy.onClientBytes = (chunk) => (isSave(chunk) && ++saves === 2 ? 'stall' : 'forward');
      const agent = new Agent({
        runId: 'r',
        store,
        policy: sequence({ tool: 'look' }, { tool: 'mail' }, { final: 'ok' }),
        tools,
        leaseMs: 4_000,
      });
      const { ms, error } = await timed(agent.start('go'));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(ms).toBeLessThan(3_000);
      proxy.heal();
      // This Agent object is done for: it cannot know what the store holds.
      await expect(agent.run()).rejects.toBeInstanceOf(StoreUnavailableError);
      const stored = await store.load('r');
      expect(stored?.version).toBe(1);
      // Its release went into the black hole too: the run stays held until the lease lapses.
      const load = (leaseWaitMs?: number) =>
        Agent.load(store, 'r', {
          policy: sequence({ tool: 'mail' }, { final: 'ok' }),
          tools,
          ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
        });
      await expect(load()).rejects.toBeInstanceOf(RunBusyError);
      const again = await load(6_000);
      expect(await again.run()).toBe('awaiting_approval');
      expect(mail.calls).toEqual([]);
    });

    it('close() does not hang on a black-holed connection', async () => {
      const { store, proxy } = await faultyStore();
      await store.save('r', write(0), 0);
      proxy.stall();
      await expect(store.load('r')).rejects.toBeInstanceOf(StoreUnavailableError);
      const started = Date.now();
      await store.close();
      expect(Date.now() - started).toBeLessThan(3_000);
      await expect(store.load('r')).rejects.toThrow(/^PostgresStore\.load: the store is closed$/);
    });

    it('watch: a listening connection cut by the network is made again, and the listeners are called once (they may have missed a notification); later notifications arrive', async () => {
      const { store, proxy, schema } = await faultyStore();
      let calls = 0;
      const stop = await store.watch(() => {
        calls++;
      });
      const other = new PostgresStore(url, { schema });
      cleanups.push(() => other.close());
      await other.save('r', { ...write(0), status: 'awaiting_approval', agent: 'refunds' }, 0);
      await until(() => calls === 1);
      proxy.cut(); // the listening connection is gone; the store makes another after a pause
      await until(() => calls === 2);
      await other.queueDecision(
        'r',
        { decisions: { 'r:1#1': { approve: true } }, by: 'a', at: new Date().toISOString() },
        1,
      );
      await until(() => calls === 3);
      await stop();
    }, 15_000);
  },
);
