/**
 * The Agent facade: one run of the agent machine, with the operations a service embeds.
 *
 * The machine (machines/agent.ts) decides; this class owns the actor, gives it the real policy
 * and tool actors, turns calls into events and waits until the run settles (any status but
 * `running`). A resumed agent does not start its actor until asked to work, so
 * `Agent.resume(blob).checkpoint() === blob` and nothing runs by merely loading a run.
 * With a store, every change is saved (src/journal.ts), and always before a tool runs.
 */
import { randomUUID } from 'node:crypto';
import { type Actor, createActor } from 'xstate';
import { type AgentMachine, agentMachine, appendInPlace, historyActions } from '../machines/agent.js';
import type { AgentContext, AgentEvent, AgentInput, HistoryEntry, Limits, Status } from '../machines/types.js';
import { type ActorHost, policyActor, type Remaining, toolActor } from './actors.js';
import { decodeCheckpoint, encodeCheckpoint, type PersistedRun, statusOfValue, withLimits } from './checkpoint.js';
import { isoTime } from './clock.js';
import {
  CheckpointError,
  NoPendingApprovalError,
  OptionsError,
  RunNotFoundError,
  RunStateError,
  StaleApprovalError,
  SystemError,
  TollgateError,
} from './errors.js';
import { Journal, type RunView } from './journal.js';
import { checkKeys, showValue } from './option-keys.js';
import { checkText, parseAgentOptions, parseLimits, parseResumeOptions, type Runtime } from './options.js';
import { type CheckpointStore, joinRun } from './store.js';
import type { AgentOptions, DecideOptions, ResumeOptions, RunEvent, RunState } from './types.js';

type MachineSnapshot = ReturnType<Actor<AgentMachine>['getSnapshot']>;

/** Where a stored run lives: its store, the version read, and what is stored already. */
interface StoredPlace {
  store: CheckpointStore;
  version: number;
  stored: number;
  head: string | null;
}

/** Set by `Agent.resume`/`Agent.load` for the constructor they call: the restored run. */
let restoring: { run: PersistedRun; place: StoredPlace | null; call: string } | null = null;

const FINAL: readonly Status[] = ['done', 'cancelled'];

/** The Agent each actor system (one per Agent's actor) works for. */
const hosts = new WeakMap<object, ActorHost>();

function hostOf(system: object): ActorHost {
  const host = hosts.get(system);
  if (!host) throw new SystemError('an actor ran outside of its Agent');
  return host;
}

/**
 * The machine with the real actors, made once. The actor's snapshots are read once each (the
 * journal and observers copy what they keep), so the history can grow in place: O(1) per step,
 * not the pure machine's O(history) copy.
 */
const runtimeMachine = agentMachine.provide({
  actors: { policy: policyActor(hostOf), tool: toolActor(hostOf) },
  actions: historyActions(appendInPlace),
});

/** What the budgets leave, as a policy's `ctx.remaining` tells it. */
function remainingOf(c: AgentContext): Remaining {
  const { limits, usage } = c;
  return {
    steps: Math.max(0, limits.maxSteps - c.steps),
    tokens: limits.maxTokens === null ? null : Math.max(0, limits.maxTokens - usage.inputTokens - usage.outputTokens),
    activeMs: limits.maxActiveMs === null ? null : Math.max(0, limits.maxActiveMs - c.activeMs),
  };
}

function statusOf(snapshot: MachineSnapshot): Status {
  return statusOfValue(snapshot.value as PersistedRun['value']);
}

/**
 * One agent run.
 *
 * @example
 * const agent = new Agent({ policy, tools, maxSteps: 8, runId: 'run-1' });
 * await agent.start('email ops the refund policy'); // 'awaiting_approval'
 * const blob = agent.checkpoint();
 * const again = Agent.resume(blob, { policy, tools });
 * await again.decide(true, 'ok');                   // 'done'
 */
export class Agent {
  /** The run's id: part of every idempotency key. */
  readonly runId: string;
  readonly #runtime: Runtime;
  #actor: Actor<AgentMachine>;
  #started = false;
  #fault: unknown = undefined;
  #settling: Promise<Status> | null = null;
  #journal: Journal | null = null;
  readonly #observers = new Set<(event: RunEvent) => void>();
  #seen: { entries: number; phase: string; status: Status | null } | null = null;
  /** Keys in flight in the checkpoint this agent was resumed from (write-ahead records). */
  readonly #recovering = new Set<string>();

