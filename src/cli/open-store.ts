/**
 * Opens a located store for one command. Only commands that create runs (`run`, `submit`,
 * `import`) may create an SQLite file; `serve` and `worker` only with `--create`, and refuse a
 * missing one otherwise (refuseMissing); the others read, and a missing file is simply a store
 * without runs.
 * The drivers are loaded on demand, so that a missing one is reported as what it is.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { RunNotFoundError } from '../errors.js';
import type { CheckpointStore, Lease, ListOptions, RunSummary, StoredRun } from '../store/contract.js';
import { CliUsageError } from './exit-codes.js';
import { importNeeding } from './self.js';
import type { StoreLocation } from './store-location.js';

/** An opened store and what the command needs to say about it. */
export interface OpenedStore {
  store: CheckpointStore;
  location: StoreLocation;
  /** False for an SQLite file that does not exist (and was not created). */
  exists: boolean;
}

/** The store of a file that does not exist: no runs, and nothing can be written to it. */
class MissingStore implements CheckpointStore {
  constructor(readonly path: string) {}
  async load(): Promise<StoredRun | null> {
    return null;
  }
  async list(_options?: ListOptions): Promise<RunSummary[]> {
    return [];
  }
  async save(): Promise<number> {
    throw new CliUsageError(`store ${this.path} does not exist`);
  }
  async delete(): Promise<boolean> {
    return false;
  }
  // A store with no runs: a claim holds nothing (no save can follow), so reading goes on to
  // `load`, which says there is no such run.
  async claim(runId: string, options: { owner: string; leaseMs: number }): Promise<Lease> {
    return { runId, owner: options.owner, token: 0, expiresAt: new Date(0).toISOString(), leaseMs: options.leaseMs };
  }
  async renew(): Promise<Lease> {
    throw new CliUsageError(`store ${this.path} does not exist`);
  }
  async release(): Promise<boolean> {
    return false;
  }
  async queueDecision(): Promise<number> {
    throw new CliUsageError(`store ${this.path} does not exist`);
  }
  async claimNext(): Promise<never> {
    throw new CliUsageError(`store ${this.path} does not exist`);
  }
  async close(): Promise<void> {}
}

/**
 * The better-sqlite3 major for this Node: 12 on Node 20 (13 needs 22, and crashes on 20); 13 from
 * Node 22 on (12 aborts the process on Node 24.19+ when the GC collects a statement).
 */
export const SQLITE_DRIVER_MAJOR = Number(process.versions.node.split('.')[0]) >= 22 ? 13 : 12;

/** Opens the store; `create: false` never creates an SQLite file (nor its folder). */
export async function openStore(location: StoreLocation, options: { create: boolean }): Promise<OpenedStore> {
  if (location.kind === 'postgres') {
    const { PostgresStore } = await importNeeding(() => import('../stores/postgres.js'), {
      packages: ['pg'],
      who: 'this store',
      install: 'npm install pg@8',
    });
    const store = new PostgresStore(location.target, { connectTimeoutMs: 3000 });
    try {
      await store.migrate();
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
    return { store, location, exists: true };
  }
  if (!options.create && !existsSync(location.target)) {
    return { store: new MissingStore(location.target), location, exists: false };
  }
  const { SqliteStore } = await importNeeding(() => import('../stores/sqlite.js'), {
    packages: ['better-sqlite3'],
    who: 'this store',
    install: `npm install better-sqlite3@${SQLITE_DRIVER_MAJOR}`,
  });
  mkdirSync(dirname(location.target), { recursive: true });
  return { store: SqliteStore.open(location.target), location, exists: true };
}

/**
 * Refuses a store that does not exist, for the commands that would otherwise wait on an empty one
 * (`serve`, `worker`): a mistyped `--store` must not look like an empty inbox. They open the store
 * with `create: false` unless given `--create`, so nothing is made at the path.
 */
export function refuseMissing(opened: OpenedStore): void {
  if (opened.exists) return;
  throw new CliUsageError(
    `store ${opened.location.display} does not exist: check the path (--store, else $TOLLGATE_STORE), or pass --create to create a new store`,
  );
}

/** "store /abs/tollgate.db", with "(no such file)" when it does not exist. */
export function storeName(opened: OpenedStore): string {
  return `store ${opened.location.display}${opened.exists ? '' : ' (no such file)'}`;
}

/** The error for a run the store does not have, naming the store. */
export function noRun(opened: OpenedStore, runId: string): RunNotFoundError {
  return new RunNotFoundError(`no run ${JSON.stringify(runId)} in ${storeName(opened)}`, { runId });
}
