/**
 * Tollgate, as a user embeds it: `new Agent({ policy, tools, maxSteps })`, with no store or with
 * each durable store. "Bytes" are the bytes handed to the store (each save's head plus the new
 * entries, canonical JSON), counted by a wrapper around it; the store's own overhead on disk
 * (pages, WAL frames, indexes) is not included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type CheckpointStore, type Policy, type Tool } from 'tollgate';
import { FileStore } from 'tollgate/file';
import { MemoryStore } from 'tollgate/memory';
import { PostgresStore } from 'tollgate/postgres';
import { SqliteStore } from 'tollgate/sqlite';
import { ANSWER, type CheckpointTimes, type Contestant, nextAction, TOOL, toolResult } from '../workload.js';

/** A store wrapper that counts what is handed to the store and times each save. */
export class CountingStore implements CheckpointStore {
  bytes = 0;
  lastSaveMs = 0;
  constructor(readonly inner: CheckpointStore) {}
  load: CheckpointStore['load'] = (runId) => this.inner.load(runId);
  list: CheckpointStore['list'] = (options) => this.inner.list(options);
  delete: CheckpointStore['delete'] = (runId, v, lease) => this.inner.delete(runId, v, lease);
  claim: CheckpointStore['claim'] = (runId, options) => this.inner.claim(runId, options);
  renew: CheckpointStore['renew'] = (lease, ms) => this.inner.renew(lease, ms);
  release: CheckpointStore['release'] = (lease) => this.inner.release(lease);
  queueDecision: CheckpointStore['queueDecision'] = (runId, decision, v) =>
    this.inner.queueDecision(runId, decision, v);
  claimNext: CheckpointStore['claimNext'] = (options) => this.inner.claimNext(options);
  close: CheckpointStore['close'] = () => this.inner.close();
  save: CheckpointStore['save'] = async (runId, write, expectedVersion, lease) => {
    for (const entry of write.append) this.bytes += entry.length;
    this.bytes += write.head.length;
    const started = performance.now();
    const version = await this.inner.save(runId, write, expectedVersion, lease);
    this.lastSaveMs = performance.now() - started;
    return version;
  };
}

export const tools: Tool[] = [{ name: TOOL, fn: (args) => toolResult((args as { n: number }).n) }];

export function policyFor(steps: number): Policy {
  return (history) => nextAction((history.length - 1) / 2, steps);
}

function check(agent: Agent, steps: number): void {
  if (agent.status !== 'done' || agent.state.answer !== ANSWER || agent.state.steps !== steps + 1) {
    throw new Error(`tollgate: run ended ${agent.status} after ${agent.state.steps} policy calls`);
  }
}

/** Tollgate with no store: the run lives in memory; checkpoints are taken on demand. */
export function tollgate(): Contestant {
  return {
    name: 'tollgate',
    persists: 'nothing (checkpoint() on demand)',
    async run(steps, runId) {
      const agent = new Agent({ runId, policy: policyFor(steps), tools, maxSteps: steps + 1 });
      await agent.start('run the benchmark');
      if (steps <= 100)
        check(agent, steps); // agent.state copies the history: O(N)
      else if (agent.status !== 'done') throw new Error(`tollgate: ${agent.status}`);
      return { bytes: null };
    },
    async checkpoint(steps, runId): Promise<CheckpointTimes> {
      const agent = new Agent({ runId, policy: policyFor(steps), tools, maxSteps: steps + 1 });
      await agent.start('run the benchmark');
      check(agent, steps);
      let t = performance.now();
      const blob = agent.checkpoint();
      const saveMs = performance.now() - t;
      t = performance.now();
      const again = Agent.resume(blob, { policy: policyFor(steps), tools });
      const loadMs = performance.now() - t;
      if (again.status !== 'done') throw new Error('tollgate: resume');
      return { saveMs, loadMs, bytes: blob.length };
    },
  };
}

interface StoreKind {
  name: string;
  persists: string;
  open(): Promise<{ store: CheckpointStore; close(): Promise<void> }>;
}

