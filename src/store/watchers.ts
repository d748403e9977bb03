/**
 * In-process `watch` for the stores that cannot hear other processes (file, SQLite): the
 * listeners of this store object, told after an operation of this process that may have made a
 * run runnable. Other processes' changes are seen at a worker's next poll.
 */
export class Watchers {
  readonly #listeners = new Set<() => void>();

  /** Adds `listener`; @returns a function that removes it (a listener of its own per call, so one function watched twice is stopped twice). */
  add(listener: () => void): () => Promise<void> {
    const own = () => listener();
    this.#listeners.add(own);
    return async () => {
      this.#listeners.delete(own);
    };
  }

  /** Tells every listener, after the current operation; a listener that throws harms no other. */
  notify(): void {
    if (this.#listeners.size === 0) return;
    queueMicrotask(() => {
      for (const listener of this.#listeners) {
        try {
          listener();
        } catch {
          // A watcher's failure is its own.
        }
      }
    });
  }
}
