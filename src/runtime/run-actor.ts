/**
 * One run's XState actor: it owns the actor, its subscription, its saves and its observers, and
 * turns events into a settled status. A run restored from a checkpoint does not start its actor
 * until asked to work, so `Agent.resume(blob).checkpoint() === blob` and loading runs nothing.
 */
import { type Actor, createActor } from 'xstate';
import { pendingCalls } from '../../machines/calls.js';
import { latestMessageGrowing, latestSummaryGrowing, modelView } from '../../machines/compaction.js';
import type { AgentContext, AgentEvent, AgentInput, Status } from '../../machines/types.js';
import {
  EntryTexts,
  encodeCheckpoint,
  expectedChildren,
  type PersistedRun,
  statusOfValue,
} from '../checkpoint/index.js';
import { SystemError, TollgateError } from '../errors.js';
import type { Runtime } from '../options.js';
import { type CheckpointStore, groupBudgetsOf } from '../store/contract.js';
import type { RunEvent, RunState } from '../types.js';
import { GroupPort } from './budget-group.js';
import { Drives } from './drives.js';
import { machineFor, type RuntimeMachine } from './host.js';
import { remainingOf } from './limits.js';
import { Observers } from './observe.js';
import type { StoredPlace } from './place.js';
import { registerPorts } from './ports.js';
import { runStateOf } from './run-state.js';
import { type RunView, Saver } from './saver.js';

type Snapshot = ReturnType<Actor<RuntimeMachine>['getSnapshot']>;

/** How a run actor begins: fresh from an input, or from a (validated) persisted run. */
export type Origin = { input: AgentInput } | { run: PersistedRun };

const statusOf = (snapshot: Snapshot): Status => statusOfValue(snapshot.value as PersistedRun['value']);
const isDeciding = (snapshot: Snapshot) =>
  typeof snapshot.value === 'object' && (snapshot.value as { running?: string }).running === 'deciding';

/** What a save writes of a snapshot; null once the actor failed or stopped. */
export function viewOf(s: Snapshot): RunView | null {
  if (s.status === 'error' || s.status === 'stopped') return null;
  const value = s.value as PersistedRun['value'];
  const run = { status: s.status, value, historyValue: {} as Record<string, never>, context: s.context };
  return {
    run,
    status: statusOfValue(value),
    pendingCalls: pendingCalls(s.context.calls),
    history: s.context.history,
  };
}

/**
 * An actor restored from `run`. XState's restore walks the whole context for actor refs to
 * revive (a context never holds one): the history is handed over once the actor is made, on
 * the context object the restored snapshot holds (its own copy; nothing has seen it yet), so the
 * walk is O(1) in the history, not a pass over every entry of a long run's load.
 */
function restored(machine: RuntimeMachine, run: PersistedRun, inspect: { inspect?: Runtime['inspect'] }) {
  const snapshot = { ...run, context: { ...run.context, history: [] } };
  const actor = createActor(machine, { snapshot: snapshot as never, input: undefined as never, ...inspect });
  const context = actor.getSnapshot().context as { history: AgentContext['history'] };
  if (context !== (snapshot.context as unknown)) throw new SystemError('XState copied the restored context');
  context.history = run.context.history;
  return actor;
}

export class RunActor {
  readonly runId: string;
  readonly #runtime: Runtime;
  #actor: Actor<RuntimeMachine>;
  #started = false;
  #fault: unknown = undefined;
  /** The fault is the reason a caller's signal gave (`abandon`), rethrown as it is. */
  #abandoned = false;
  #settling: Promise<Status> | null = null;
  #saver: Saver | null = null;
  readonly #observers = new Observers();
  /** Keys in flight in the checkpoint this run was restored from (write-ahead records). */
  readonly #recovering = new Set<string>();
  readonly #details: () => { runId: string; status: Status };
  /** Its drives' spans, with a tracer. */
  readonly #drives: Drives;
  /** The run's group budget in the store; null: no group. */
  #group: GroupPort | null = null;
  /** The canonical text of each history entry, made once for the saves and the checkpoints. */
  readonly #texts = new EntryTexts();

