/**
 * The inbox's change feed, for server-sent events: it tells subscribers which runs awaiting
 * approval appeared, changed or left. It wakes on the store's `watch` where the store has one,
 * and also polls, since `watch` hears only what can make a run runnable (and, but for Postgres,
 * only in this process), while the inbox must also see a run start waiting in another process.
 * It reads the store only while someone listens.
 */
import type { CheckpointStore } from '../store/contract.js';

/** What changed in the list of runs awaiting approval. */
export interface FeedChange {
  /** Runs that appeared or changed (a new version, a decision recorded). */
  changed: string[];
  /** Runs that are no longer awaiting approval (decided and applied, expired, deleted). */
  removed: string[];
}

type Listener = (change: FeedChange) => void;

/** Tells its subscribers what changed among the runs awaiting approval (see the module's comment). */
export class RunFeed {
  readonly #store: CheckpointStore;
  readonly #pollMs: number;
  readonly #listeners = new Set<Listener>();
  #known: Map<string, string> | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #unwatch: Promise<(() => Promise<void>) | null> | null = null;
  #reading: Promise<void> | null = null;
  #again = false;

  constructor(store: CheckpointStore, pollMs: number) {
    this.#store = store;
    this.#pollMs = pollMs;
  }

  /** Calls `listener` on each change until the returned function is called. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.#start();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  /** Stops reading the store (the server closes). */
  close(): void {
    this.#listeners.clear();
    this.#stop();
  }

  #start(): void {
    this.#known = null;
    void this.check();
    this.#timer = setInterval(() => void this.check(), this.#pollMs);
    this.#timer.unref?.();
    const { watch } = this.#store;
    this.#unwatch =
      typeof watch === 'function'
        ? watch.call(this.#store, () => void this.check()).catch(() => null)
        : Promise.resolve(null);
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const unwatch = this.#unwatch;
    this.#unwatch = null;
    void unwatch?.then((stop) => stop?.()).catch(() => {});
  }

  /** Reads the list once (one read at a time; a check asked for meanwhile runs after it). */
  check(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = this.#read().finally(() => {
      this.#reading = null;
      if (this.#again && this.#listeners.size > 0) {
        this.#again = false;
        void this.check();
      }
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    let runs: Awaited<ReturnType<CheckpointStore['list']>>;
    try {
      runs = await this.#store.list({ status: 'awaiting_approval' });
    } catch {
      return; // the store is down: the next poll tries again
    }
    const now = new Map(runs.map((r) => [r.runId, `${r.version}:${r.decision ? 'd' : ''}`]));
    const before = this.#known;
    this.#known = now;
    if (before === null) return;
    const changed = [...now].filter(([id, v]) => before.get(id) !== v).map(([id]) => id);
    const removed = [...before.keys()].filter((id) => !now.has(id));
    if (changed.length === 0 && removed.length === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener({ changed, removed });
      } catch {
        // A listener's failure (a closed stream) is its own.
      }
    }
  }
}
