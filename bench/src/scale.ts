/**
 * Tollgate at scale: `decide()` on a run whose history is 1 MB, many runs at once, and many
 * runs paused for approval (which should live in the store, not in the process).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type Policy, type Tool } from 'tollgate';
import { SqliteStore } from 'tollgate/sqlite';
import { collect, heapUsed, peakHeap, type Summary, summarise } from './stats.js';
import type { Contestant } from './workload.js';

const PAGE = 'p'.repeat(4000);

/** Reads ~4 KB pages until the history is over `bytes`, then asks to pay (needs approval). */
function bigRun(bytes: number): { policy: Policy; tools: Tool[]; steps: number } {
  const steps = Math.ceil(bytes / 4100) + 1;
  const policy: Policy = (history) => {
    const calls = (history.length - 1) / 2;
    if (calls < steps - 1) return { tool: 'read', args: { page: calls } };
    if (calls === steps - 1) return { tool: 'pay', args: { cents: 100 } };
    return { final: 'paid' };
  };
  const tools: Tool[] = [
    { name: 'read', fn: (args) => ({ page: (args as { page: number }).page, text: PAGE }) },
    { name: 'pay', sideEffect: true, fn: () => ({ ok: true }) },
  ];
  return { policy, tools, steps };
}

export interface DecideResult {
  historyBytes: number;
  memory: Summary;
  sqlite: Summary;
}

/** `decide(true)` on a paused run with a 1 MB history: runs the call, asks the policy, done. */
export async function measureDecide(samples: number, log: (line: string) => void): Promise<DecideResult> {
  const { policy, tools, steps } = bigRun(1024 * 1024);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-decide-'));
  const store = new SqliteStore({ path: join(dir, 'decide.db') });
  const memory: number[] = [];
  const sqlite: number[] = [];
  let historyBytes = 0;
  try {
    for (let i = 0; i <= samples; i++) {
      for (const withStore of [false, true]) {
        const agent = new Agent({ policy, tools, maxSteps: steps + 2, ...(withStore ? { store } : {}) });
        if ((await agent.start('pay after reading')) !== 'awaiting_approval') throw new Error('decide: not paused');
        historyBytes = JSON.stringify(agent.state.history).length;
        collect();
        const t = performance.now();
        const status = await agent.decide(true, 'ok');
        const ms = performance.now() - t;
        if (status !== 'done') throw new Error(`decide: ${status}`);
        if (i > 0) (withStore ? sqlite : memory).push(ms); // the first round warms up
      }
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const result = { historyBytes, memory: summarise(memory), sqlite: summarise(sqlite) };
  log(
    `  decide on ${(historyBytes / 1e6).toFixed(2)} MB: ${result.memory.median.toFixed(2)} ms, SQLite ${result.sqlite.median.toFixed(2)} ms`,
  );
  return result;
}

export interface ConcurrentResult {
  runs: number;
  steps: number;
  totalMs: number;
  peakHeapBytes: number;
}

/** `runs` runs of `steps` steps started at once, per contestant. */
export async function measureConcurrent(
  contestants: Contestant[],
  runs: number,
  steps: number,
  log: (line: string) => void,
): Promise<Map<string, ConcurrentResult | { error: string }>> {
  const out = new Map<string, ConcurrentResult | { error: string }>();
  for (const c of contestants) {
    try {
      const t = performance.now();
      const { peakBytes } = await peakHeap(() =>
        Promise.all(Array.from({ length: runs }, (_, i) => c.run(steps, `conc-${process.pid}-${Date.now()}-${i}`))),
      );
      const totalMs = performance.now() - t;
      out.set(c.name, { runs, steps, totalMs, peakHeapBytes: peakBytes });
      log(
        `  ${c.name}: ${runs} × ${steps} steps at once in ${totalMs.toFixed(0)} ms, peak heap +${(peakBytes / 1e6).toFixed(1)} MB`,
      );
    } catch (error) {
      out.set(c.name, { error: String((error as Error).message ?? error).slice(0, 160) });
      log(`  ${c.name}: failed: ${String(error)}`);
    }
  }
  return out;
}

export interface PausedResult {
  runs: number;
  /** Heap still held once the agents are dropped: the runs live in SQLite. */
  storedBytes: number;
  /** Heap held with every Agent kept alive (no store), the in-memory alternative. */
  inMemoryBytes: number;
  /** Time to load one paused run back and approve it. */
  resumeMs: number;
}

/** `runs` runs paused for approval: how much of the process they hold. */
export async function measurePaused(runs: number, log: (line: string) => void): Promise<PausedResult> {
  const policy: Policy = (history) =>
    history.length === 1 ? { tool: 'pay', args: { cents: 100 } } : { final: 'paid' };
  const tools: Tool[] = [{ name: 'pay', sideEffect: true, fn: () => ({ ok: true }) }];
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-paused-'));
  const store = new SqliteStore({ path: join(dir, 'paused.db') });
  try {
    const pause = async (id: string, withStore: boolean) => {
      const agent = new Agent({ policy, tools, runId: id, ...(withStore ? { store } : {}) });
      if ((await agent.start('pay')) !== 'awaiting_approval') throw new Error('paused: not paused');
      return agent;
    };
    collect();
    let base = heapUsed();
    for (let i = 0; i < runs; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, runs - i) }, (_, k) => pause(`paused-${i + k}`, true)));
    }
    collect();
    const storedBytes = heapUsed() - base;
    const inbox = await store.list({ status: 'awaiting_approval' });
    if (inbox.length !== runs) throw new Error(`paused: ${inbox.length} in the inbox`);
    let t = performance.now();
    const one = await Agent.load(store, 'paused-7', { policy, tools });
    if ((await one.decide(true)) !== 'done') throw new Error('paused: resume');
    const resumeMs = performance.now() - t;
    collect();
    base = heapUsed();
    t = performance.now();
    const kept: Agent[] = [];
    for (let i = 0; i < runs; i++) kept.push(await pause(`kept-${i}`, false));
    collect();
    const inMemoryBytes = heapUsed() - base;
    kept.length = 0;
    const result = { runs, storedBytes, inMemoryBytes, resumeMs };
    log(
      `  ${runs} paused: ${(storedBytes / 1e6).toFixed(1)} MB held with SQLite, ${(inMemoryBytes / 1e6).toFixed(1)} MB as live agents`,
    );
    return result;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
