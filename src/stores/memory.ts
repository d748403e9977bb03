/**
 * An in-memory `CheckpointStore`: for tests, demos and single-process services that need
 * the store semantics (versions, conflicts, the approval inbox) without durability.
 */
import {
  type CheckpointStore,
  checkLimit,
  checkSave,
  deleteConflict,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from '../store.js';

export class MemoryStore implements CheckpointStore {
  readonly #runs = new Map<string, StoredRun>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async load(runId: string): Promise<StoredRun | null> {
    const run = this.#runs.get(runId);
    return run ? structuredClone(run) : null;
  }

  async save(runId: string, write: RunWrite, expectedVersion: number): Promise<number> {
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
      updatedAt: new Date(this.#now()).toISOString(),
    });
    return version + 1;
  }

  async list(options: ListOptions = {}): Promise<RunSummary[]> {
    checkLimit(options.limit);
    // Code-unit order, like SQLite's BINARY and Postgres's COLLATE "C": no locale involved.
    const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const runs = [...this.#runs.values()]
      .filter((r) => options.status === undefined || r.status === options.status)
      .sort((a, b) => byCodeUnit(a.updatedAt, b.updatedAt) || byCodeUnit(a.runId, b.runId))
      .slice(0, options.limit ?? Number.POSITIVE_INFINITY);
    return runs.map(({ head: _h, entries: _e, ...summary }) => structuredClone(summary));
  }

  async delete(runId: string, expectedVersion?: number): Promise<boolean> {
    const current = this.#runs.get(runId);
    if (!current) return false;
    if (expectedVersion !== undefined && current.version !== expectedVersion) {
      throw deleteConflict(runId, current.version, expectedVersion);
    }
    return this.#runs.delete(runId);
  }

  async close(): Promise<void> {}
}
