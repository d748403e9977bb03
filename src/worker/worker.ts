/**
 * The worker: one claim loop that takes runnable runs of its agents from a store and works each
 * until it settles, at most `concurrency` at a time. A paused run lives in the store, never in a
 * worker's memory: any worker can take up any run, and a worker that dies loses nothing but the
 * runs it held, which others take up once its leases lapse (under the crash rules).
 */
import { z } from 'zod';
import type { Status } from '../../machines/types.js';
import { type Clock, MAX_TIMER_MS } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { OptionsError } from '../errors.js';
import { checkOptions, must, type OptionShape } from '../option-schema.js';
import { thisProcess } from '../process-identity.js';
import type { CheckpointStore, Lease } from '../store/contract.js';
import { parseWorkerOptions, type WorkerOptions, type WorkerSettings } from './options.js';
import { Wakeup } from './wakeup.js';
import { workClaimed } from './work.js';

/** Options of `worker.stop`. */
const stopShape = {
  graceful: z.boolean({ error: 'true or false' }).optional(),
  timeoutMs: must(`a number of milliseconds ≥ 0 and ≤ ${MAX_TIMER_MS}`, (e) =>
    z.number(e).min(0, e).max(MAX_TIMER_MS, e),
  ).optional(),
} satisfies OptionShape<StopOptions>;

export interface StopOptions {
  /**
   * true: claim nothing more and wait for the runs in hand to settle (each releases its lease);
   * false: release the runs in hand at once. @default true
   */
  graceful?: boolean;
  /** With `graceful`: release what has not settled after this long. @default no limit */
  timeoutMs?: number;
}

/** What a worker reports to `observe`. */
export type WorkerEvent =
  | { type: 'claimed'; runId: string; agent: string; status: Status }
  | { type: 'settled'; runId: string; agent: string; status: Status }
  | { type: 'error'; runId: string | null; error: unknown }
  | { type: 'released'; runId: string }
  | { type: 'idle' }
  | { type: 'stopped' };

/** The reason a run in hand is stopped with when its worker stops without waiting. */
class WorkerStoppedError extends Error {
  override name = 'WorkerStoppedError';
}

interface InHand {
  lease: Lease;
  done: Promise<void>;
  /** Stops the run in this process (as a crash would): `stop` without waiting. */
  abort: AbortController;
}

/**
 * Claims runnable runs of its agents and works them: runs submitted and not started, runs whose
 * decisions were recorded, runs whose owner died (lease lapsed), runs whose approvals expired.
 *
 * @example
 * const worker = new Worker({ store, agents: [support], concurrency: 8 });
 * await worker.start();
 * process.on('SIGTERM', () => void worker.stop());
 */
export class Worker {
  /** The owner id on this worker's leases. */
  readonly owner: string;
  readonly #store: CheckpointStore;
  readonly #agents: Map<string, AgentDefinition<any>>;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #clock: Clock;
  /** The inspector and tracer given to every run worked, over the definitions' own. */
  readonly #runOptions: WorkerSettings['runOptions'];
  readonly #inHand = new Map<string, InHand>();
  readonly #listeners = new Set<(event: WorkerEvent) => void>();
  readonly #wakeup = new Wakeup();
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #loop: Promise<void> | null = null;
  #unwatch: (() => Promise<void>) | null = null;
  #idle = false;
  /** Runs worked that saved something: `drain` stops when a round claimed only runs with nothing to do. */
  #progressed = 0;

  /** @throws OptionsError on a bad option (unknown keys name the one meant). */
  constructor(options: WorkerOptions) {
    const o = parseWorkerOptions(options);
    this.#store = o.store;
    this.#agents = o.agents;
    this.#runOptions = o.runOptions;
    this.owner = o.owner;
    this.#leaseMs = o.leaseMs;
    this.#concurrency = o.concurrency;
    this.#pollMs = o.pollMs;
    this.#clock = o.clock;
  }

