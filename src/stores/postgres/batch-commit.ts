/**
 * Batch commit for `PostgresStore.save`: the saves of different runs that wait in one event-loop
 * turn go to the server as one statement (`saveRuns` in sql.ts), so many runs working at once
 * share a round trip, a plan and a commit instead of paying one each (at most `MAX_BATCH` saves
 * a statement). A lone save, and a second save of a run already in the batch, take the
 * single-save path.
 *
 * Each save in a batch is still matched or refused alone: the statement makes those whose lease
 * and version match and says which. One it did not make wrote nothing, and is tried again alone
 * by the single-save path, which refuses it with its own typed error (or makes it, if what
 * refused it is gone, as a single save would). A batch the server refused as a whole (an entry's
 * key already taken, a deadlock with another writer's batch) wrote nothing either: each of its
 * saves is tried alone. Any other failure (the connection broke, a timeout) is that of every
 * save in the batch, with the single save's message: the outcome is unknown, load the run.
 */
import type { Lease } from '../../store/contract.js';
import { type Waiting as Queued, TurnQueue } from '../../store/turn-queue.js';

/** A checked save as the columns it writes (taken when `save` is called: nothing read later). */
export interface SaveRow {
  runId: string;
  status: string;
  head: string;
  from: number;
  append: readonly string[];
  /** The pending calls as JSON text, or null when none. */
  pending: string | null;
  /** The earliest expiry of the pending calls (ISO-8601), or null. */
  expiry: string | null;
  /** The lease the save is made under, if any (checked: its token and length are numbers). */
  lease: Lease | undefined;
  agent: string | null;
  relaxed: boolean;
  /** The run's new base, or null: keep the stored one. */
  base: string | null;
  expectedVersion: number;
}

/**
 * The most saves one statement carries: a larger batch is sent as several statements (on as many
 * pooled connections), so a statement's size and the time its locks are held stay bounded.
 */
export const MAX_BATCH = 256;

/**
 * A turn's batch as statements, for saves and for claims and releases (lease-batches.ts): one
 * item per run in a statement (a second of the same run goes `alone`), at most MAX_BATCH items a
 * statement (`send`), and a statement of one item alone too.
 */
export function sendByRun<T extends { runId: string }, R>(
  waiting: readonly Queued<T, R>[],
  alone: (w: Queued<T, R>) => void,
  send: (part: Queued<T, R>[]) => void,
): void {
  const batch: Queued<T, R>[] = [];
  const runs = new Set<string>();
  for (const w of waiting) {
    if (runs.has(w.item.runId)) alone(w);
    else {
      runs.add(w.item.runId);
      batch.push(w);
    }
  }
  for (let from = 0; from < batch.length; from += MAX_BATCH) {
    const part = batch.slice(from, from + MAX_BATCH);
    if (part.length === 1) alone(part[0] as Queued<T, R>);
    else send(part);
  }
}

/** A statement failed as a whole for a reason that lets each save be tried alone. */
const RETRY_ALONE = new Set(['23505', '40P01']);

type Waiting = Queued<SaveRow>;

export interface SaveBatchesOptions {
  /** Runs the batch statement with these values; the rows of the saves it made. */
  many: (values: unknown[]) => Promise<{ run_id: string; version: number }[]>;
  /** The single-save path: makes the save or refuses it with its typed error. */
  one: (save: SaveRow) => Promise<number>;
  /** The store's now for a statement (null: the database's clock). */
  at: () => string | null;
  /** The SQLSTATE of a failed statement's cause, or null. */
  sqlState: (error: unknown) => string | null;
}

export class SaveBatches {
  readonly #o: SaveBatchesOptions;
  readonly #queue = new TurnQueue<SaveRow>((waiting) => this.#send(waiting));

  constructor(options: SaveBatchesOptions) {
    this.#o = options;
  }

  /** Queues a save for this turn's batch; resolves with its version once it is committed. */
  add(save: SaveRow): Promise<number> {
    return this.#queue.add(save);
  }

  #send(waiting: readonly Waiting[]): void {
    // A second save of a run goes alone: its version cannot match both.
    sendByRun(
      waiting,
      (w) => this.#alone(w),
      (part) => void this.#commit(part),
    );
  }

  #alone(w: Waiting): void {
    this.#o.one(w.item).then(w.resolve, w.reject);
  }

  async #commit(batch: readonly Waiting[]): Promise<void> {
    let made: Map<string, number>;
    try {
      const rows = await this.#o.many(valuesOf(batch, this.#o.at()));
      made = new Map(rows.map((row) => [row.run_id, row.version]));
    } catch (error) {
      if (RETRY_ALONE.has(this.#o.sqlState((error as Error).cause) ?? '')) {
        for (const w of batch) this.#alone(w);
      } else {
        for (const w of batch) w.reject(error);
      }
      return;
    }
    for (const w of batch) {
      const version = made.get(w.item.runId);
      if (version === undefined) this.#alone(w);
      else w.resolve(version);
    }
  }
}

/** The batch statement's parameters: one array per column, the entries flattened. */
function valuesOf(batch: readonly Waiting[], at: string | null): unknown[] {
  const n = batch.length;
  const runIds = new Array<string>(n);
  const statuses = new Array<string>(n);
  const heads = new Array<string>(n);
  const froms = new Array<number>(n);
  const counts = new Array<number>(n);
  const pending = new Array<string | null>(n);
  const expiries = new Array<string | null>(n);
  const tokens = new Array<number | null>(n);
  const leaseMs = new Array<number | null>(n);
  const agents = new Array<string | null>(n);
  const bases = new Array<string | null>(n);
  const expected = new Array<number>(n);
  const bodies: string[] = [];
  const entryRuns: string[] = [];
  const indexes: number[] = [];
  let relaxed = true;
  for (let i = 0; i < n; i++) {
    const save = (batch[i] as Waiting).item;
    runIds[i] = save.runId;
    statuses[i] = save.status;
    heads[i] = save.head;
    froms[i] = save.from;
    counts[i] = save.append.length;
    pending[i] = save.pending;
    expiries[i] = save.expiry;
    tokens[i] = save.lease?.token ?? null;
    leaseMs[i] = save.lease?.leaseMs ?? null;
    agents[i] = save.agent;
    bases[i] = save.base;
    expected[i] = save.expectedVersion;
    relaxed &&= save.relaxed;
    for (let k = 0; k < save.append.length; k++) {
      bodies.push(save.append[k] as string);
      entryRuns.push(save.runId);
      indexes.push(save.from + k);
    }
  }
  return [
    runIds,
    statuses,
    heads,
    froms,
    counts,
    pending,
    at,
    expiries,
    tokens,
    leaseMs,
    agents,
    relaxed,
    bases,
    expected,
    bodies,
    entryRuns,
    indexes,
  ];
}
