/**
 * The claim loop's alarm: it sleeps until the poll interval passes or something wakes it (a
 * store's `watch`, a run settling, `stop`). A wake while it is not sleeping is kept, so a
 * notification between two claims is not lost.
 */
import type { Clock } from '../clock.js';

export class Wakeup {
  #woken = false;
  #wake: (() => void) | null = null;

  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Resolves after `ms` on `clock`, or at once if woken since the last wait. */
  async wait(ms: number, clock: Clock): Promise<void> {
    if (!this.#woken) {
      const timer = new AbortController();
      const woken = new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      await Promise.race([woken, clock.sleep(ms, timer.signal).catch(() => {})]);
      timer.abort();
      this.#wake = null;
    }
    this.#woken = false;
  }
}
