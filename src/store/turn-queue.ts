/**
 * The queue behind batch commit (sqlite/batch-commit.ts, postgres/batch-commit.ts): what is added
 * in one event-loop turn is handed over as one batch at the turn's end (`setImmediate`), each
 * item with the promise it settles. A store's writes that wait together then share one
 * transaction or one statement.
 */

/** An item waiting in a batch, and how to settle its promise (`R`: what it resolves with). */
export interface Waiting<T, R = number> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class TurnQueue<T, R = number> {
  readonly #handOver: (batch: Waiting<T, R>[]) => void;
  #waiting: Waiting<T, R>[] = [];
  #turn: NodeJS.Immediate | null = null;

  /** `handOver`: takes a batch (never empty) and settles each item's promise. */
  constructor(handOver: (batch: Waiting<T, R>[]) => void) {
    this.#handOver = handOver;
  }

  /** Queues `item` for this turn's batch; settled by `handOver`. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#turn ??= setImmediate(() => this.flush());
    });
  }

  /** Hands over what waits now, without waiting for the turn's end (a store closing). */
  flush(): void {
    if (this.#turn !== null) clearImmediate(this.#turn);
    this.#turn = null;
    const batch = this.#waiting;
    this.#waiting = [];
    if (batch.length > 0) this.#handOver(batch);
  }
}
