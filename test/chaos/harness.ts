/**
 * The chaos suite's parent. It submits runs into two budget groups, keeps `workers` worker
 * processes (test/chaos/worker.ts, each behind a TCP proxy of its own on Postgres) and one approver
 * process (approver.ts) running while a submitter process (submitter.ts) submits the runs, makes a
 * fault every so often for `chaosMs` (faults.ts), then
 * stops making them, lets every run finish, stops the children, and hands what it saw to the
 * checks (checks.ts).
 */
import { join } from 'node:path';
import { TcpProxy } from '../stores/tcp-proxy.js';
import { random } from '../support/random.js';
import { checkChaos, type Observed, type Submitted } from './checks.js';
import type { StoreSpec } from './child.js';
import { openStore } from './child.js';
import { type Child, spawnChild, stopChild } from './children.js';
import { type DownstreamSpec, openDownstream } from './downstream.js';
import { Faults } from './faults.js';
import { type ChaosReport, emptyReport } from './report.js';
import { type ApproverEvent, CALL_USD, STEPS, type WorkerEvent } from './scenario.js';

export interface ChaosOptions {
  store: { kind: 'sqlite'; dir: string } | { kind: 'postgres'; url: string; schema: string };
  seed: number;
  /** Worker processes alive at once (a killed one is replaced at once). */
  workers: number;
  runs: number;
  /** How long faults are made; runs are submitted during its first 60%. */
  chaosMs: number;
  /** A fault every `gapMs[0]`…`gapMs[1]` ms. */
  gapMs: [number, number];
  leaseMs: number;
  /** How long the runs may take to finish once the faults stop. */
  settleMs: number;
  /** The commands that start a worker, the approver and the submitter; the config JSON is appended. */
  commands: { worker: readonly string[]; approver: readonly string[]; submitter: readonly string[] };
}

