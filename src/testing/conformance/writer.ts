/**
 * The writer side of the cross-process races (saves, claims), and a way to run it in a child
 * Node process.
 *
 * The child script of a store's test suite is three lines:
 *
 * @example
 * // my-store-writer.ts, run as `node --import tsx my-store-writer.ts`
 * import { serveWriter } from 'tollgate/testing';
 * await serveWriter((spec) => new MyStore(spec));
 *
 * The parent starts it with `spawnNodeWriter({ script, spec, job })`: the child reads
 * `{ spec, job }` from its first stdin line, opens its store, prints `ready`, waits for `go`,
 * races (`raceSaves`, `raceClaims` for a job of kind `'claims'`, `raceClaimNext` for
 * `'claimNext'`), prints its report as one JSON line, and exits.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { CheckpointStore, GroupBudgetStore, Lease, RunWrite } from '../../store/contract.js';
import type {
  ClaimNextRaceJob,
  ClaimNextRaceReport,
  ClaimRaceJob,
  ClaimRaceReport,
  GroupSpendRaceJob,
  GroupSpendRaceReport,
  SaveRaceJob,
  SaveRaceReport,
  WriterJob,
  WriterProcess,
  WriterReport,
} from './types.js';

// By name, not instanceof: the child may load another copy of Tollgate than the store's.
const named = (error: unknown, name: string) => (error as { name?: unknown } | null)?.name === name;
const isConflict = (error: unknown) => named(error, 'ConflictError');

/**
 * Saves on `job.runId` until `job.saves` saves have succeeded: each time it reads the run,
 * appends entries naming this writer, and expects the version it read. A `ConflictError`
 * means another writer got there first: it reads again.
 */
export async function raceSaves(store: CheckpointStore, job: SaveRaceJob): Promise<SaveRaceReport> {
  const report: SaveRaceReport = { writer: job.writer, won: [], conflicts: 0 };
  const meetBy = Date.now() + (job.meetWithinMs ?? 0);
  let met = false;
  while (report.won.length < job.saves || (!met && Date.now() < meetBy)) {
    const run = await store.load(job.runId);
    const version = run?.version ?? 0;
    // The head names the writer of the last save: another name means the other writer has written.
    if (run && JSON.parse(run.head).writer !== job.writer) met = true;
    const append = Array.from({ length: job.entriesPerSave }, (_, i) =>
      JSON.stringify({ writer: job.writer, save: report.won.length, i, read: version }),
    );
    const head = JSON.stringify({ writer: job.writer, version: version + 1 });
    try {
      const next = await store.save(
        job.runId,
        { status: 'running', head, from: run?.entries.length ?? 0, append, pendingCalls: [] },
        version,
      );
      report.won.push({ version: next, entries: append });
      if (job.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, job.pauseMs));
    } catch (error) {
      if (!isConflict(error)) throw error;
      report.conflicts++;
    }
  }
  return report;
}

/**
 * Claims each of `job.runIds` in turn as owner `job.writer`. A won claim creates the run with
 * the lease (a save at version 0); a lost one (`RunBusyError`) is recorded with its holder, and
 * a save without a lease is tried, which must be refused with `RunBusyError` too.
 */
export async function raceClaims(store: CheckpointStore, job: ClaimRaceJob): Promise<ClaimRaceReport> {
  const report: ClaimRaceReport = { writer: job.writer, claimed: [], busy: [], refusedSaves: 0 };
  const head = JSON.stringify({ writer: job.writer });
  const write = (): RunWrite => ({ status: 'running', head, from: 0, append: [head], pendingCalls: [] });
  for (const runId of job.runIds) {
    let lease: Lease;
    try {
      lease = await store.claim(runId, { owner: job.writer, leaseMs: job.leaseMs });
    } catch (error) {
      if (!named(error, 'RunBusyError')) throw error;
      const { holder, until } = error as { holder: string; until: string };
      report.busy.push({ runId, holder, until });
      try {
        await store.save(runId, write(), 0);
        throw new Error(`a save without a lease of ${runId}, held by ${holder}, was not refused`);
      } catch (refused) {
        if (!named(refused, 'RunBusyError')) throw refused;
        report.refusedSaves++;
      }
      continue;
    }
    const version = await store.save(runId, write(), 0, lease);
    report.claimed.push({ runId, token: lease.token, version });
  }
  return report;
}

