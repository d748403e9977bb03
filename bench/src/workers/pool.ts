/**
 * A pool of worker processes on Postgres (issue: leases and workers): throughput of K processes,
 * time from a recorded decision to the approved tool call, and time to take over the run of a
 * worker killed with SIGKILL. Each measurement gets a schema of its own, dropped at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { PostgresStore } from 'tollgate/postgres';
import { recordDecision, submitRun } from 'tollgate/worker';
import { PG_URL } from '../contestants/tollgate.js';
import { type Summary, summarise } from '../stats.js';
import { benchAgents, STEPS, TOOL_MS } from './agents.js';

const CHILD = new URL('./child.ts', import.meta.url).pathname;
const BENCH = new URL('../..', import.meta.url).pathname; // where `--import tsx` resolves
const wall = () => performance.timeOrigin + performance.now();
const agents = benchAgents();
const agent = (name: string) => agents.find((a) => a.name === name) as (typeof agents)[number];

export interface PoolPlan {
  processes: number[];
  runs: number;
  concurrency: number;
  decisions: number;
  takeovers: number;
  leaseMs: number;
}

export interface PoolResult {
  plan: PoolPlan;
  throughput: { processes: number; totalMs: number; runsPerS: number; stepsPerS: number }[];
  recordMs: Summary;
  decisionToCallMs: Summary;
  takeoverMs: Summary;
}

/** A worker process, its stdout read line by line. */
class Child {
  readonly lines: string[] = [];
  private waiters: { test: (line: string) => boolean; done: (line: string) => void }[] = [];
  private readonly listeners = new Set<(line: string) => void>();
  private readonly process: ChildProcess;
  readonly exited: Promise<void>;

