/**
 * A run's side of its store: saves the run after every change, in order, each save naming
 * the version it expects. Saves are queued, and each writes the run as it is when the save
 * runs, so a burst of transitions coalesces into fewer writes; `flush()` waits for all of them.
 * The tool actor awaits `flush()` before calling a tool: that is the write-ahead point.
 * After a failed save (a `ConflictError`, a dead connection) every later save fails too:
 * a writer that lost its place never writes again.
 */
import type { HistoryEntry, PendingCall, Status } from '../../machines/types.js';
import { entryOf, headOf, type PersistedRun } from '../checkpoint/index.js';
import type { CheckpointStore } from '../store.js';

/** The part of a machine snapshot the journal reads. */
export interface RunView {
  run: Omit<PersistedRun, 'children'>;
  status: Status;
  /** Every undecided call, in call order. */
  pendingCalls: PendingCall[];
  history: readonly HistoryEntry[];
}

export class Saver {
  readonly store: CheckpointStore;
  readonly runId: string;
  #version: number;
  #stored: number;
  #lastHead: string | null;
  #chain: Promise<void> = Promise.resolve();
  readonly #read: () => RunView | null;
  readonly #onFailure: (error: unknown) => void;

  constructor(options: {
    store: CheckpointStore;
    runId: string;
    version: number;
    stored: number;
    head: string | null;
    read: () => RunView | null;
    onFailure: (error: unknown) => void;
  }) {
    this.store = options.store;
    this.runId = options.runId;
    this.#version = options.version;
    this.#stored = options.stored;
    this.#lastHead = options.head;
    this.#read = options.read;
    this.#onFailure = options.onFailure;
  }

  /** The version of the last save (0 before the first). */
  get version(): number {
    return this.#version;
  }

  /** Queues a save of the run as it will be when the save runs; resolves once it is durable. */
  flush(): Promise<void> {
    const next = this.#chain.then(() => this.#save());
    this.#chain = next;
    next.catch(() => {}); // the failure is reported through onFailure and to whoever awaits
    return next;
  }

  async #save(): Promise<void> {
    const view = this.#read();
    if (!view) return;
    const head = headOf(view.run);
    if (head === this.#lastHead && view.history.length === this.#stored) return;
    const append = view.history.slice(this.#stored).map(entryOf);
    try {
      this.#version = await this.store.save(
        this.runId,
        { status: view.status, head, from: this.#stored, append, pending: view.pendingCalls[0] ?? null },
        this.#version,
      );
    } catch (error) {
      this.#onFailure(error);
      throw error;
    }
    this.#stored += append.length;
    this.#lastHead = head;
  }
}