/** Tollgate saving every change to `kind`'s store, ahead of every tool call. */
export function tollgateWith(kind: StoreKind): Contestant {
  let counting: CountingStore | null = null;
  let close: () => Promise<void> = async () => {};
  const runOnce = async (steps: number, runId: string) => {
    const store = counting as CountingStore;
    const before = store.bytes;
    const agent = new Agent({ runId, policy: policyFor(steps), tools, maxSteps: steps + 1, store });
    await agent.start('run the benchmark');
    if (agent.status !== 'done') throw new Error(`${kind.name}: ${agent.status}`);
    return { agent, bytes: store.bytes - before };
  };
  return {
    name: `tollgate + ${kind.name}`,
    persists: kind.persists,
    async setup() {
      const opened = await kind.open();
      counting = new CountingStore(opened.store);
      close = opened.close;
    },
    run: async (steps, runId) => ({ bytes: (await runOnce(steps, runId)).bytes }),
    async checkpoint(steps, runId): Promise<CheckpointTimes> {
      const store = counting as CountingStore;
      const { agent } = await runOnce(steps, runId);
      check(agent, steps);
      const saveMs = store.lastSaveMs;
      const t = performance.now();
      const again = await Agent.load(store, runId, { policy: policyFor(steps), tools });
      const loadMs = performance.now() - t;
      if (again.status !== 'done') throw new Error(`${kind.name}: load`);
      const record = await store.load(runId);
      const bytes = (record?.head.length ?? 0) + (record?.entries.reduce((n, e) => n + e.length, 0) ?? 0);
      return { saveMs, loadMs, bytes };
    },
    teardown: () => close(),
  };
}

function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function closeAndRemove(store: CheckpointStore, tmp: { remove(): void }): Promise<void> {
  await store.close();
  tmp.remove();
}

export const memoryStore: StoreKind = {
  name: 'memory store',
  persists: 'MemoryStore (serialised, in this process)',
  open: async () => ({ store: new MemoryStore(), close: async () => {} }),
};

/** A store made in a fresh temp dir, removed when it is closed. */
function onDisk(prefix: string, make: (dir: string) => CheckpointStore): StoreKind['open'] {
  return async () => {
    const tmp = tempDir(prefix);
    const store = make(tmp.dir);
    return { store, close: () => closeAndRemove(store, tmp) };
  };
}

export const fileStore: StoreKind = {
  name: 'file store',
  persists: 'FileStore on disk (append + fsync, head rename)',
  open: onDisk('tollgate-bench-file-', (dir) => new FileStore({ dir })),
};

export const sqliteStore: StoreKind = {
  name: 'SQLite',
  persists: 'SqliteStore on disk (WAL, synchronous=FULL)',
  open: onDisk('tollgate-bench-sqlite-', (dir) => new SqliteStore({ path: join(dir, 'bench.db') })),
};

/** WAL with synchronous=NORMAL: commits survive a process crash, not a power cut (no fsync per commit). */
export const sqliteNormalStore: StoreKind = {
  name: 'SQLite (synchronous=NORMAL)',
  persists: 'SqliteStore on disk (WAL, synchronous=NORMAL: survives a process crash, not a power cut)',
  open: onDisk(
    'tollgate-bench-sqlite-normal-',
    (dir) => new SqliteStore({ path: join(dir, 'bench.db'), synchronous: 'NORMAL' }),
  ),
};

export const PG_URL = process.env.TOLLGATE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const postgresStore: StoreKind = {
  name: 'Postgres',
  persists: `PostgresStore (${PG_URL.replace(/\/\/[^@]*@/, '//')})`,
  async open() {
    const schema = `tollgate_bench_${process.pid}`;
    const store = new PostgresStore(PG_URL, { schema, connectTimeoutMs: 3000 });
    await store.list({ limit: 1 }); // connects and migrates, or throws StoreUnavailableError
    const pg = (await import('pg')).default;
    return {
      store,
      async close() {
        await store.close();
        const client = new pg.Client(PG_URL);
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      },
    };
  },
};