  constructor(schema: string, concurrency: number, leaseMs: number, hangMs: number) {
    this.process = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, schema, String(concurrency), String(leaseMs), String(hangMs)],
      { cwd: BENCH, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    this.exited = new Promise((done) => this.process.once('exit', () => done()));
    createInterface({ input: this.process.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      this.lines.push(line);
      if (line.startsWith('error ')) console.error(`  worker ${this.process.pid}: ${line}`);
      for (const listener of this.listeners) listener(line);
      for (const w of this.waiters.filter((w) => w.test(line))) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.done(line);
      }
    });
  }

  /** The first line (already read or to come) that passes `test`. */
  next(test: (line: string) => boolean, what: string, timeoutMs = 120_000): Promise<string> {
    const seen = this.lines.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`pool bench: timed out waiting for ${what}`)), timeoutMs);
      this.waiters.push({
        test,
        done: (line) => {
          clearTimeout(timer);
          done(line);
        },
      });
    });
  }

  /** Every line from now on, until the returned function is called. */
  onLine(listener: (line: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  go(): void {
    this.process.stdin?.write('go\n');
  }

  kill(): void {
    this.process.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    this.process.stdin?.end();
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

async function withSchema<T>(label: string, work: (store: PostgresStore, schema: string) => Promise<T>): Promise<T> {
  const schema = `tollgate_pool_${label}_${process.pid}`;
  const store = new PostgresStore(PG_URL, { schema, connectTimeoutMs: 5_000 });
  await store.list({ limit: 1 }); // migrate once, before the workers race to
  try {
    return await work(store, schema);
  } finally {
    await store.close();
    const client = new pg.Client(PG_URL);
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}

async function startChildren(schema: string, n: number, concurrency: number, leaseMs: number, hangMs = 0) {
  const children = Array.from({ length: n }, () => new Child(schema, concurrency, leaseMs, hangMs));
  await Promise.all(children.map((c) => c.next((l) => l === 'ready', 'a worker to start')));
  return children;
}

/** `runs` runs of the `steps` agent submitted, then K workers told to go; until the last is done. */
async function throughput(plan: PoolPlan, k: number) {
  return withSchema(`k${k}`, async (store, schema) => {
    for (let i = 0; i < plan.runs; i++) await submitRun(store, { agent: agent('steps'), goal: 'work', runId: `r${i}` });
    const children = await startChildren(schema, k, plan.concurrency, plan.leaseMs);
    try {
      let settled = 0;
      const stops: (() => void)[] = [];
      const all = new Promise<void>((done, fail) => {
        for (const c of children) {
          stops.push(
            c.onLine((line) => {
              if (!line.startsWith('settled ')) return;
              if (!line.endsWith(' done')) fail(new Error(`pool bench: ${line}`));
              if (++settled === plan.runs) done();
            }),
          );
        }
      });
      const t = performance.now();
      for (const c of children) c.go();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        all,
        new Promise((_, fail) => {
          timer = setTimeout(() => fail(new Error(`pool bench: ${settled} of ${plan.runs} runs in 10 min`)), 600_000);
        }),
      ]).finally(() => clearTimeout(timer));
      const totalMs = performance.now() - t;
      for (const stop of stops) stop();
      return {
        processes: k,
        totalMs,
        runsPerS: plan.runs / (totalMs / 1000),
        stepsPerS: (plan.runs * STEPS) / (totalMs / 1000),
      };
    } finally {
      await Promise.all(children.map((c) => c.stop()));
    }
  });
}

/** One worker holds runs paused for approval; each decision is recorded, then its call awaited. */
async function decisions(plan: PoolPlan) {
  return withSchema('decide', async (store, schema) => {
    const [worker] = await startChildren(schema, 1, plan.concurrency, plan.leaseMs);
    if (!worker) throw new Error('pool bench: no worker');
    const record: number[] = [];
    const toCall: number[] = [];
    try {
      worker.go();
      for (let i = 0; i < plan.decisions; i++) {
        const runId = `d${i}`;
        await submitRun(store, { agent: agent('payer'), goal: 'pay', runId });
        await worker.next((l) => l === `settled ${runId} awaiting_approval`, 'the approval');
        const callId = (await store.load(runId))?.pendingCalls[0]?.id ?? '';
        const t0 = performance.now();
        await recordDecision(store, runId, { [callId]: { approve: true } }, { by: 'bench', agent: agent('payer') });
        const recordedAt = wall();
        record.push(performance.now() - t0);
        const line = await worker.next((l) => l.startsWith(`call pay ${runId}:`), 'the approved call');
        toCall.push(Number(line.split(' ')[3]) - recordedAt);
        await worker.next((l) => l === `settled ${runId} done`, 'the end of the run');
      }
    } finally {
      await worker.stop();
    }
    return { recordMs: summarise(record), decisionToCallMs: summarise(toCall) };
  });
}

/** A worker is killed with SIGKILL during a call; another, already running, takes the run over. */
async function takeovers(plan: PoolPlan) {
  const samples: number[] = [];
  for (let i = 0; i < plan.takeovers; i++) {
    samples.push(
      await withSchema(`take${i}`, async (store, schema) => {
        const [victim] = await startChildren(schema, 1, 1, plan.leaseMs, 600_000);
        if (!victim) throw new Error('pool bench: no worker');
        victim.go();
        await submitRun(store, { agent: agent('fetcher'), goal: 'fetch', runId: 't' });
        await victim.next((l) => l.startsWith('call fetch t:'), 'the call');
        const [survivor] = await startChildren(schema, 1, 1, plan.leaseMs);
        if (!survivor) throw new Error('pool bench: no worker');
        try {
          survivor.go();
          // Kill mid-lease, as a crash would come: a random point of the renewal cycle.
          await new Promise((r) => setTimeout(r, Math.random() * plan.leaseMs * 0.5));
          const killedAt = wall();
          victim.kill();
          await victim.exited;
          const line = await survivor.next((l) => l.startsWith('call fetch t:'), 'the take-over', plan.leaseMs * 10);
          await survivor.next((l) => l === 'settled t done', 'the end of the run');
          return Number(line.split(' ')[3]) - killedAt;
        } finally {
          await survivor.stop();
        }
      }),
    );
  }
  return summarise(samples);
}

export async function measurePool(plan: PoolPlan, log: (line: string) => void): Promise<PoolResult> {
  const rows: PoolResult['throughput'] = [];
  for (const k of plan.processes) {
    const row = await throughput(plan, k);
    rows.push(row);
    log(
      `  ${k} worker process(es) × concurrency ${plan.concurrency}: ${plan.runs} runs × ${STEPS} steps (${TOOL_MS} ms tool) in ${(row.totalMs / 1000).toFixed(2)} s, ${row.runsPerS.toFixed(0)} runs/s`,
    );
  }
  const { recordMs, decisionToCallMs } = await decisions(plan);
  log(`  recorded decision → tool call: median ${decisionToCallMs.median.toFixed(2)} ms (n ${decisionToCallMs.n})`);
  const takeoverMs = await takeovers(plan);
  log(`  take-over after SIGKILL (leaseMs ${plan.leaseMs}): median ${takeoverMs.median.toFixed(0)} ms`);
  return { plan, throughput: rows, recordMs, decisionToCallMs, takeoverMs };
}
