/**
 * The Agent facade: one run, with the operations a service embeds. The machine decides; the run
 * actor (runtime/run-actor.ts) owns the XState actor, its saves and observers; this class checks
 * each call's arguments and turns it into an event. No module state.
 */
import { randomUUID } from 'node:crypto';
import { isExpiredAt } from '../machines/calls.js';
import type { Limits, Status } from '../machines/types.js';
import { decodeCheckpoint, type PersistedRun } from './checkpoint/index.js';
import { isoTime } from './clock.js';
import { CheckpointError, OptionsError, RunNotFoundError, RunStateError } from './errors.js';
import { checkText, parseAgentOptions, parseLimits, parseResumeOptions, type Runtime } from './options.js';
import { readDecisions } from './runtime/decisions.js';
import { withLimits } from './runtime/limits.js';
import { RunActor, type StoredPlace } from './runtime/run-actor.js';
import { type CheckpointStore, joinRun } from './store.js';
import type {
  AgentOptions,
  DecideManyOptions,
  DecideOptions,
  Decisions,
  ResumeOptions,
  RunEvent,
  RunState,
  Tool,
} from './types.js';

const FINAL: readonly Status[] = ['done', 'cancelled'];
const LIVE: readonly Status[] = ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed'];

/** A run restored by `Agent.resume` / `Agent.load`, handed to the constructor. */
const RESTORED = Symbol('tollgate.restored');
interface Restored {
  [RESTORED]: true;
  runtime: Runtime;
  run: PersistedRun;
  place: StoredPlace | null;
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
export class Agent<Tools extends readonly Tool[] = readonly Tool[]> {
  /** The run's id: part of every idempotency key. */
  readonly runId: string;
  readonly #runtime: Runtime;
  readonly #run: RunActor;

  constructor(options: AgentOptions<Tools>);
  /** @internal Used by `Agent.resume` and `Agent.load`. */
  constructor(restored: Restored);
  constructor(options: AgentOptions<Tools> | Restored) {
    if ((options as Restored)[RESTORED] === true) {
      const { runtime, run, place } = options as Restored;
      this.#runtime = runtime;
      this.runId = run.context.runId;
      this.#run = new RunActor(runtime, this.runId, { run }, place);
      return;
    }
    const parsed = parseAgentOptions(options as AgentOptions<Tools>);
    this.#runtime = parsed.runtime;
    this.runId = parsed.runId ?? randomUUID();
    const input = { runId: this.runId, limits: parsed.limits, approvalTtlMs: parsed.approvalTtlMs };
    const store = (options as AgentOptions<Tools>).store;
    // The run is claimed before its first save (start): a constructor cannot wait for a store.
    const place = store
      ? { store, version: 0, stored: 0, head: null, lease: parsed.runtime.lease, claimed: null }
      : null;
    this.#run = new RunActor(parsed.runtime, this.runId, { input }, place);
  }

  /**
   * Brings a run back from a checkpoint, in this process or any other. Limits given here
   * replace the checkpoint's. Nothing runs until `run()`, `decide()` or `cancel()`.
   * @throws CheckpointError when the blob is not a checkpoint this version can resume.
   */
  static resume<Tools extends readonly Tool[] = readonly Tool[]>(
    blob: string,
    options: ResumeOptions<Tools>,
  ): Agent<Tools> {
    return Agent.#restore(blob, options, null, 'Agent.resume') as Agent<Tools>;
  }

  /**
   * Brings a run back from a store, in this process or any other. Every change is saved back,
   * each save expecting the version it read: a stale writer gets a `ConflictError`.
   * @throws RunNotFoundError when the store has no such run.
   * @throws CheckpointError (naming the run) when the stored run is not valid.
   */
  static async load<Tools extends readonly Tool[] = readonly Tool[]>(
    store: CheckpointStore,
    runId: string,
    options: ResumeOptions<Tools>,
  ): Promise<Agent<Tools>> {
    checkText('Agent.load', 'runId', runId);
    const parsed = parseResumeOptions(options, 'Agent.load');
    const terms = parsed.runtime.lease;
    // Claimed before it is read: a run another live process works on is refused (RunBusyError),
    // never loaded and worked twice; what is read under the lease is the latest.
    const lease = await store.claim(runId, {
      owner: terms.owner,
      leaseMs: terms.leaseMs,
      ...(terms.waitMs > 0 ? { wait: terms.waitMs } : {}),
    });
    let agent: Agent<Tools>;
    try {
      const record = await store.load(runId);
      if (!record) throw new RunNotFoundError(`load: no run ${JSON.stringify(runId)} in the store`, { runId });
      const place = {
        store,
        version: record.version,
        stored: record.entries.length,
        head: record.head,
        lease: terms,
        claimed: lease,
      };
      agent = Agent.#restore(
        () => joinRun(record.head, record.entries),
        parsed,
        place,
        'Agent.load',
        runId,
      ) as Agent<Tools>;
    } catch (error) {
      await store.release(lease).catch(() => false);
      throw error;
    }
    // A run at rest is given up at once (claimed again before its next save); a run found
    // `running` (its owner died mid-call) stays claimed for the caller to `run()`.
    if (agent.status !== 'running') await agent.#run.releaseLease();
    return agent;
  }

