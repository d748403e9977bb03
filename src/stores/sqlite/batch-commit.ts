/**
 * Batch commit for `SqliteStore.save`: the saves that wait in one event-loop turn share one
 * `BEGIN IMMEDIATE` transaction, so many runs working at once pay one fsync per turn instead of
 * one each. Each save still runs in a savepoint of its own (better-sqlite3 nests a transaction
 * function so): one refused on its version or its lease is rolled back alone and rejected with
 * its own error, and the others commit. A batch whose BEGIN or COMMIT fails (the file locked past
 * the busy timeout, a full disk) wrote nothing, and every save in it is rejected.
 */
import type Database from 'better-sqlite3';
import { UserError } from '../../errors.js';
import type { Lease, RunWrite } from '../../store/contract.js';
import { type Waiting as Queued, TurnQueue } from '../../store/turn-queue.js';

type SaveArgs = [runId: string, write: RunWrite, expectedVersion: number, lease: Lease | undefined];
type Outcome = { version: number } | { error: unknown };
type Waiting = Queued<SaveArgs>;

export class SaveBatches {
  readonly #db: Database.Database;
  readonly #synchronous: 'FULL' | 'NORMAL';
  /** Turns a thrown error into the store's typed one. */
  readonly #fault: (error: unknown) => unknown;
  readonly #all: { immediate(batch: readonly Waiting[]): Outcome[] };
  readonly #queue = new TurnQueue<SaveArgs>((batch) => this.#settle(batch));

  /** `one`: a single save as a better-sqlite3 transaction function (nested here: a savepoint). */
  constructor(
    db: Database.Database,
    synchronous: 'FULL' | 'NORMAL',
    one: (...args: SaveArgs) => number,
    fault: (error: unknown) => unknown,
  ) {
    this.#db = db;
    this.#synchronous = synchronous;
    this.#fault = fault;
    this.#all = db.transaction((batch: readonly Waiting[]) =>
      batch.map((w): Outcome => {
        try {
          return { version: one(...w.item) };
        } catch (error) {
          return { error };
        }
      }),
    );
  }

  /** Queues a save for this turn's batch; resolves with its version once the batch committed. */
  add(...args: SaveArgs): Promise<number> {
    return this.#queue.add(args);
  }

  /** Commits what waits now (the store closing does not wait for the next turn). */
  flush(): void {
    this.#queue.flush();
  }

  #settle(batch: readonly Waiting[]): void {
    let outcomes: Outcome[];
    try {
      outcomes = this.#commit(batch);
    } catch (error) {
      const fault = this.#fault(error);
      for (const w of batch) w.reject(fault);
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i] as Outcome;
      if ('version' in outcome) w.resolve(outcome.version);
      else w.reject(this.#fault(outcome.error));
    });
  }

  /**
   * One transaction for the batch: fsynced unless every save in it is relaxed (then committed at
   * synchronous = NORMAL, the next FULL commit syncing it in order; executed each time, as SQLite
   * applies this pragma when it is prepared).
   */
  #commit(batch: readonly Waiting[]): Outcome[] {
    if (!this.#db.open) throw new UserError('SqliteStore.save: the store was closed before the save was made');
    const relaxed = this.#synchronous === 'FULL' && batch.every((w) => w.item[1].relaxed === true);
    if (!relaxed) return this.#all.immediate(batch);
    this.#db.exec('PRAGMA synchronous = NORMAL');
    try {
      return this.#all.immediate(batch);
    } finally {
      this.#db.exec(`PRAGMA synchronous = ${this.#synchronous}`);
    }
  }
}
