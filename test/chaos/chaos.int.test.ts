// The chaos suite (issue 30, "exactly once across processes"): worker processes with the public
// `Worker` class and an approver process on one store, while the parent SIGKILLs workers (and
// starts others), SIGSTOPs them past their lease and wakes them, and on Postgres cuts and
// partitions their connections; every side effect's every attempt is written downstream, fenced.
// Then: every run final, at most one effect per approval, no decision lost, no budget exceeded.
// TOLLGATE_SOAK=1 (npm run test:soak) runs it long; TOLLGATE_CHAOS_SEED reruns a seed (the faults'
// choices and the approver's; the machine's timing differs). Each store's report goes to
// reports/chaos-<store>.json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleChild } from '../crash/bundle.js';
import { dropSchema, freshSchema, postgresTarget } from '../support/postgres.js';
import { type ChaosOptions, chaos } from './harness.js';
import type { ChaosReport } from './report.js';

const pg = await postgresTarget();
const soak = Boolean(process.env.TOLLGATE_SOAK);
const seed = Number(process.env.TOLLGATE_CHAOS_SEED ?? Date.now() % 1_000_000);
// CI: both stores side by side in about a minute and a half on two cores; soak: about nine minutes.
const size = soak
  ? { workers: 4, runs: 160, chaosMs: 480_000, gapMs: [400, 1_600] as [number, number] }
  : { workers: 3, runs: 36, chaosMs: 75_000, gapMs: [700, 2_000] as [number, number] };
const settleMs = 90_000;
const timeout = size.chaosMs + settleMs + 60_000;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-chaos-'));
const schema = freshSchema('chaos');
let commands: ChaosOptions['commands'] = { worker: [], approver: [], submitter: [] };

beforeAll(async () => {
  const [worker, approver, submitter] = await Promise.all(
    ['worker.ts', 'approver.ts', 'submitter.ts'].map((file) => bundleChild(join(import.meta.dirname, file))),
  );
  commands = { worker: worker ?? [], approver: approver ?? [], submitter: submitter ?? [] };
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (pg.url) await dropSchema(pg.url, schema);
});

async function run(store: ChaosOptions['store']): Promise<void> {
  // A lease of 1.5 s: take-overs within the test, and a live worker on a loaded machine still
  // renews in time (every 0.5 s); a lost one is reported, and the fence makes it safe anyway.
  const report = await chaos({ ...size, store, seed, leaseMs: 1_500, settleMs, commands });
  print(report);
  expect(report.violations).toEqual([]);
  expect(report.runs).toBe(size.runs);
  expect(report.kills).toBeGreaterThan(0);
  expect(report.pauses + report.freezes).toBeGreaterThan(0);
  if (store.kind === 'postgres') expect(report.cuts + report.partitions).toBeGreaterThan(0);
}

function print(report: ChaosReport): void {
  const { violations, notes, ...figures } = report;
  console.log(`chaos (${report.store}, seed ${report.seed}):`, JSON.stringify(figures));
  for (const line of notes) console.log(`  note: ${line}`);
  for (const line of violations) console.log(`  VIOLATION ${line}`);
  mkdirSync('reports', { recursive: true });
  writeFileSync(`reports/chaos-${report.store}.json`, JSON.stringify(report, null, 1));
}

describe.concurrent(`chaos: workers killed, paused past their lease and cut off (seed ${seed}; rerun with TOLLGATE_CHAOS_SEED=${seed})`, () => {
  it('SQLite', { timeout }, async () => {
    await run({ kind: 'sqlite', dir });
  });

  it.skipIf(!pg.url)(`Postgres${pg.skipReason ? ` (skipped: ${pg.skipReason})` : ''}`, { timeout }, async () => {
    await run({ kind: 'postgres', url: pg.url ?? '', schema });
  });
});
