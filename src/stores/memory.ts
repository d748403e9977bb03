/**
 * An in-memory `CheckpointStore`: for tests, demos and single-process services that need
 * the store semantics (versions, conflicts, the approval inbox) without durability.
 */
import {
  type CheckpointStore,
  checkSave,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from '../store.js';
import {
  checkClock,
  checkListOptions,
  checkRunId,
  checkStoreOptions,
  checkWrite,
  compareRuns,
  timestampOf,
} from './rules.js';

export interface MemoryStoreOptions {
  /** The clock for `updatedAt`, in ms since the epoch. @default Date.now */
  now?: () => number;
}

/** Runs in a `Map`, with the same rules, conflicts and list order as the durable stores. */
export class MemoryStore implements CheckpointStore {
  readonly #runs = new Map<string, StoredRun>();
  readonly #now: () => number;

  /** @throws OptionsError on an unknown option or a `now` that is not a function. */
  constructor(options?: MemoryStoreOptions) {
    const o = checkStoreOptions('new MemoryStore', options, ['now']);
    this.#now = checkClock('new MemoryStore', o.now) ?? Date.now;
  }

  async load(runId: string): Promise<StoredRun | null> {
    checkRunId('load', runId);
    const run = this.#runs.get(runId);
    return run ? structuredClone(run) : null;
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
    checkWrite('save', runId, write, expectedVersion);
    const current = this.#runs.get(runId) ?? null;
    const version = current?.version ?? 0;
    checkSave(runId, current && { version, entries: current.entries.length }, write.from, expectedVersion);
    this.#runs.set(runId, {
      runId,
      version: version + 1,
      status: write.status,
      head: write.head,
      entries: [...(current?.entries ?? []), ...write.append],
      pending: structuredClone(write.pending),
      updatedAt: timestampOf(this.#now),
    });
    return version + 1;
  }

  async list(options?: ListOptions): Promise<RunSummary[]> {
    const { status, limit } = checkListOptions(options);
    const runs = [...this.#runs.values()]
      .filter((r) => status === undefined || r.status === status)
      .sort(compareRuns)
      .slice(0, limit ?? Number.POSITIVE_INFINITY);
    return runs.map(({ head: _h, entries: _e, ...summary }) => structuredClone(summary));
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    checkRunId('delete', runId);
    const current = this.#runs.get(runId);
    if (!current) return false;
    if (expectedVersion !== undefined && current.version !== expectedVersion) {
      throw deleteConflict(runId, current.version, expectedVersion);
    }
    return this.#runs.delete(runId);
  }

  async close(): Promise<void> {}
}
