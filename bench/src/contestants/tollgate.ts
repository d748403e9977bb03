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
import { ANSWER, type CheckpointTimes, type Contestant, nextAction, TOOL, timeLoads, toolResult } from '../workload.js';

/** A store wrapper that counts what is handed to the store and times each save. */
export class CountingStore implements CheckpointStore {
  bytes = 0;
  /** Of `bytes`, those of the heads (the rest are entries). */
  headBytes = 0;
  saves = 0;
  lastSaveMs = 0;
  /** Forwarded: with it, agents write head deltas and now and then a base (counted with the heads). */
  readonly keepsBase: boolean | undefined;
  constructor(readonly inner: CheckpointStore) {
    this.keepsBase = inner.keepsBase;
    // Forwarded only if the store has it: with it, Agent.load reads an ended run without a claim.
    const summary = inner.summary;
    if (summary) this.summary = (runId) => summary.call(inner, runId);
  }
  summary?: CheckpointStore['summary'];
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
    const head = write.head.length + (write.base?.length ?? 0);
    this.bytes += head;
    this.headBytes += head;
    this.saves++;
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

/** The policy, counting its calls: a check of a run that copies nothing (`agent.state` copies the history). */
function countedPolicy(steps: number): { policy: Policy; calls: () => number } {
  let calls = 0;
  return {
    policy: (history) => {
      calls++;
      return nextAction((history.length - 1) / 2, steps);
    },
    calls: () => calls,
  };
}

/** The cheap check, inside the timed run: done, after steps + 1 policy calls (the last one answers). */
function checkCheaply(name: string, agent: Agent, steps: number, calls: number): void {
  if (agent.status !== 'done' || calls !== steps + 1) {
    throw new Error(`${name}: run ended ${agent.status} after ${calls} policy calls`);
  }
}

/** The full check (reads `agent.state`, a copy of the whole run): outside the timed runs. */
function check(agent: Agent, steps: number): void {
  const state = agent.state;
  if (agent.status !== 'done' || state.answer !== ANSWER || state.steps !== steps + 1) {
    throw new Error(`tollgate: run ended ${agent.status} after ${state.steps} policy calls`);
  }
  if (state.history.length !== 2 * steps + 2) throw new Error(`tollgate: ${state.history.length} entries`);
}

/** Tollgate with no store: the run lives in memory; checkpoints are taken on demand. */
export function tollgate(): Contestant {
  const runOnce = async (steps: number, runId: string) => {
    const { policy, calls } = countedPolicy(steps);
    const agent = new Agent({ runId, policy, tools, maxSteps: steps + 1 });
    await agent.start('run the benchmark');
    checkCheaply('tollgate', agent, steps, calls());
    return agent;
  };
  return {
    name: 'tollgate',
    persists: 'nothing (checkpoint() on demand)',
    async setup() {
      check(await runOnce(10, `setup-${process.pid}`), 10); // the full check, once, untimed
    },
    async run(steps, runId) {
      await runOnce(steps, runId);
      return { bytes: null };
    },
    async checkpoint(steps, runId): Promise<CheckpointTimes> {
      const agent = await runOnce(steps, runId);
      check(agent, steps);
      const t = performance.now();
      const blob = agent.checkpoint();
      const saveMs = performance.now() - t;
      const loadMs = await timeLoads(
        () => Agent.resume(blob, { policy: policyFor(steps), tools }),
        (again) => {
          if (again.status !== 'done') throw new Error('tollgate: resume');
        },
      );
      return { saveMs, loadMs, bytes: blob.length };
    },
  };
}

/** What the store was handed per step and per save, over the last timed sample's runs (by contestant). */
export interface SaveStats {
  savesPerStep: number;
  headBytesPerSave: number;
  entryBytesPerStep: number;
}
export const saveStats = new Map<string, Map<number, SaveStats>>();

interface StoreKind {
  name: string;
  persists: string;
  open(): Promise<{ store: CheckpointStore; close(): Promise<void> }>;
  /**
   * The store keeps its runs in this process's heap: each timed run is deleted once done (a Map
   * delete, microseconds), or the runs of every sample would pile up in the heap whose garbage
   * collection every contestant measured after it pays for.
   */
  inProcess?: true;
}

/** Tollgate saving every change to `kind`'s store (`durability: 'full'`, the default, or `'points'`). */
export function tollgateWith(kind: StoreKind, durability: 'full' | 'points' = 'full'): Contestant {
  const name = durability === 'full' ? `tollgate + ${kind.name}` : `tollgate + ${kind.name} (durability points)`;
  let counting: CountingStore | null = null;
  let close: () => Promise<void> = async () => {};
  const runOnce = async (steps: number, runId: string) => {
    const store = counting as CountingStore;
    const before = { bytes: store.bytes, head: store.headBytes, saves: store.saves };
    const { policy, calls } = countedPolicy(steps);
    const agent = new Agent({
      runId,
      policy,
      tools,
      maxSteps: steps + 1,
      store,
      ...(durability === 'points' ? { durability } : {}),
    });
    await agent.start('run the benchmark');
    checkCheaply(name, agent, steps, calls());
    const bytes = store.bytes - before.bytes;
    const saves = store.saves - before.saves;
    const head = store.headBytes - before.head;
    const stats = saveStats.get(name) ?? new Map<number, SaveStats>();
    stats.set(steps, {
      savesPerStep: saves / steps,
      headBytesPerSave: saves === 0 ? 0 : head / saves,
      entryBytesPerStep: (bytes - head) / steps,
    });
    saveStats.set(name, stats);
    return { agent, bytes };
  };
  return {
    name,
    persists:
      durability === 'full'
        ? kind.persists
        : `${kind.persists}; durability: 'points' (only the saves guarding an effect, a pause or the end are durable)`,
    async setup() {
      const opened = await kind.open();
      counting = new CountingStore(opened.store);
      close = opened.close;
      // The full check, once, untimed (a run id of its own: two contestants may share a store).
      check((await runOnce(10, `setup-${name.replace(/[^a-z0-9]+/gi, '-')}-${process.pid}`)).agent, 10);
    },
    async run(steps, runId) {
      const { agent, bytes } = await runOnce(steps, runId);
      if (kind.inProcess) await (counting as CountingStore).delete(runId, agent.version ?? undefined);
      return { bytes };
    },
    async checkpoint(steps, runId): Promise<CheckpointTimes> {
      const store = counting as CountingStore;
      const { agent } = await runOnce(steps, runId);
      check(agent, steps);
      const saveMs = store.lastSaveMs;
      const loadMs = await timeLoads(
        () => Agent.load(store, runId, { policy: policyFor(steps), tools }),
        (again) => {
          if (again.status !== 'done') throw new Error(`${name}: load`);
        },
      );
      const record = await store.load(runId);
      const heads = (record?.head.length ?? 0) + (record?.base?.length ?? 0);
      const bytes = heads + (record?.entries.reduce((n, e) => n + e.length, 0) ?? 0);
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
  inProcess: true,
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

let schemas = 0;

export const postgresStore: StoreKind = {
  name: 'Postgres',
  persists: `PostgresStore (${PG_URL.replace(/\/\/[^@]*@/, '//')})`,
  async open() {
    const schema = `tollgate_bench_${process.pid}_${++schemas}`; // one per contestant: each drops its own
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
