/**
 * The queue behind group commit (sqlite/group-commit.ts, postgres/group-commit.ts): what is added
 * in one event-loop turn is handed over as one group at the turn's end (`setImmediate`), each
 * item with the promise it settles. A store's writes that wait together then share one
 * transaction or one statement.
 */

/** An item waiting in a group, and how to settle its promise (`R`: what it resolves with). */
export interface Waiting<T, R = number> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class TurnQueue<T, R = number> {
  readonly #handOver: (group: Waiting<T, R>[]) => void;
  #waiting: Waiting<T, R>[] = [];
  #turn: NodeJS.Immediate | null = null;

  /** `handOver`: takes a group (never empty) and settles each item's promise. */
  constructor(handOver: (group: Waiting<T, R>[]) => void) {
    this.#handOver = handOver;
  }

  /** Queues `item` for this turn's group; settled by `handOver`. */
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
    const group = this.#waiting;
    this.#waiting = [];
    if (group.length > 0) this.#handOver(group);
  }
}