/** Statuses a run rests in for good in this suite (`failed` is one the checks report). */
const FINAL = new Set(['done', 'budget_exhausted', 'cancelled', 'failed']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The runs: alternating groups; one in six stops at its own step limit, one in six at its own cost limit. */
function plan(n: number): Submitted[] {
  return Array.from({ length: n }, (_, i) => ({
    runId: `run-${i}`,
    group: i % 2 === 0 ? 'acme' : 'globex',
    limits: i % 6 === 1 ? { maxSteps: 3 } : i % 6 === 4 ? { maxCostUsd: 0.025 } : null,
  }));
}

export async function chaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const rng = random(options.seed);
  const report = emptyReport(options.store.kind, options.seed);
  const { leaseMs } = options;
  const spec: StoreSpec =
    options.store.kind === 'sqlite' ? { kind: 'sqlite', file: join(options.store.dir, 'runs.db') } : options.store;
  const downstreamSpec: DownstreamSpec =
    options.store.kind === 'sqlite'
      ? { kind: 'sqlite', file: join(options.store.dir, 'downstream.db') }
      : options.store;
  const store = await openStore(spec);
  const downstream = await openDownstream(downstreamSpec);
  const observed: Observed = {
    decisions: [],
    dropped: [],
    faults: new Map(),
    workerErrors: [],
    verify: [],
    leases: [],
    holds: [],
    charges: [],
  };
  const workers = new Set<Child>();
  const starting = new Set<Promise<Child>>();
  /** The approver and the submitter: killed at the end if still there. */
  const helpers: Child[] = [];
  let childSeed = options.seed;
  const configOf = (s: StoreSpec) => ({ store: s, downstream: downstreamSpec, leaseMs, seed: childSeed++ });
  const faults = new Faults({
    rng,
    leaseMs,
    observed,
    report,
    workers: () => [...workers],
    replace: (dead) => {
      workers.delete(dead);
      void startWorker();
    },
  });
  const submitted = plan(options.runs);
  const perGroup = (g: string) => submitted.filter((r) => r.group === g).length;
  // acme: half of what its runs would spend, so the suite reaches it; globex: room for every call
  // and for what crashes make the runs ask again.
  const limits = { acme: perGroup('acme') * STEPS * CALL_USD * 0.5, globex: perGroup('globex') * STEPS * CALL_USD * 3 };
  try {
    if ('migrate' in store && typeof store.migrate === 'function') await store.migrate();
    await downstream.setup();
    for (const [group, maxCostUsd] of Object.entries(limits)) {
      await store.setGroupBudget(group, { maxCostUsd, period: 'total' });
    }
    const approver = spawnChild(
      options.commands.approver,
      configOf(spec),
      (e: ApproverEvent) => {
        if (e.type === 'decided') observed.decisions.push(e);
        else if (e.type === 'dropped') observed.dropped.push(e.callId);
        else if (e.type === 'retry') report.decisions.retries++;
        else if (e.type === 'refused') report.notes.push(`approver: ${e.runId} ${e.error}`);
      },
      (_, why) => report.violations.push(`approver: ${why}`),
    );
    helpers.push(approver);
    await Promise.all([approver.ready, ...Array.from({ length: options.workers }, () => startWorker())]);

    const chaosEnds = Date.now() + options.chaosMs;
    // Submitted from a child: see submitter.ts.
    const submitter = spawnChild(
      options.commands.submitter,
      { ...configOf(spec), submit: { runs: submitted, everyMs: (options.chaosMs * 0.6) / submitted.length } },
      () => {},
      () => {},
    );
    submitter.ending = true; // it exits when it is done: its code is checked below
    helpers.push(submitter);
    while (Date.now() < chaosEnds) {
      await sleep(options.gapMs[0] + rng() * (options.gapMs[1] - options.gapMs[0]));
      await faults.one();
    }
    faults.end();
    const { code } = await submitter.exited;
    if (code !== 0) throw new Error(`the submitter exited with ${code}: ${submitter.stderr.join('')}`);
    await settle();
    await Promise.all(starting);
    for (const why of await Promise.all([...workers, approver].map((c) => stopChild(c, 15_000)))) {
      if (why) report.violations.push(why);
    }
    workers.clear();
    report.durationMs = Date.now() - started;
    await checkChaos({ store, downstream, submitted, limits, observed, report, leaseMs });
    return report;
  } finally {
    faults.end();
    await Promise.all(starting);
    for (const c of [...workers, ...helpers]) {
      c.ending = true;
      c.process.kill('SIGKILL');
      await c.proxy?.close();
    }
    await store.close();
    await downstream.close();
  }

  /** A worker (behind a proxy of its own on Postgres), once it is ready. */
  function startWorker(): Promise<Child> {
    const made = (async () => {
      let proxy: TcpProxy | null = null;
      let own = spec;
      if (spec.kind === 'postgres') {
        const target = new URL(spec.url);
        proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
        own = { ...spec, url: proxy.urlFor(spec.url) };
      }
      const child = spawnChild(
        options.commands.worker,
        configOf(own),
        (e: WorkerEvent, self) => {
          if (e.type === 'call') self.inCall.set(e.tool, (self.inCall.get(e.tool) ?? 0) + 1);
          else if (e.type === 'called') self.inCall.set(e.tool, Math.max(0, (self.inCall.get(e.tool) ?? 0) - 1));
          else if (e.type === 'verify') observed.verify.push(e.answer);
          else if (e.type === 'error') observed.workerErrors.push(e.error);
          else if (e.type === 'frozen') faults.frozen(self, e.at);
          else if (e.type === 'lease') observed.leases.push(e);
          else if (e.type === 'hold') observed.holds.push(e);
          else if (e.type === 'charge') observed.charges.push(e);
        },
        (dead, why) => {
          report.violations.push(why);
          if (workers.delete(dead)) void startWorker();
        },
      );
      child.proxy = proxy;
      workers.add(child);
      report.workersStarted++;
      await child.ready;
      return child;
    })();
    starting.add(made);
    void made.finally(() => starting.delete(made));
    return made;
  }

  /** Waits until every run rests for good; a run still moving `settleMs` after the faults stopped fails the suite, with its state. */
  async function settle(): Promise<void> {
    const deadline = Date.now() + options.settleMs;
    for (;;) {
      const runs = new Map((await store.list()).map((r) => [r.runId, r]));
      const open = submitted.filter((s) => !FINAL.has(runs.get(s.runId)?.status ?? ''));
      if (open.length === 0) return;
      if (Date.now() > deadline) {
        const state = open.map((s) => {
          const r = runs.get(s.runId);
          return `${s.runId} ${r?.status} pending=${r?.pendingCalls.map((p) => p.id).join(',')} decision=${JSON.stringify(r?.decision)}`;
        });
        throw new Error(
          `seed ${options.seed}: ${open.length} runs still open ${options.settleMs} ms after the faults stopped:\n${state.join('\n')}\nlast worker errors:\n${observed.workerErrors.slice(-10).join('\n')}`,
        );
      }
      await sleep(250);
    }
  }
}
