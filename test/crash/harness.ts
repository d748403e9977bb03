/**
 * The crash test's parent: starts children (test/crash/worker.ts) on a store — two at once,
 * working the same runs, so they also race each other's saves — SIGKILLs them at random
 * moments, starts others, and plays the human: it reads the approval inbox through
 * the store, decides every pending call (logging each decision with its call id and key), and
 * hands the decision to every live child, which applies it with `Agent.load(...).decide(...)`.
 * The decision is applied in the child, not here, because deciding runs the approved call:
 * side effects must happen in the process that gets killed.
 * When every run is done it checks the invariants against the store and the ledger.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { PendingCall } from '../../src/index.js';
import { random } from '../support/random.js';
import { checkInvariants, type Lifetime, type LoggedDecision } from './invariants.js';
import { openWorld, type WorldSpec } from './ledger.js';
import {
  type CrashReport,
  type DecisionMessage,
  emptyReport,
  type WorkerConfig,
  type WorkerEvent,
} from './scenario.js';

export type { CrashReport } from './scenario.js';

export interface CrashOptions {
  world: WorldSpec;
  /** Children working the same runs at the same time (each killed and restarted on its own). */
  workers: number;
  /** How many SIGKILLs to deliver (the run goes on in rounds of fresh runs until then). */
  kills: number;
  runsPerRound: number;
  /** A clock-timed kill comes 0…this many ms after the child says it is ready. */
  maxKillDelayMs: number;
  /** A progress-timed kill comes just after the child's n-th save, n in 0…this. */
  maxKillSaves: number;
  seed: number;
  /** The command that starts a worker; the config JSON is appended. */
  worker: readonly string[];
  /** Give up on a round after this long. */
  roundTimeoutMs: number;
  /** Where to write the report and every decision made (JSON), for a post-mortem. */
  logFile?: string;
  /** The agents' durability mode. @default 'full' */
  durability?: 'full' | 'points';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function crashTest(options: CrashOptions): Promise<CrashReport> {
  const started = Date.now();
  const rng = random(options.seed);
  const world = await openWorld(options.world);
  await world.setup();
  const log = new Map<string, LoggedDecision>();
  /** When each child (by pid) started and ended, on this process's clock. */
  const lives = new Map<number, Lifetime>();
  /** The children (by pid) that started each approved call of `pay`, by call id. */
  const paying = new Map<string, number[]>();
  /** Policy calls each child (by pid) reported, by run. */
  const policyCalls = new Map<string, Map<number, number>>();
  /** Runs a live child lost its lease on (a stall), and the runs saves were lost on (conflicts). */
  const lostRuns = new Set<string>();
  const conflictRuns: string[] = [];
  const deciding = new Map<string, Promise<LoggedDecision>>();
  const report = emptyReport(options.world.kind, options.seed);
  const allRuns: string[] = [];
  try {
    do {
      const runIds = Array.from({ length: options.runsPerRound }, (_, i) => `r${report.rounds}-${i}`);
      allRuns.push(...runIds);
      await round(runIds);
      report.rounds++;
    } while (report.kills < options.kills);
    await checkInvariants(world, allRuns, log, { lives, paying, policyCalls, lostRuns, conflictRuns }, report);
  } finally {
    report.durationMs = Date.now() - started;
    if (options.logFile) {
      mkdirSync(dirname(options.logFile), { recursive: true });
      const ledger = await Promise.all([world.payRows(), world.shipRows()]).catch(() => null);
      const decisions = [...log.values()];
      writeFileSync(options.logFile, JSON.stringify({ report, decisions, ledger }, null, 1));
    }
    await world.close();
  }
  return report;

  /**
   * Plays the human for one pending call; the same call id always gets the same decision. Each
   * child's approver asks, concurrently: the first ask makes the decision, the others share it
   * (a decision made twice could differ, and the log would lose one of them).
   */
  function decisionFor(runId: string, p: PendingCall): Promise<LoggedDecision> {
    let decision = deciding.get(p.id);
    if (!decision) {
      decision = decide(runId, p);
      deciding.set(p.id, decision);
    }
    return decision;
  }

  async function decide(runId: string, p: PendingCall): Promise<LoggedDecision> {
    let approved = rng() >= 0.1;
    let note = approved ? 'looks right' : 'not today';
    if (p.outcome === 'unknown') {
      report.unknownOutcomes++;
      if (p.tool === 'ship') report.violations.push(`idempotent ship re-asked with outcome unknown: ${p.id}`);
      // A careful human checks the ledger; now and then one approves again regardless.
      const happened = (await world.payRows()).some((r) => r.key === p.key);
      approved = !happened || rng() < 0.3;
      note = happened ? (approved ? 'approving again anyway' : 'ledger: already paid') : 'ledger: not paid';
    }
    const entry: LoggedDecision = {
      runId,
      callId: p.id,
      approved,
      note,
      key: p.key,
      tool: p.tool,
      attempt: p.attempt,
      outcome: p.outcome ?? null,
      applied: false,
      at: Date.now(),
    };
    if (log.has(p.id)) throw new Error(`decided ${p.id} twice`);
    log.set(p.id, entry);
    if (approved) report.approvals++;
    else report.denials++;
    return entry;
  }

  async function round(runIds: string[]): Promise<void> {
    const config: WorkerConfig = { world: options.world, runIds, durability: options.durability ?? 'full' };
    const deadline = Date.now() + options.roundTimeoutMs;
    const slot = async () => {
      for (let start = 0; ; start++) {
        if (Date.now() > deadline) {
          throw new Error(`round ${report.rounds} did not finish in ${options.roundTimeoutMs} ms`);
        }
        if (start > 0) report.restarts++;
        if ((await life(config)) === 'done') return;
      }
    };
    // Every slot ends before the round does, failed or not: the store closes after the round, and
    // a slot still polling it then would only bury the first failure under its own.
    const ended = await Promise.allSettled(Array.from({ length: options.workers }, slot));
    const failed = ended.find((e) => e.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** The child's own account of a hang (it answers `dump` on stdin), the store's, and the decisions. */
  async function describeHang(
    config: WorkerConfig,
    stdin: NodeJS.WritableStream,
    onState: (listener: (state: WorkerEvent) => void) => void,
  ): Promise<string> {
    const state = new Promise<WorkerEvent | string>((resolve) => {
      onState(resolve);
      setTimeout(() => resolve('(the child did not answer in 3 s)'), 3_000);
    });
    stdin.write(`${JSON.stringify({ type: 'dump' })}\n`);
    const child = await state;
    const runs = await world.store.list().catch((error: unknown) => String(error));
    const mine = new Set(config.runIds);
    const stored =
      typeof runs === 'string'
        ? runs
        : runs
            .filter((r) => mine.has(r.runId))
            .map((r) => `${r.runId} v${r.version} ${r.status} pending=${r.pendingCalls.map((p) => p.id).join(',')}`);
    // The heads of the runs not done (the state a fresh process would resume from, to replay),
    // and the decisions made on them.
    const heads: Record<string, string> = {};
    for (const runId of config.runIds) {
      const run = await world.store.load(runId).catch(() => null);
      if (run?.status !== 'done') heads[runId] = run?.head ?? '(none)';
    }
    const decided = [...log.values()].filter((d) => d.runId in heads);
    return JSON.stringify({ child, stored, decided, heads, kills: report.kills }, null, 1);
  }

  /** One child, from spawn to exit: 'done' when it finished every run, 'killed' otherwise. */
  async function life(config: WorkerConfig): Promise<'done' | 'killed'> {
    const [command, ...args] = options.worker as [string, ...string[]];
    const spawnedAt = Date.now();
    let readyAt = spawnedAt;
    const child = spawn(command, [...args, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    const lifetime: Lifetime = { from: spawnedAt, to: null, killedAt: null, killed: false };
    if (child.pid !== undefined) lives.set(child.pid, lifetime);
    child.stdin.on('error', () => {}); // writes to a killed child
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    let alive = true;
    let finished = false;
    let ready: () => void = () => {};
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    let effectMade: () => void = () => {};
    const nextEffect = new Promise<void>((resolve) => {
      effectMade = resolve;
    });
    let dumped: (state: WorkerEvent) => void = () => {};
    let saves = 0;
    let savesWanted = Number.POSITIVE_INFINITY;
    let savedEnough: () => void = () => {};
    const enoughSaves = new Promise<void>((resolve) => {
      savedEnough = resolve;
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const event = JSON.parse(line) as WorkerEvent;
      if (event.type === 'ready') {
        readyAt = Date.now();
        ready();
      } else if (event.type === 'effect') effectMade();
      else if (event.type === 'saved' && ++saves >= savesWanted) savedEnough();
      else if (event.type === 'paying')
        paying.set(event.callId, [...(paying.get(event.callId) ?? []), child.pid ?? -1]);
      else if (event.type === 'policy') {
        const byPid = policyCalls.get(event.runId) ?? new Map<number, number>();
        const pid = child.pid ?? -1;
        byPid.set(pid, (byPid.get(pid) ?? 0) + 1);
        policyCalls.set(event.runId, byPid);
      } else if (event.type === 'done') finished = true;
      else if (event.type === 'decided') {
        // A decision that left its call pending would leave the run waiting for ever (the human
        // decided it): a failure, said at once rather than found as a hang.
        if (event.stillPending) {
          report.violations.push(`${event.runId}: deciding ${event.callId} left it pending (status ${event.status})`);
          return;
        }
        report.applied++;
        const entry = log.get(event.callId);
        if (entry) entry.applied = true;
      } else if (event.type === 'stale') report.stale++;
      else if (event.type === 'conflict') {
        conflictRuns.push(event.runId);
        report.notes.push(`conflict on ${event.runId} (pid ${child.pid}): ${event.detail}`);
      } else if (event.type === 'busy') report.busy++;
      else if (event.type === 'lost') {
        report.leasesLost++;
        lostRuns.add(event.runId);
      } else if (event.type === 'stuck') report.violations.push(`run ${event.runId} stuck in ${event.status}`);
      else if (event.type === 'state') dumped(event);
    });
    void exited.then(() => {
      lifetime.to = Date.now();
      alive = false;
      ready();
    });

    const sent = new Set<string>();
    const approver = (async () => {
      await isReady;
      while (alive) {
        for (const run of await world.store.list({ status: 'awaiting_approval' })) {
          if (!run.pending || sent.has(run.pending.id)) continue;
          const d = await decisionFor(run.runId, run.pending);
          if (d.applied || !alive) continue;
          report.sent++;
          sent.add(d.callId);
          const message: DecisionMessage = { runId: d.runId, callId: d.callId, approved: d.approved, note: d.note };
          child.stdin.write(`${JSON.stringify(message)}\n`);
        }
        await sleep(10);
      }
    })();

    let killed = false;
    if (report.kills < options.kills) {
      await isReady;
      // Timed by the child's progress, so a slow (busy) machine still gets work done between
      // kills: just after its n-th save; just after a side effect, before its result is
      // recorded; or by the clock, anywhere (start-up included).
      // A child that finishes first ends the wait.
      const how = rng();
      const late = Promise.race([sleep(options.maxKillDelayMs * 4), exited]);
      if (how < 0.5) {
        savesWanted = Math.floor(rng() * (options.maxKillSaves + 1));
        if (saves >= savesWanted) savedEnough();
        await Promise.race([enoughSaves, late]);
        await sleep(rng() * 3);
      } else if (how < 0.75) {
        await Promise.race([nextEffect, late]);
        await sleep(rng() * 4);
      } else await Promise.race([sleep(rng() * options.maxKillDelayMs), exited]);
      if (alive && !finished) {
        lifetime.killedAt = Date.now();
        killed = child.kill('SIGKILL');
      }
    }
    const killedAt = Date.now();
    // A child that neither finishes nor dies is a hang: say what it and the store were doing,
    // stop it, and fail.
    let hung: Promise<string> | null = null;
    const watchdog = setTimeout(() => {
      hung = describeHang(config, child.stdin, (listener) => {
        dumped = listener;
      }).finally(() => child.kill('SIGKILL'));
    }, options.roundTimeoutMs);
    const { code, signal } = await exited;
    clearTimeout(watchdog);
    await approver;
    if (hung) throw new Error(`worker hung for ${options.roundTimeoutMs} ms: ${await hung}`);
    if (process.env.TOLLGATE_CRASH_DEBUG) {
      console.log(
        `life: ready ${readyAt - spawnedAt} ms, killed ${killedAt - readyAt} ms later, exit ${Date.now() - killedAt} ms later, ${saves} saves`,
      );
    }
    if (signal === 'SIGKILL' && killed) {
      if (finished) return 'done'; // it had finished its work: not a crash
      report.kills++;
      lifetime.killed = true;
      return 'killed';
    }
    if (code === 0 && finished) return 'done';
    throw new Error(`worker exited with ${signal ?? code}:\n${stderr}`);
  }
}
