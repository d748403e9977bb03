/**
 * What the chaos suite's child processes (test/chaos/worker.ts, approver.ts, submitter.ts) are given — one JSON
 * argument — and how they open the store with it.
 */

import type { Limits } from '../../machines/types.js';
import type { CheckpointStore } from '../../src/index.js';
import type { GroupBudgetStore } from '../../src/store/contract.js';
import type { DownstreamSpec } from './downstream.js';

export type StoreSpec = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; schema: string };

export interface ChildConfig {
  /** For a Postgres worker, `url` is its own proxy's: the parent cuts its connections there. */
  store: StoreSpec;
  downstream: DownstreamSpec;
  leaseMs: number;
  seed: number;
  /** The submitter's: the runs to submit, one every `everyMs`. */
  submit?: { runs: { runId: string; group: string; limits: Partial<Limits> | null }[]; everyMs: number };
}

export type ChaosStore = CheckpointStore & GroupBudgetStore;

/**
 * Opens the store. Postgres: short timeouts, so that a statement into a cut or black-holed
 * connection fails in seconds rather than the default 15 (a worker cut off must find out, and
 * give its runs up, within about a lease).
 */
export async function openStore(spec: StoreSpec): Promise<ChaosStore> {
  if (spec.kind === 'sqlite') {
    const { SqliteStore } = await import('../../src/stores/sqlite.js');
    return SqliteStore.open(spec.file) as ChaosStore;
  }
  const { PostgresStore } = await import('../../src/stores/postgres.js');
  return new PostgresStore(spec.url, {
    schema: spec.schema,
    maxConnections: 4,
    connectTimeoutMs: 2_000,
    statementTimeoutMs: 2_000,
    queryTimeoutMs: 3_000,
  }) as ChaosStore;
}

/** Prints one event for the parent (a pipe: written at once, so a SIGKILL right after loses nothing). */
export function emit(event: object): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}
