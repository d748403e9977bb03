import type { Clock } from '../clock.js';

interface Timer {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told: `advance(ms)` fires every sleep that falls due. For tests
 * of budgets, expiry, retries and timeouts that never wait for real time.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
 * const agent = new Agent({ policy, tools, clock, approvalTtlMs: 60_000 });
 * await agent.start('goal');
 * clock.advance(60_000);
 * await agent.decide(true); // executes nothing: 'approval expired'
 */
export class ManualClock implements Clock {
  #now: number;
  #timers: Timer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** Sleeps now pending, for tests that wait until the runtime is waiting. */
  get sleepers(): number {
    return this.#timers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer: Timer = { at: this.#now + Math.max(0, ms), resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.#timers = this.#timers.filter((t) => t !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Moves time forward and wakes every sleep due by then, in order. */
  advance(ms: number): void {
    this.#now += ms;
    const due = this.#timers.filter((t) => t.at <= this.#now).sort((a, b) => a.at - b.at);
    this.#timers = this.#timers.filter((t) => t.at > this.#now);
    for (const t of due) t.resolve();
  }
}