  constructor(options: AgentOptions) {
    const restored = restoring;
    restoring = null;
    if (restored) {
      // Options were checked by Agent.resume / Agent.load.
      const { run, place } = restored;
      this.#runtime = parseResumeOptions(options, restored.call).runtime;
      this.runId = run.context.runId;
      if (run.context.inflight) this.#recovering.add(run.context.inflight.key);
      this.#actor = this.#createActor(run);
      if (place) this.#attach(place);
      return;
    }
    const parsed = parseAgentOptions(options);
    this.#runtime = parsed.runtime;
    this.runId = parsed.runId ?? randomUUID();
    this.#actor = this.#createActor(null, {
      runId: this.runId,
      limits: parsed.limits,
      approvalTtlMs: parsed.approvalTtlMs,
    });
    if (options.store) this.#attach({ store: options.store, version: 0, stored: 0, head: null });
  }

  /**
   * Brings a run back from a checkpoint, in this process or any other. Limits given here
   * replace the checkpoint's. Nothing runs until `run()`, `decide()` or `cancel()`.
   * @throws CheckpointError when the blob is not a checkpoint this version can resume.
   */
  static resume(blob: string, options: ResumeOptions): Agent {
    return Agent.#restore(blob, options, null, 'Agent.resume');
  }

  /**
   * Brings a run back from a store, in this process or any other. Every change is saved back,
   * each save expecting the version it read: a stale writer gets a `ConflictError`.
   * @throws RunNotFoundError when the store has no such run.
   * @throws CheckpointError when the stored run is not valid.
   */
  static async load(store: CheckpointStore, runId: string, options: ResumeOptions): Promise<Agent> {
    checkText('Agent.load', 'runId', runId);
    parseResumeOptions(options, 'Agent.load');
    const record = await store.load(runId);
    if (!record) throw new RunNotFoundError(`load: no run ${JSON.stringify(runId)} in the store`, { runId });
    const place = { store, version: record.version, stored: record.entries.length, head: record.head };
    try {
      return Agent.#restore(joinRun(record.head, record.entries), options, place, 'Agent.load');
    } catch (error) {
      if (!(error instanceof CheckpointError)) throw error;
      // A damaged stored run: say which one, so the inbox can point at it.
      throw new CheckpointError(`Agent.load: run ${JSON.stringify(runId)}: ${error.message}`, error.path, {
        runId,
        cause: error,
      });
    }
  }

  static #restore(blob: string, options: ResumeOptions, place: StoredPlace | null, call: string): Agent {
    const parsed = parseResumeOptions(options, call);
    const decoded = decodeCheckpoint(blob);
    const run = Object.keys(parsed.limits).length > 0 ? withLimits(decoded, parsed.limits) : decoded;
    restoring = { run, place, call };
    try {
      return new Agent(options as AgentOptions);
    } finally {
      restoring = null;
    }
  }

  /** The store version this agent last saved or loaded (0 before the first save); null without a store. */
  get version(): number | null {
    return this.#journal?.version ?? null;
  }

  /** The run's status: the machine's top-level state. */
  get status(): Status {
    return statusOf(this.#actor.getSnapshot());
  }

  /** The whole run as plain JSON (a copy: changing it changes nothing). */
  get state(): RunState {
    const snapshot = this.#actor.getSnapshot();
    const c = snapshot.context;
    return structuredClone({
      runId: c.runId,
      status: statusOf(snapshot),
      history: c.history,
      steps: c.steps,
      usage: c.usage,
      activeMs: c.activeMs,
      limits: c.limits,
      pending: c.pending,
      answer: c.answer,
      stoppedBy: c.stoppedBy,
      error: c.error,
      cancelReason: c.cancelReason,
      inflight: c.inflight && { key: c.inflight.key, tool: c.inflight.tool, step: c.inflight.step },
    });
  }

  /** The persisted run: canonical JSON that `Agent.resume` reads. Valid at any moment. */
  checkpoint(): string {
    this.#throwIfFaulted();
    return encodeCheckpoint(this.#actor.getPersistedSnapshot());
  }

  /**
   * Starts the run with the user's goal and runs until it settles.
   * @throws RunStateError if the run is not `idle`.
   */
  async start(goal: string): Promise<Status> {
    this.#checkText('start', 'goal', goal);
    this.#expect(['idle'], 'start');
    return this.#send({ type: 'START', goal });
  }

  /**
   * Continues a resumable run: one restored mid-run, one that `failed` (the policy is tried
   * again), one whose budget was raised, one whose pending approval has expired. Otherwise
   * returns the status unchanged.
   * @throws RunStateError if the run was never started.
   */
  async run(): Promise<Status> {
    const status = this.status;
    if (status === 'idle') {
      throw new RunStateError(
        'run: the run has not started; call start(goal)',
        ['running', 'failed', 'budget_exhausted'],
        this.#details(),
      );
    }
    if (status === 'running') return this.#settle();
    if (status === 'failed' || status === 'budget_exhausted') return this.#send({ type: 'RUN' });
    if (status === 'awaiting_approval') {
      const expiresAt = this.#actor.getSnapshot().context.pending?.expiresAt;
      const now = this.#runtime.clock.now();
      if (expiresAt && now >= Date.parse(expiresAt)) return this.#send({ type: 'EXPIRE', at: isoTime(now) });
    }
    return status;
  }

  /**
   * Decides the pending approval. `true` runs the call exactly once with its key; `false`
   * tells the model `denied by human: <note>` and runs nothing. After `pending.expiresAt`,
   * either way, nothing runs and the model is told `approval expired`.
   * @throws NoPendingApprovalError if nothing awaits approval.
   * @throws StaleApprovalError if `opts.callId` is not the pending call's id.
   */
  async decide(approved: boolean, note = '', opts: DecideOptions = {}): Promise<Status> {
    if (typeof approved !== 'boolean')
      throw new OptionsError(`decide: approved must be true or false, got ${showValue(approved)}`, this.#details());
    this.#checkText('decide', 'note', note);
    try {
      checkKeys('decide', opts, ['callId', 'by']);
    } catch (error) {
      const hint = typeof opts === 'string' ? ' (to name the call you reviewed, pass { callId })' : '';
      throw new OptionsError(`${(error as Error).message}${hint}`, this.#details());
    }
    if (opts.by !== undefined) this.#checkText('decide', 'by', opts.by);
    if (opts.callId !== undefined) this.#checkText('decide', 'callId', opts.callId);
    const pending = this.#actor.getSnapshot().context.pending;
    if (this.status !== 'awaiting_approval' || !pending) {
      throw new NoPendingApprovalError(
        `decide: no call awaits approval (status ${this.status})`,
        ['awaiting_approval'],
        this.#details(),
      );
    }
    if (opts.callId !== undefined && opts.callId !== pending.id) {
      throw new StaleApprovalError(
        `decide: call ${JSON.stringify(opts.callId)} is not the pending call ${JSON.stringify(pending.id)}`,
        String(opts.callId),
        pending.id,
        this.#details(),
      );
    }
    const decision = { callId: pending.id, by: opts.by ?? 'human', note, at: isoTime(this.#runtime.clock.now()) };
    return this.#send({ type: approved ? 'APPROVE' : 'DENY', ...decision });
  }

  /**
   * Cancels the run from any status but `done` and `cancelled`. A policy or tool call in flight
   * has its signal aborted.
   * @throws RunStateError if the run has already ended.
   */
  async cancel(reason = ''): Promise<Status> {
    this.#checkText('cancel', 'reason', reason);
    this.#expect(['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed'], 'cancel');
    return this.#send({ type: 'CANCEL', reason });
  }

  /**
   * Changes budget limits (raise them, then `run()` continues a `budget_exhausted` run).
   * @returns the new limits.
   * @throws RunStateError if the run has already ended.
   */
  extendBudget(limits: Partial<Limits>): Limits {
    const given = parseLimits(limits);
    this.#expect(['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed'], 'extendBudget');
    if (this.#started) {
      this.#actor.send({ type: 'EXTEND_BUDGET', limits: given });
    } else {
      // Not started (e.g. just resumed mid-call): starting would restart the call, so the
      // limits are written into the snapshot the actor will start from.
      const run = this.#actor.getPersistedSnapshot() as unknown as PersistedRun;
      this.#actor = this.#createActor(withLimits(run, given));
    }
    void this.#journal?.flush(); // saved by the next settle at the latest
    return structuredClone(this.#actor.getSnapshot().context.limits);
  }

  /**
   * Calls `listener` as the run progresses: each history entry as it is appended, each policy
   * and tool call as it starts, each status change. A listener that throws is ignored.
   * @returns a function that stops observing.
   */
  observe(listener: (event: RunEvent) => void): () => void {
    if (this.#observers.size === 0) {
      const snapshot = this.#actor.getSnapshot();
      this.#seen = {
        entries: snapshot.context.history.length,
        phase: JSON.stringify(snapshot.value),
        status: statusOf(snapshot),
      };
    }
    this.#observers.add(listener);
    return () => this.#observers.delete(listener);
  }

  #notify(snapshot: MachineSnapshot): void {
    if (this.#observers.size === 0) return;
    const c = snapshot.context;
    const phase = JSON.stringify(snapshot.value);
    const seen = this.#seen ?? { entries: 0, phase: '', status: null };
    const events: RunEvent[] = [];
    for (let i = seen.entries; i < c.history.length; i++) {
      events.push({ type: 'entry', index: i, entry: structuredClone(c.history[i] as HistoryEntry) });
    }
    const status = statusOf(snapshot);
    if (phase !== seen.phase) {
      const value = snapshot.value as PersistedRun['value'];
      if (typeof value === 'object' && value.running === 'deciding')
        events.push({ type: 'deciding', step: c.steps + 1 });
      else if (typeof value === 'object' && c.inflight) {
        const { key, tool, args, step } = c.inflight;
        events.push({ type: 'executing', call: structuredClone({ key, tool, args, step }) });
      }
    }
    // A status event on a change of status only, not on every phase of `running`.
    if (status !== seen.status) events.push({ type: 'status', status });
    this.#seen = { entries: c.history.length, phase, status };
    for (const event of events) {
      for (const listener of this.#observers) {
        try {
          listener(event);
        } catch {
          // An observer must never break the run it observes.
        }
      }
    }
  }

  #host(): ActorHost {
    return {
      ...this.#runtime,
      runId: this.runId,
      recovering: this.#recovering,
      history: () => this.#actor.getSnapshot().context.history,
      remaining: () => remainingOf(this.#actor.getSnapshot().context),
      // Write ahead: the run, with this call in flight, is durable before the call is made.
      durable: () => this.#journal?.flush() ?? Promise.resolve(),
    };
  }

  #createActor(run: PersistedRun | null, input?: AgentInput): Actor<AgentMachine> {
    const actor = run
      ? createActor(runtimeMachine, { snapshot: run as never, input: undefined as never })
      : createActor(runtimeMachine, { input: input as AgentInput });
    hosts.set(actor.system, this.#host());
    return actor;
  }

  #attach(place: StoredPlace): void {
    this.#journal = new Journal({
      ...place,
      runId: this.runId,
      read: () => this.#view(),
      onFailure: (error) => this.#halt(error),
    });
  }

  #view(): RunView | null {
    const s = this.#actor.getSnapshot();
    if (s.status === 'error' || s.status === 'stopped') return null;
    const value = s.value as PersistedRun['value'];
    const run = { status: s.status, value, historyValue: {} as Record<string, never>, context: s.context };
    return { run, status: statusOfValue(value), pending: s.context.pending, history: s.context.history };
  }

  /** Stops the run in this process for good: after a failed save nothing may run here. */
  #halt(error: unknown): void {
    if (this.#fault !== undefined) return;
    this.#fault = error;
    this.#actor.stop();
  }

  #details() {
    return { runId: this.runId, status: this.status };
  }

  /** `checkText`, with the run's id and status on the error. */
  #checkText(call: string, name: string, value: unknown): void {
    try {
      checkText(call, name, value);
    } catch (error) {
      throw new OptionsError((error as Error).message, this.#details());
    }
  }

  #expect(allowed: readonly Status[], operation: string): void {
    const status = this.status;
    if (!allowed.includes(status)) {
      const why = FINAL.includes(status) ? 'the run has ended' : `expected ${allowed.join(' or ')}`;
      throw new RunStateError(`${operation}: the run is ${status}; ${why}`, allowed, this.#details());
    }
  }

  #throwIfFaulted(): void {
    const fault = this.#fault;
    if (fault === undefined) return;
    if (fault instanceof TollgateError) throw fault;
    throw new SystemError(`the run cannot go on in this process: ${String(fault)}`, {
      ...this.#details(),
      cause: fault,
    });
  }

  #faultError(): unknown {
    try {
      this.#throwIfFaulted();
    } catch (error) {
      return error;
    }
    return new SystemError('the run stopped unexpectedly', this.#details());
  }

  #ensureStarted(): void {
    if (this.#started) return;
    this.#started = true;
    this.#actor.subscribe({
      next: (snapshot) => {
        this.#notify(snapshot);
        void this.#journal?.flush();
      },
      // Always listen for errors: an unobserved actor error is rethrown asynchronously and
      // would kill the host process (ARCHITECTURE.md, XState pitfalls).
      error: (error) => {
        this.#fault ??= error;
      },
    });
    this.#actor.start();
  }

  async #send(event: AgentEvent): Promise<Status> {
    this.#throwIfFaulted();
    this.#ensureStarted();
    this.#actor.send(event);
    return this.#settle();
  }

  /** Resolves with the status once the run is no longer `running` and that is saved. */
  async #settle(): Promise<Status> {
    this.#throwIfFaulted();
    this.#ensureStarted();
    if (this.status === 'running') {
      this.#settling ??= new Promise<Status>((resolve, reject) => {
        const finish = (settle: () => void) => {
          subscription.unsubscribe();
          this.#settling = null;
          settle();
        };
        const fail = () => finish(() => reject(this.#faultError()));
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
    await this.#journal?.flush();
    this.#throwIfFaulted();
    return this.status;
  }
}