  /** The ids of the runs this worker holds now. */
  get running(): string[] {
    return [...this.#inHand.keys()];
  }

  /**
   * Starts the claim loop (and watches the store, when it can tell of new work). Calling it
   * again while the worker runs does nothing.
   * @throws OptionsError after `stop()`: a stopped worker does not start again.
   */
  async start(): Promise<void> {
    if (this.#state === 'running') return;
    if (this.#state !== 'new') throw new OptionsError('Worker.start: this worker was stopped; make a new one');
    this.#state = 'running';
    if (this.#store.watch) {
      try {
        this.#unwatch = await this.#store.watch(() => this.#wakeup.wake());
      } catch (error) {
        this.#emit({ type: 'error', runId: null, error }); // polling alone still works
      }
    }
    this.#loop = this.#claimLoop();
  }

  /**
   * Works runnable runs until none is left and none is in hand, without starting the loop: for
   * tests and scheduled jobs. Resolves with the number of runs worked.
   */
  async drain(): Promise<number> {
    if (this.#state === 'stopping' || this.#state === 'stopped') {
      throw new OptionsError('Worker.drain: this worker was stopped; make a new one');
    }
    let worked = 0;
    let progressed = this.#progressed;
    for (;;) {
      const claimed = await this.#fill(() => this.#state === 'stopping' || this.#state === 'stopped');
      worked += claimed;
      if (this.#inHand.size === 0 && claimed === 0) return worked;
      // The runs claimed may all have settled while the next claim was on its way: nothing to
      // wait for then (a race of no promises never ends).
      if (this.#inHand.size > 0) await Promise.race([...this.#inHand.values()].map((h) => h.done));
      // Only runs with nothing to do (their clock and the store's disagree on an expiry): they
      // would be claimed again at once, for ever.
      if (this.#inHand.size === 0 && this.#progressed === progressed) return worked;
      progressed = this.#progressed;
    }
  }

  /**
   * Stops the worker: it claims nothing more; graceful (the default), it waits for the runs in
   * hand to settle, releasing those still in hand after `timeoutMs`; else it releases them at
   * once. A released run's call in flight may still finish in this process, but no save of its
   * run is accepted any more; another worker takes the run up under the crash rules.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const { graceful = true, timeoutMs } = checkOptions('Worker.stop', options, stopShape);
    if (this.#state === 'stopped') return;
    this.#state = 'stopping';
    this.#wakeup.wake();
    await this.#loop;
    await this.#unwatch?.().catch(() => {});
    if (graceful) {
      const settled = Promise.all([...this.#inHand.values()].map((h) => h.done));
      if (timeoutMs === undefined) await settled;
      else {
        const timer = new AbortController();
        await Promise.race([settled, this.#clock.sleep(timeoutMs, timer.signal).catch(() => {})]);
        timer.abort();
      }
    }
    // What has not settled stops here first, as a crash would (nothing more starts from it), then
    // its lease is given up: another worker takes the run up under the crash rules.
    const left = [...this.#inHand];
    for (const [, hand] of left) hand.abort.abort(new WorkerStoppedError('the worker stopped without waiting'));
    await Promise.all(left.map(([, hand]) => hand.done));
    for (const [runId, { lease }] of left) {
      await this.#store.release(lease).catch(() => false);
      this.#emit({ type: 'released', runId });
    }
    this.#state = 'stopped';
    this.#emit({ type: 'stopped' });
  }

  /**
   * Calls `listener` with what the worker does: a run claimed, a run settled (with its status),
   * an error (of a run, or of a claim: the worker goes on), a run released by `stop`, `idle`
   * when it found nothing runnable, `stopped`. A listener that throws is ignored.
   * @returns a function that stops the calls.
   */
  observe(listener: (event: WorkerEvent) => void): () => void {
    const own = (event: WorkerEvent) => listener(event);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  async #claimLoop(): Promise<void> {
    const stopping = () => this.#state !== 'running';
    while (!stopping()) {
      await this.#fill(stopping);
      if (stopping()) return;
      await this.#wakeup.wait(this.#pollMs, this.#clock);
    }
  }

  /** Claims runs while there is room and something runnable; returns how many it claimed. */
  async #fill(stopping: () => boolean): Promise<number> {
    let claimed = 0;
    while (!stopping() && this.#inHand.size < this.#concurrency) {
      let next: Awaited<ReturnType<CheckpointStore['claimNext']>>;
      try {
        next = await this.#store.claimNext({
          owner: this.owner,
          leaseMs: this.#leaseMs,
          agents: [...this.#agents.keys()],
          process: thisProcess(),
        });
      } catch (error) {
        this.#emit({ type: 'error', runId: null, error }); // the store is down: try again at the next poll
        return claimed;
      }
      if (next === null) {
        if (!this.#idle) this.#emit({ type: 'idle' });
        this.#idle = true;
        return claimed;
      }
      this.#idle = false;
      if (stopping()) {
        await this.#store.release(next.lease).catch(() => false);
        return claimed;
      }
      claimed++;
      this.#take(next.lease, next.run.agent ?? '', next.run.status);
    }
    return claimed;
  }

  #take(lease: Lease, agent: string, status: Status): void {
    const { runId } = lease;
    const definition = this.#agents.get(agent);
    const abort = new AbortController();
    const done = (async () => {
      this.#emit({ type: 'claimed', runId, agent, status });
      try {
        if (!definition)
          throw new OptionsError(
            `Worker: run ${JSON.stringify(runId)} is of agent ${JSON.stringify(agent)}, which this worker was not given`,
          );
        const worked = await workClaimed(
          this.#store,
          lease,
          definition,
          {
            owner: this.owner,
            leaseMs: this.#leaseMs,
            ...this.#runOptions,
          },
          abort.signal,
        );
        this.#emit({ type: 'settled', runId, agent, status: worked.status });
        // A run worked for nothing (the store found it runnable, the run's clock did not) is
        // claimed again at the next poll, not at once: no busy loop on it.
        if (worked.progressed) {
          this.#progressed++;
          this.#wakeup.wake();
        }
      } catch (error) {
        // The lease is left to lapse (see workClaimed): the run is retried, by any worker, after it.
        if (!abort.signal.aborted) this.#emit({ type: 'error', runId, error });
      } finally {
        this.#inHand.delete(runId);
      }
    })();
    this.#inHand.set(runId, { lease, done, abort });
  }

  #emit(event: WorkerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}
