/**
 * Batch commit for `PostgresStore`'s claims and releases, as for its saves (batch-commit.ts):
 * those of different runs made in one event-loop turn go to the server as one statement
 * (`claimRuns`, `releaseRuns` in sql.ts). Many runs starting and settling at once then share a
 * round trip and a commit instead of paying one each. A lone claim or release, and a second one
 * of a run already in the batch, take the single path.
 *
 * A claim's first try only is batched: a claim the statement did not make (another owner holds
 * the run) resolves null, and the caller goes on as after a single claim statement that matched
 * nothing (it reads who holds the run, waits or throws `RunBusyError`). A release resolves
 * whether it released, as the single statement says. A batch the server refused as a whole with
 * a deadlock (40P01) changed nothing: each of its items is tried alone; any other failure is that
 * of every item in the batch.
 */
import { TurnQueue, type Waiting } from '../../store/turn-queue.js';
import { sendByRun } from './batch-commit.js';
import type { LeaseRow } from './rows.js';

/** A claim's first try, as the columns it writes. */
export interface ClaimTry {
  runId: string;
  owner: string;
  leaseMs: number;
  /** The claiming process as JSON text, or null. */
  process: string | null;
}

/** A release, as the single statement takes it. */
export interface ReleaseTry {
  runId: string;
  token: number;
}

export interface LeaseBatchesOptions {
  /** Runs the batch claim statement (`claimRuns`) with these values; the leases it made. */
  claimMany: (values: unknown[]) => Promise<(LeaseRow & { run_id: string })[]>;
  /** Runs the batch release statement (`releaseRuns`) with these values; the runs it released. */
  releaseMany: (values: unknown[]) => Promise<{ run_id: string }[]>;
  /** The single claim statement: the lease made, or null when another owner holds the run. */
  claimOne: (claim: ClaimTry) => Promise<LeaseRow | null>;
  /** The single release statement: whether the lease was released. */
  releaseOne: (release: ReleaseTry) => Promise<boolean>;
  /** The store's now for a statement (null: the database's clock), read when it is sent. */
  at: () => string | null;
  /** The SQLSTATE of a failed statement's cause, or null. */
  sqlState: (error: unknown) => string | null;
}

export class LeaseBatches {
  readonly #o: LeaseBatchesOptions;
  readonly #claims = new TurnQueue<ClaimTry, LeaseRow | null>((batch) =>
    this.#send(
      batch,
      (c) => this.#o.claimOne(c),
      (part) => this.#claimMany(part),
    ),
  );
  readonly #releases = new TurnQueue<ReleaseTry, boolean>((batch) =>
    this.#send(
      batch,
      (r) => this.#o.releaseOne(r),
      (part) => this.#releaseMany(part),
    ),
  );

  constructor(options: LeaseBatchesOptions) {
    this.#o = options;
  }

  /** A claim's first try, in this turn's batch: the lease made, or null (another owner holds the run). */
  claim(claim: ClaimTry): Promise<LeaseRow | null> {
    return this.#claims.add(claim);
  }

  /** A release, in this turn's batch: whether it released. */
  release(release: ReleaseTry): Promise<boolean> {
    return this.#releases.add(release);
  }

  /** The batch's statements (`sendByRun`); a batch that deadlocked changed nothing: each item alone. */
  #send<T extends { runId: string }, R>(
    waiting: readonly Waiting<T, R>[],
    one: (item: T) => Promise<R>,
    many: (part: readonly Waiting<T, R>[]) => Promise<void>,
  ): void {
    const alone = (w: Waiting<T, R>) => void one(w.item).then(w.resolve, w.reject);
    sendByRun(waiting, alone, (part) =>
      many(part).catch((error: unknown) => {
        if (this.#o.sqlState((error as Error).cause) === '40P01') for (const w of part) alone(w);
        else for (const w of part) w.reject(error);
      }),
    );
  }

  async #claimMany(part: readonly Waiting<ClaimTry, LeaseRow | null>[]): Promise<void> {
    const rows = await this.#o.claimMany([
      part.map((w) => w.item.runId),
      part.map((w) => w.item.owner),
      part.map((w) => w.item.leaseMs),
      this.#o.at(),
      part.map((w) => w.item.process),
    ]);
    const made = new Map(rows.map((row) => [row.run_id, row]));
    for (const w of part) w.resolve(made.get(w.item.runId) ?? null);
  }

  async #releaseMany(part: readonly Waiting<ReleaseTry, boolean>[]): Promise<void> {
    const rows = await this.#o.releaseMany([part.map((w) => w.item.runId), part.map((w) => w.item.token)]);
    const released = new Set(rows.map((row) => row.run_id));
    for (const w of part) w.resolve(released.has(w.item.runId));
  }
}
