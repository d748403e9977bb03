/**
 * A run's side of its store: saves the run at its durable points, in order, each save naming
 * the version it expects. Saves are queued, and each writes the run as it is when the save
 * runs, so saves asked for together coalesce; `flush()` waits for all of them. The points, each
 * needed for a reason (docs/architecture.md, "Saves"):
 * - before every policy call: the previous step (its action, what it spent, its results) is
 *   stored, so a crash loses at most the step in flight — one policy call's spending left
 *   unrecorded and its pure calls made again — never more;
 * - before a side effect (or an approved call): the write-ahead record a crash is judged by;
 * - when the run settles (awaiting a human, a budget, its end) and when its limits change.
 * A pure call is not saved before it runs: a crash re-runs it. After a failed save (a
 * `ConflictError`, a dead connection) every later save fails too: a writer that lost its
 * place never writes again.
 */
import type { HistoryEntry, PendingCall, Status } from '../../machines/types.js';
import {
  type Base,
  baseText,
  deltaText,
  EntryTexts,
  headParts,
  headText,
  type PersistedRun,
  resumedHead,
} from '../checkpoint/index.js';
import type { LeaseLostError } from '../errors.js';
import type { Durability, LeaseTerms } from '../options.js';
import type { CheckpointStore, Lease } from '../store/contract.js';
import { groupBudgetsOf } from '../store/contract.js';
import { LeaseHolder, monotonic } from './lease.js';

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
  /**
   * The base the stored head is a delta against (null: the next save writes one), when the
   * store keeps bases (`keepsBase`).
   */
  #base: Base | null = null;
  readonly #keepsBase: boolean;
  #chain: Promise<void> = Promise.resolve();
  readonly #read: () => RunView | null;
  readonly #onFailure: (error: unknown) => void;
  readonly #lease: LeaseHolder;
  readonly #agent: string | null;
  /** The budget group the run joins before its first save (so a crash cannot leave it out); null: none. */
  #group: string | null;
  readonly #onGroup: ((group: string) => void) | undefined;
  /** The next save writes even if nothing changed (to clear a recorded decision it dropped). */
  #touched = false;
  #givenUp: Promise<void> = Promise.resolve();
  readonly #durability: Durability;
  /** A durable save was asked for since the last one was made. */
  #pointWanted = false;
  /** The last write was relaxed (not yet on stable storage). */
  #relaxedLeft = false;
  /** The run's entry texts, shared with its checkpoints: each entry is encoded once. */
  readonly #texts: EntryTexts;

  constructor(options: {
    store: CheckpointStore;
    runId: string;
    version: number;
    stored: number;
    head: string | null;
    /** The stored base a delta `head` was written against; absent or null: none. */
    base?: string | null;
    lease: LeaseTerms;
    /** A lease already claimed (by `Agent.load`, before it read the run). */
    claimed: Lease | null;
    /** The agent definition's name, saved with every write (null: none). */
    agent: string | null;
    /** The run's budget group, joined in the store before the first save; absent or null: none. */
    group?: string | null;
    /** Told of the group a new run without one turns out to be in (its id was in a group before). */
    onGroup?: (group: string) => void;
    /** Which saves are durable before the store answers. @default 'full' */
    durability?: Durability;
    /** The run's entry texts (shared with `checkpoint()`); absent: the saver's own. */
    texts?: EntryTexts;
    read: () => RunView | null;
    onFailure: (error: unknown) => void;
  }) {
    this.store = options.store;
    this.#keepsBase = options.store.keepsBase === true;
    this.runId = options.runId;
    this.#version = options.version;
    this.#stored = options.stored;
    if (options.head !== null) {
      // The run's head as it is compared with the next one: joined with its base if a delta.
      const resumed = resumedHead(options.head, options.base);
      this.#lastHead = resumed.head;
      this.#base = resumed.base;
    } else {
      this.#lastHead = null;
    }
    this.#read = options.read;
    this.#onFailure = options.onFailure;
    this.#agent = options.agent;
    this.#group = options.group ?? null;
    this.#onGroup = options.onGroup;
    this.#durability = options.durability ?? 'full';
    this.#texts = options.texts ?? new EntryTexts();
    this.#lease = new LeaseHolder(options.store, options.runId, options.lease, (error) => options.onFailure(error));
    if (options.claimed) this.#lease.adopt(options.claimed);
  }

  /**
   * The store failed this process (a save, or its group's check before a call): the run may not
   * be worked here any more. The lease is given up (best effort), so another worker can take the
   * run at once and read what the store holds, instead of after a lapse; the run is told
   * (`onFailure`), and whoever is told of the failure is told after the release ended (`givenUp`).
   * Never rejects.
   */
  giveUp(error: unknown): Promise<void> {
    const released = this.#lease.release();
    this.#givenUp = released;
    this.#onFailure(error);
    return released;
  }

  /**
   * Resolves once the lease given up after a store failure (`giveUp`) is released (or the release failed):
   * a caller told of the failure can then load the run again at once. Never rejects.
   */
  givenUp(): Promise<void> {
    return this.#givenUp;
  }

  /** The run's lease, while this process holds one. */
  get lease(): Lease | null {
    return this.#lease.lease;
  }

  /** A lease adopted at load waits to be confirmed (`working`) before the run is worked. */
  get leaseUnconfirmed(): boolean {
    return this.#lease.unconfirmed;
  }

  /**
   * The lease a side effect starts under (`LeaseHolder.fence`): confirmed by a statement sent at
   * or after `since` — the call's write-ahead save, or a renewal made now — with enough left.
   * @throws LeaseLostError (the run stops in this process) when it cannot be.
   */
  fence(since: number): Promise<Lease> {
    return this.#lease.fence(since);
  }

  /** The store refused an operation under the run's lease (`LeaseHolder.refused`): the run stops here. */
  refused(error: LeaseLostError): void {
    this.#lease.refused(error);
  }

  /** The lease checked again right before the effect, synchronously (`LeaseHolder.fenceNow`). */
  fenceNow(): Lease {
    return this.#lease.fenceNow();
  }

  /** The run is about to be worked: a lease adopted at load is confirmed, and renewed from now on. */
  working(): Promise<void> {
    return this.#lease.keep();
  }

  /** Gives the run up without saving (nothing changed since it was read). */
  releaseOnly(): Promise<void> {
    return this.#lease.release();
  }

  /**
   * Saves what is left, then gives the run up: it settled, and another process may take it.
   * `atRest` is asked right before the lease goes (nothing runs between the answer and the
   * release): an operation begun meanwhile (a decision sent while a save for new limits was on
   * its way) keeps the lease it is working under.
   */
  async release(atRest: () => boolean = () => true): Promise<void> {
    await this.flush().catch(() => {});
    if (atRest()) await this.#lease.release();
  }

  /** The version of the last save (0 before the first). */
  get version(): number {
    return this.#version;
  }

  /**
   * Makes the next save write even if the run did not change: every save clears a decision
   * recorded in the store, and a dropped one must not stay there to be claimed again.
   */
  touch(): void {
    this.#touched = true;
  }

  /**
   * Queues a save of the run as it will be when the save runs; resolves once it is stored.
   * `point`: the save guards an effect or a pause, and is durable in every mode; otherwise it is
   * relaxed under `durability: 'points'` (it survives this process's crash, not a power cut).
   */
  flush(point = true): Promise<void> {
    if (point) this.#pointWanted = true;
    const next = this.#chain.then(() => this.#save());
    this.#chain = next;
    next.catch(() => {}); // the failure is reported through onFailure and to whoever awaits
    return next;
  }

  async #save(): Promise<void> {
    const view = this.#read();
    if (!view) return;
    const durable = this.#durability === 'full' || this.#pointWanted;
    this.#pointWanted = false;
    const parts = headParts(view.run);
    const head = headText(parts);
    const unchanged = head === this.#lastHead && view.history.length === this.#stored;
    // A point after a relaxed write of the same run writes again: that makes it durable.
    if (unchanged && !this.#touched && !(durable && this.#relaxedLeft)) return;
    const append = this.#texts.textsOf(view.history, this.#stored);
    const { written, base } = this.#headToWrite(head, parts);
    try {
      // Fenced: the save is refused in the same statement if this lease is no longer the run's.
      const lease = await this.#lease.current();
      if (this.#version === 0) await this.#joinGroup();
      const sent = monotonic();
      this.#version = await this.store.save(
        this.runId,
        {
          status: view.status,
          head: written,
          ...(base ? { base: baseText(base.parts, base.b) } : {}),
          from: this.#stored,
          append,
          pendingCalls: view.pendingCalls,
          ...(this.#agent === null ? {} : { agent: this.#agent }),
          ...(durable ? {} : { relaxed: true }),
        },
        this.#version,
        lease,
      );
      // The save extended the lease: it is the confirmation a side effect after it starts under.
      this.#lease.saved(lease, sent);
    } catch (error) {
      await this.giveUp(error);
      throw error;
    }
    this.#stored += append.length;
    this.#lastHead = head;
    if (base) this.#base = base;
    this.#touched = false;
    this.#relaxedLeft = !durable;
  }

  /**
   * Before a run's first save: it joins its group, so that a crash cannot leave it out. A run made
   * without a group whose id the store has in one (made before, and deleted) stays in that group:
   * a run id never runs outside the group it was created in.
   */
  async #joinGroup(): Promise<void> {
    const groups = groupBudgetsOf(this.store);
    if (!groups) return;
    if (this.#group !== null) {
      await groups.joinGroup(this.runId, this.#group);
      return;
    }
    const found = await groups.groupOf(this.runId);
    if (found === null) return;
    this.#group = found;
    this.#onGroup?.(found);
  }

  /**
   * The head a save writes, and the new base it writes with it (null: none). Whole when the
   * store keeps no bases. Else a delta against the run's base while the delta is at most half
   * the whole head; past that (or with no base yet) the save writes the whole head as the new
   * base, stamped with the version it makes, and an empty delta: a save's head stays small
   * whatever the run's state, and a base is written again only when the state drifted from it.
   */
  #headToWrite(head: string, parts: Base['parts']): { written: string; base: Base | null } {
    if (!this.#keepsBase) return { written: head, base: null };
    const delta = this.#base && deltaText(this.#base, parts);
    if (delta && delta.length * 2 <= head.length) return { written: delta, base: null };
    const base = { b: this.#version + 1, parts };
    return { written: `{"b":${base.b}}`, base };
  }
}

/**
 * Stores a new run at `view` (its first save, version 1) under a lease that is released at once,
 * so a worker may claim it straight away; joined to `group` first, so a worker's `Agent.load`
 * finds it there. Raced by another run of the same id, the store refuses the save.
 * @throws ConflictError when the store has a run `runId` already.
 */
export async function storeNewRun(
  store: CheckpointStore,
  run: { runId: string; view: RunView; agent: string | null; group: string | null; lease: LeaseTerms },
): Promise<void> {
  const saver = new Saver({
    store,
    runId: run.runId,
    version: 0,
    stored: 0,
    head: null,
    lease: run.lease,
    claimed: null,
    agent: run.agent,
    group: run.group,
    read: () => run.view,
    onFailure: () => {},
  });
  try {
    await saver.flush();
  } finally {
    await saver.releaseOnly();
  }
}