  static #restore(
    blob: string | (() => string),
    options: ResumeOptions<any> | ReturnType<typeof parseResumeOptions>,
    place: StoredPlace | null,
    call: string,
    runId?: string,
  ): Agent {
    const parsed = 'runtime' in options && 'limits' in options ? options : parseResumeOptions(options, call);
    let decoded: PersistedRun;
    try {
      decoded = decodeCheckpoint(typeof blob === 'function' ? blob() : blob);
    } catch (error) {
      if (!(error instanceof CheckpointError) || runId === undefined) throw error;
      // A damaged stored run: say which one, so the inbox can point at it.
      throw new CheckpointError(`Agent.load: run ${JSON.stringify(runId)}: ${error.message}`, error.path, {
        runId,
        cause: error,
      });
    }
    const run = Object.keys(parsed.limits).length > 0 ? withLimits(decoded, parsed.limits) : decoded;
    return new Agent({ [RESTORED]: true, runtime: parsed.runtime, run, place });
  }

  /** The store version this agent last saved or loaded (0 before the first save); null without a store. */
  get version(): number | null {
    return this.#run.version;
  }

  /** The run's status: the machine's top-level state. */
  get status(): Status {
    return this.#run.status;
  }

  /** The whole run as plain JSON (a copy: changing it changes nothing). */
  get state(): RunState {
    return this.#run.state;
  }

  /** The persisted run: canonical JSON that `Agent.resume` reads. Valid at any moment. */
  checkpoint(): string {
    return this.#run.checkpoint();
  }

  /**
   * Starts the run with the user's goal and runs until it settles.
   * @throws RunStateError if the run is not `idle`.
   */
  async start(goal: string): Promise<Status> {
    this.#checkText('start', 'goal', goal);
    this.#expect(['idle'], 'start');
    return this.#run.send({ type: 'START', goal });
  }

  /**
   * Continues a resumable run: one restored mid-run, one that `failed` (the policy is tried
   * again), one whose budget was raised, one with approvals that have expired (their calls end
   * as `approval expired`). Otherwise returns the status unchanged.
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
    if (status === 'running') return this.#run.settle();
    if (status === 'failed' || status === 'budget_exhausted') return this.#run.send({ type: 'RUN' });
    if (status === 'awaiting_approval') {
      const at = isoTime(this.#runtime.clock.now());
      if (this.#run.context.calls.some((c) => isExpiredAt(c, at))) return this.#run.send({ type: 'EXPIRE', at });
    }
    return status;
  }

  /**
   * Decides pending calls. Two forms:
   *
   * - `decide({ [callId]: { approve: true, note?, args?, always? } | { approve: false, note? } }, { by? })`
   *   decides any subset of the pending calls at once. The whole map is checked first (unknown or
   *   stale id, expired call, edit not allowed or failing the tool's schema): one problem throws a
   *   typed error and nothing is saved or run. Undecided calls stay pending.
   * - `decide(approved, note?, { callId?, by? })` decides one call: the only pending one, or the
   *   one `callId` names. After its `expiresAt`, either way, nothing runs and the model is told
   *   `approval expired`.
   *
   * An approved call runs exactly once with its key; a denial tells the model
   * `denied by human: <note>` and runs nothing.
   * @throws NoPendingApprovalError if nothing awaits approval.
   * @throws StaleApprovalError if a call id is not a pending call's id.
   * @throws ApprovalExpiredError (map form) if a named call has expired.
   * @throws EditRejectedError if edited arguments are not allowed or not valid.
   */
  async decide(decisions: Decisions, options?: DecideManyOptions): Promise<Status>;
  async decide(approved: boolean, note?: string, options?: DecideOptions): Promise<Status>;
  async decide(first: boolean | Decisions, second?: unknown, third?: unknown): Promise<Status> {
    this.#run.throwIfFaulted();
    const context = this.#run.context;
    const where = {
      calls: context.calls,
      history: context.history.slice(),
      tools: this.#runtime.tools,
      at: isoTime(this.#runtime.clock.now()),
      details: this.#details(),
    };
    const { decisions, by } = await readDecisions([first, second, third], where);
    // Checked against the calls as they were: a decision that raced another is checked again.
    if (this.#run.context.calls !== where.calls) return this.decide(first as never, second as never, third as never);
    return this.#run.send({ type: 'DECIDE', decisions, by, at: where.at });
  }

  /**
   * Cancels the run from any status but `done` and `cancelled`. A policy or tool call in flight
   * has its signal aborted.
   * @throws RunStateError if the run has already ended.
   */
  async cancel(reason = ''): Promise<Status> {
    this.#checkText('cancel', 'reason', reason);
    this.#expect(LIVE, 'cancel');
    return this.#run.send({ type: 'CANCEL', reason });
  }

  /**
   * Changes budget limits (raise them, then `run()` continues a `budget_exhausted` run).
   * @returns the new limits.
   * @throws RunStateError if the run has already ended.
   */
  extendBudget(limits: Partial<Limits>): Limits {
    const given = parseLimits(limits);
    this.#expect(LIVE, 'extendBudget');
    if (this.#run.started) {
      this.#run.sendNow({ type: 'EXTEND_BUDGET', limits: given });
    } else {
      // Not started (e.g. just resumed mid-call): starting would restart the call, so the
      // limits are written into the snapshot the actor will start from.
      this.#run.replace(withLimits(this.#run.persisted(), given));
    }
    void this.#run.save().catch(() => {}); // saved by the next settle at the latest
    return structuredClone(this.#run.context.limits);
  }

  /**
   * Calls `listener` as the run progresses: each history entry as it is appended, each policy
   * and tool call as it starts, each change of status (once per change). A listener that throws
   * is ignored.
   * @returns a function that stops observing.
   */
  observe(listener: (event: RunEvent) => void): () => void {
    return this.#run.observe(listener);
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
}