  constructor(runtime: Runtime, runId: string, origin: Origin, place: StoredPlace | null) {
    this.#runtime = runtime;
    this.runId = runId;
    this.#details = () => ({ runId: this.runId, status: this.status });
    this.#drives = new Drives(runtime.tracer, runtime.agent, () => ({ context: this.context, status: this.status }));
    if ('run' in origin) {
      for (const call of origin.run.context.calls) if (call.state === 'running') this.#recovering.add(call.key);
    }
    if (place?.group) this.#joined(place.store, place.group);
    this.#actor = this.#create(origin);
    if (place) {
      this.#saver = new Saver({
        ...place,
        group: place.group ?? null,
        onGroup: (group) => this.#joined(place.store, group),
        runId,
        agent: runtime.agent,
        durability: runtime.durability,
        texts: this.#texts,
        read: () => this.#view(),
        onFailure: (error) => this.#halt(error),
      });
    }
  }

  #create(origin: Origin): Actor<RuntimeMachine> {
    const inspect = this.#runtime.inspect ? { inspect: this.#runtime.inspect } : {};
    const machine = machineFor(this.#runtime.compaction);
    const actor =
      'run' in origin
        ? restored(machine, origin.run, inspect)
        : createActor(machine, { input: origin.input, ...inspect });
    registerPorts(actor.system, {
      ...this.#runtime,
      runId: this.runId,
      history: () => this.#actor.getSnapshot().context.history,
      view: () => {
        const { history } = this.#actor.getSnapshot().context;
        return modelView(history, latestSummaryGrowing(history), latestMessageGrowing(history));
      },
      remaining: () => remainingOf(this.#actor.getSnapshot().context),
      calls: () => this.#actor.getSnapshot().context.calls,
      approvalTtlMs: () => this.#actor.getSnapshot().context.approvalTtlMs,
      // Write ahead: the run, with this call in flight, is durable before the call is made.
      beforeCall: (point) => this.#saver?.flush(point) ?? Promise.resolve(),
      fence: async (since) => (this.#saver ? (await this.#saver.fence(since)).token : null),
      fenceNow: () => (this.#saver ? this.#saver.fenceNow().token : null),
      token: () => this.#saver?.lease?.token ?? null,
      takeRecovered: (key) => this.#recovering.delete(key),
      delta: (step, delta) => this.#observers.delta(step, delta),
      runSpan: () => this.#drives.span,
      group: () => this.#group,
    });
    return actor;
  }

  /** The run is in `group`: its calls hold and settle their spending there. */
  #joined(store: CheckpointStore, group: string): void {
    const groups = groupBudgetsOf(store);
    if (!groups) throw new SystemError('a run in a group needs a store with group budgets');
    this.#group = new GroupPort(
      groups,
      group,
      this.runId,
      {
        token: () => this.#saver?.lease?.token ?? null,
        refused: (error) => this.#saver?.refused(error),
        unavailable: (error) => (this.#saver ? void this.#saver.giveUp(error) : this.#halt(error)),
      },
      this.#runtime.clock,
    );
  }

  /**
   * Before a new turn of a run that answered: a run at its answer is read without its group (it
   * spent nothing more), and a new turn spends again, so its group is read from the store.
   */
  async rejoinGroup(): Promise<void> {
    const saver = this.#saver;
    if (this.#group !== null || saver === null) return;
    const group = await groupBudgetsOf(saver.store)?.groupOf(this.runId);
    if (group) this.#joined(saver.store, group);
  }

  get started(): boolean {
    return this.#started;
  }

  get status(): Status {
    return statusOf(this.#actor.getSnapshot());
  }

  get context(): AgentContext {
    return this.#actor.getSnapshot().context;
  }

  /** The store version this run last saved or loaded; null without a store. */
  get version(): number | null {
    return this.#saver?.version ?? null;
  }

  get state(): RunState {
    const snapshot = this.#actor.getSnapshot();
    return runStateOf(snapshot.context, statusOf(snapshot));
  }

  /** The persisted run: canonical JSON that `Agent.resume` reads. */
  checkpoint(): string {
    this.throwIfFaulted();
    const view = viewOf(this.#actor.getSnapshot());
    // What XState's getPersistedSnapshot gives, without its walk of the whole context (every
    // history entry, for actor refs a context never holds: O(history) on every call). The
    // children are those the state determines, as in every checkpoint that resumes (the decoder
    // requires it); test/checkpoint-persisted.test.ts holds the two equal in every state.
    const run = view ? { ...view.run, children: expectedChildren(view.run) } : this.#actor.getPersistedSnapshot();
    return encodeCheckpoint(run, this.#texts);
  }

  /** The persisted snapshot, for changes made before the actor starts. */
  persisted(): PersistedRun {
    return this.#actor.getPersistedSnapshot() as unknown as PersistedRun;
  }

  /** Replaces a not-yet-started run (limits changed before it starts: starting would restart a call). */
  replace(run: PersistedRun): void {
    if (this.#started) throw new SystemError('a started run cannot be replaced', this.#details());
    this.#actor = this.#create({ run });
  }

  observe(listener: (event: RunEvent) => void): () => void {
    const snapshot = this.#actor.getSnapshot();
    return this.#observers.add(listener, snapshot.context, statusOf(snapshot), isDeciding(snapshot));
  }

  /** Sends an event to a started run without waiting (limits changed while it works). */
  sendNow(event: AgentEvent): void {
    this.#actor.send(event);
  }

  /** Gives the run's lease up, saving nothing (a run loaded at rest, not yet worked). */
  async releaseLease(): Promise<void> {
    await this.#saver?.releaseOnly();
  }

  /**
   * Saves what changed (without waiting for the run to settle); a run at rest gives its lease up.
   * `force`: writes even if nothing changed (a dropped recorded decision is cleared so).
   */
  async save(force = false): Promise<void> {
    if (force) this.#saver?.touch();
    await this.#saver?.flush();
    if (this.status !== 'running') await this.#saver?.release(() => this.status !== 'running');
  }

  /** Sends `event` and resolves with the status the run settles in, once that is saved. */
  async send(event: AgentEvent): Promise<Status> {
    this.throwIfFaulted();
    if (this.#leaseUnconfirmed) await this.#confirmLease();
    const drive = this.#drives.open(event);
    this.#ensureStarted();
    this.#actor.send(event);
    return this.#drives.traced(drive, this.#settle());
  }

  /** Resolves with the status once the run is no longer `running` and that is saved. */
  async settle(): Promise<Status> {
    const drive = this.status === 'running' ? this.#drives.open(null) : null;
    return this.#drives.traced(drive, this.#settle());
  }

  async #settle(): Promise<Status> {
    this.throwIfFaulted();
    if (this.#leaseUnconfirmed) await this.#confirmLease();
    this.#ensureStarted();
    if (this.status === 'running') {
      this.#settling ??= new Promise<Status>((resolve, reject) => {
        const finish = (settle: () => void) => {
          subscription.unsubscribe();
          this.#settling = null;
          settle();
        };
        // After a failed save the lease is being given up: the caller hears of it once that ended,
        // so a reload right after the rejection is not refused as busy by this very process.
        const fail = () => {
          const error = this.#faultError();
          const released = this.#saver?.givenUp() ?? Promise.resolve();
          finish(() => void released.then(() => reject(error)));
        };
        const subscription = this.#actor.subscribe({
          next: (snapshot) => {
            if (statusOf(snapshot) !== 'running') finish(() => resolve(statusOf(snapshot)));
          },
          error: fail,
          complete: () => {
            if (this.#fault !== undefined) fail();
          },
        });
      });
      await this.#settling;
    }
    await this.#saver?.flush();
    this.throwIfFaulted();
    // At rest (awaiting a human, a budget, done…): the lease goes, so any worker may take it up
    // (unless the next operation began meanwhile and works under it).
    await this.#saver?.release(() => this.status !== 'running');
    return this.status;
  }

  /**
   * Stops the run in this process as a crash at this moment would (the caller's signal was
   * aborted): the actor stops (its calls' signals abort), nothing more is saved, the lease is given
   * up, and every operation rejects with `reason` from now on.
   */
  async abandon(reason: unknown): Promise<void> {
    if (this.#fault === undefined) this.#abandoned = true;
    this.#halt(reason);
    await this.#saver?.releaseOnly();
  }

  throwIfFaulted(): void {
    const fault = this.#fault;
    if (fault === undefined) return;
    if (this.#abandoned) throw fault;
    if (fault instanceof TollgateError) throw fault;
    throw new SystemError(`the run cannot go on in this process: ${String(fault)}`, {
      ...this.#details(),
      cause: fault,
    });
  }

  #faultError(): unknown {
    try {
      this.throwIfFaulted();
    } catch (error) {
      return error;
    }
    return new SystemError('the run stopped unexpectedly', this.#details());
  }

  #view() {
    return viewOf(this.#actor.getSnapshot());
  }

  /** Stops the run in this process for good: after a failed save nothing may run here. */
  #halt(error: unknown): void {
    if (this.#fault !== undefined) return;
    this.#fault = error;
    this.#actor.stop();
  }

  /** A lease adopted at load (a run found `running`, or a worker's claim), not yet confirmed. */
  get #leaseUnconfirmed(): boolean {
    return !this.#started && this.#saver?.leaseUnconfirmed === true;
  }

  /**
   * Before the run is first worked here: a lease adopted at load (a run found `running`, or a
   * worker's claim) is confirmed and renewed from then on, so a lease that lapsed while the
   * loaded agent sat unused, and was taken, stops it here — before any call — for good.
   */
  async #confirmLease(): Promise<void> {
    if (!this.#saver) return;
    try {
      await this.#saver.working();
    } catch (error) {
      this.#halt(error);
      this.throwIfFaulted();
    }
  }

  #ensureStarted(): void {
    if (this.#started) return;
    this.#started = true;
    this.#actor.subscribe({
      // No save per snapshot: a run is saved at its durable points only (see Saver), which the
      // actors and `settle` name by flushing.
      next: (snapshot) => this.#observers.notify(snapshot.context, statusOf(snapshot), isDeciding(snapshot)),
      // Always listen for errors: an unobserved actor error is rethrown asynchronously and
      // would kill the host process (docs/architecture.md, "XState pitfalls").
      error: (error) => {
        this.#fault ??= error;
      },
    });
    this.#actor.start();
  }
}