/** Takes runs with `claimNext` as owner `job.writer` until it gives null. */
export async function raceClaimNext(store: CheckpointStore, job: ClaimNextRaceJob): Promise<ClaimNextRaceReport> {
  const report: ClaimNextRaceReport = { writer: job.writer, taken: [] };
  const options = { owner: job.writer, leaseMs: job.leaseMs, agents: job.agents };
  for (let next = await store.claimNext(options); next; next = await store.claimNext(options)) {
    report.taken.push({ runId: next.run.runId, token: next.lease.token });
  }
  return report;
}

/** Spends to `job.group` `job.spends` times, all at once, and reports the cost total each spend returned. */
export async function raceGroupSpends(store: CheckpointStore, job: GroupSpendRaceJob): Promise<GroupSpendRaceReport> {
  const groups = store as CheckpointStore & GroupBudgetStore;
  const spends = Array.from({ length: job.spends }, () =>
    groups.spendGroup(job.group, { tokens: 1, costMicroUsd: job.costMicroUsd }),
  );
  return { writer: job.writer, totals: (await Promise.all(spends)).map((s) => Math.round(s.costUsd * 1e6)) };
}

/** The child's side of `spawnNodeWriter`: open a store from the spec, race, report. */
export async function serveWriter(open: (spec: any) => CheckpointStore | Promise<CheckpointStore>): Promise<void> {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const next = async () => ((await lines.next()).value as string | undefined) ?? '';
  const { spec, job } = JSON.parse(await next()) as { spec: unknown; job: WriterJob };
  const store = await open(spec);
  try {
    process.stdout.write('ready\n');
    if ((await next()) !== 'go') throw new Error('writer: expected "go" on stdin');
    const report =
      job.kind === 'claims'
        ? await raceClaims(store, job)
        : job.kind === 'claimNext'
          ? await raceClaimNext(store, job)
          : job.kind === 'groupSpends'
            ? await raceGroupSpends(store, job)
            : await raceSaves(store, job);
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } finally {
    await store.close();
    process.stdin.destroy();
  }
}

/**
 * Starts `script` (which calls `serveWriter`) in a new Node process.
 * @param options.execArgv Node flags for the child. @default ['--import', 'tsx']
 */
export function spawnNodeWriter(options: {
  script: string;
  spec: unknown;
  job: WriterJob;
  execArgv?: string[];
}): WriterProcess {
  const child = spawn(process.execPath, [...(options.execArgv ?? ['--import', 'tsx']), options.script], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const failed = (what: string) => async () => {
    const code = await exited;
    throw new Error(`writer ${options.job.writer} exited (code ${code}) ${what}:\n${stderr}`);
  };
  const out = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const line = async (what: string) => {
    const next = await out.next();
    return next.done ? failed(what)() : (next.value as string);
  };
  const ready = line('before it was ready').then((l) => {
    if (l !== 'ready') throw new Error(`writer ${options.job.writer}: expected "ready", got ${l}`);
  });
  const result = ready
    .then(() => line('before it reported'))
    .then(async (l) => {
      if ((await exited) !== 0) return failed('after its report')();
      return JSON.parse(l) as WriterReport;
    });
  child.stdin.on('error', () => {}); // a child that died already: its exit code tells why
  ready.catch(() => {});
  result.catch(() => {});
  child.stdin.write(`${JSON.stringify({ spec: options.spec, job: options.job })}\n`);
  return {
    ready,
    result,
    go: () => child.stdin.end('go\n'),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
