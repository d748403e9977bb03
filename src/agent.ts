/**
 * The Agent facade: one run, with the operations a service embeds. The machine decides; the run
 * actor (runtime/run-actor.ts) owns the XState actor, its saves and observers; this class checks
 * each call's arguments and turns it into an event. No module state.
 */
import { randomUUID } from 'node:crypto';
import { isExpiredAt } from '../machines/calls.js';
import { modelView } from '../machines/compaction.js';
import type { HistoryEntry, Limits, Message, Status } from '../machines/types.js';
import { untilAborted } from './abort.js';
import { decodeCheckpoint, decodeStored, type PersistedRun } from './checkpoint/index.js';
import { isoTime } from './clock.js';
import { CheckpointError, OptionsError, RunNotFoundError, RunStateError, UserError } from './errors.js';
import { startEvent } from './messages.js';
import { checkOptions } from './option-schema.js';
import { checkText, parseAgentOptions, parseLimits, parseResumeOptions, type Runtime, runShape } from './options.js';
import { readDecisions } from './runtime/decisions.js';
import { openRun } from './runtime/lease.js';
import { withLimits } from './runtime/limits.js';
import type { StoredPlace } from './runtime/place.js';
import { RunActor } from './runtime/run-actor.js';
import type { CheckpointStore, Lease, OpenedRun, RecordedDecision } from './store/contract.js';
import { checkLease } from './store/leases.js';
import { groupOfRun } from './store/open.js';
import type {
  AgentOptions,
  DecideManyOptions,
  DecideOptions,
  Decisions,
  LoadOptions,
  ResumeOptions,
  RunEvent,
  RunOptions,
  RunState,
  Tool,
} from './types.js';

/**
 * `Agent.load`'s `leaseWaitMs` default. A load that meets a run held for a moment — another
 * process loading it at rest (a claim, a read and a release: milliseconds, or no time at all on
 * a store whose `open` is one step), a worker giving it up as it settles — waits that out instead
 * of failing; a live owner at work still refuses within a second. A dead holder on this machine is released at once anyway; one on another machine holds
 * the run for up to its whole lease, which no caller should wait for unasked.
 */
export const LOAD_WAIT_MS = 1_000;
/** The statuses a run may be cancelled or given new limits in: all but `cancelled`. */
const LIVE: readonly Status[] = ['idle', 'running', 'awaiting_approval', 'budget_exhausted', 'failed', 'done'];
/** The statuses a new message goes on from: a turn answered, or stopped by a budget. */
const SENDABLE: readonly Status[] = ['done', 'budget_exhausted'];

/** A run restored by `Agent.resume` / `Agent.load`, handed to the constructor. */
const RESTORED = Symbol('tollgate.restored');
interface Restored {
  [RESTORED]: true;
  runtime: Runtime;
  run: PersistedRun;
  place: StoredPlace | null;
  recorded: RecordedDecision | null;
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
  /** A decision recorded in the store for this run (the approval queue), not yet applied. */
  #recorded: RecordedDecision | null = null;

  constructor(options: AgentOptions<Tools>);
  /** @internal Used by `Agent.resume` and `Agent.load`. */
  constructor(restored: Restored);
  constructor(options: AgentOptions<Tools> | Restored) {
    if ((options as Restored)[RESTORED] === true) {
      const { runtime, run, place, recorded } = options as Restored;
      this.#runtime = runtime;
      this.runId = run.context.runId;
      this.#run = new RunActor(runtime, this.runId, { run }, place);
      this.#recorded = recorded;
      return;
    }
    const parsed = parseAgentOptions(options as AgentOptions<Tools>);
    this.#runtime = parsed.runtime;
    this.runId = parsed.runId ?? randomUUID();
    const input = { runId: this.runId, limits: parsed.limits, approvalTtlMs: parsed.approvalTtlMs };
    const store = (options as AgentOptions<Tools>).store;
    // The run is claimed before its first save (start): a constructor cannot wait for a store.
    const place = store
      ? {
          store,
          version: 0,
          stored: 0,
          head: null,
          lease: parsed.runtime.lease,
          claimed: null,
          group: parsed.budgetGroup,
        }
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
   * each save expecting the version it read: a stale writer gets a `ConflictError`. A decision
   * recorded for the run (`recordDecision`, the approval queue) is applied by `run()`.
   * @throws RunNotFoundError when the store has no such run.
   * @throws CheckpointError (naming the run) when the stored run is not valid.
   * @throws RunBusyError when another live owner holds the run (and `leaseWaitMs` passed); a run
   * that has ended is read without a claim on a store with `open` or `summary`, so it is never
   * busy there.
   */
  static async load<Tools extends readonly Tool[] = readonly Tool[]>(
    store: CheckpointStore,
    runId: string,
    options: LoadOptions<Tools>,
  ): Promise<Agent<Tools>> {
    checkText('Agent.load', 'runId', runId);
    const { lease: held, signal, ...rest } = (options ?? {}) as LoadOptions<Tools>;
    const parsed = parseResumeOptions(rest as ResumeOptions<Tools>, 'Agent.load');
    if (held !== undefined) checkHeldLease(held, runId);
    if (signal !== undefined) checkOptions('Agent.load', { signal }, runShape, { runId });
    const lent = parsed.runtime.lease;
    const terms = rest.leaseWaitMs === undefined ? { ...lent, waitMs: LOAD_WAIT_MS } : lent;
    // A cancelled run never changes again, and one at its answer changes only by a `send` (which
    // claims it before its first save): on a store that tells a run's status alone, such a run is
    // read without a claim, writing nothing, whoever holds its lease. An unknown run is not claimed either.
    const notFound = () => new RunNotFoundError(`load: no run ${JSON.stringify(runId)} in the store`, { runId });
    // One call to the store (`open`, runtime/lease.ts): an unknown run is not claimed; a run that has
    // ended (or rests at its answer) is read without a claim, whoever holds its lease; any other
    // run is claimed before it is read — a run another live process works on is refused
    // (RunBusyError), never loaded and worked twice — and one at rest is released in the same step.
    // A holder that is provably dead on this machine is released first.
    // Stopped by its signal: a lease claimed after all is given up (a lease handed in stays the caller's).
    const giveUp = (late: OpenedRun | null) => {
      if (held === undefined && late?.lease) void store.release(late.lease).catch(() => false);
    };
    const opening = held === undefined ? openRun(store, runId, terms, signal) : openHeld(store, runId, held);
    const opened = await untilAborted(signal, opening, giveUp);
    if (opened === null) throw notFound();
    if (signal?.aborted) {
      giveUp(opened);
      throw signal.reason;
    }
    const { run: record, lease, group } = opened;
    let agent: Agent<Tools>;
    try {
      const place = {
        store,
        version: record.version,
        stored: record.entries.length,
        head: record.head,
        base: record.base ?? null,
        lease: terms,
        claimed: lease,
        // The run stays in its group: read from the store, never from the options.
        group,
      };
      agent = Agent.#restore(
        () => decodeStored(record.head, record.entries, record.base),
        parsed,
        place,
        'Agent.load',
        runId,
        record.decision ?? null,
      ) as Agent<Tools>;
    } catch (error) {
      // A lease the caller handed in stays the caller's to release (or to let lapse).
      if (held === undefined && lease !== null) await store.release(lease).catch(() => false);
      throw error;
    }
    // A run at rest is given up at once (claimed again before its next save); a run found
    // `running` (its owner died mid-call) stays claimed for the caller to `run()`, and so does a
    // run a worker claimed because it has work (a recorded decision, an expired approval).
    const keep = agent.status === 'running' || (held !== undefined && agent.#hasWork());
    if (!keep) await agent.#run.releaseLease();
    return agent;
  }

  static #restore(
    blob: string | (() => PersistedRun),
    options: ResumeOptions<any> | ReturnType<typeof parseResumeOptions>,
    place: StoredPlace | null,
    call: string,
    runId?: string,
    recorded: RecordedDecision | null = null,
  ): Agent {
    const parsed = 'runtime' in options && 'limits' in options ? options : parseResumeOptions(options, call);
    let decoded: PersistedRun;
    try {
      // A stored run is decoded from its head and entries (no blob written out and parsed again).
      decoded = typeof blob === 'function' ? blob() : decodeCheckpoint(blob);
    } catch (error) {
      if (!(error instanceof CheckpointError) || runId === undefined) throw error;
      // A damaged stored run: say which one, so the inbox can point at it.
      throw new CheckpointError(`Agent.load: run ${JSON.stringify(runId)}: ${error.message}`, error.path, {
        runId,
        cause: error,
      });
    }
    const run = Object.keys(parsed.limits).length > 0 ? withLimits(decoded, parsed.limits) : decoded;
    return new Agent({ [RESTORED]: true, runtime: parsed.runtime, run, place, recorded });
  }

  /** The store version this agent last saved or loaded (0 before the first save); null without a store. */
  get version(): number | null {
    return this.#run.version;
  }

  /**
   * The decision recorded in the store for this run (`recordDecision`) when it was loaded, until
   * `run()` applies or drops it, or any other change is saved (every save clears it); else null.
   */
  get recordedDecision(): RecordedDecision | null {
    return this.#recorded === null ? null : structuredClone(this.#recorded);
  }

  /** The run's status: the machine's top-level state. */
  get status(): Status {
    return this.#run.status;
  }

  /** The whole run as plain JSON (a copy: changing it changes nothing). */
  get state(): RunState {
    return this.#run.state;
  }

  /**
   * What the policy would be given now: the model's view of the history. Without summaries, the
   * whole history; once compaction has summarised, the head (the goal, or a conversation's system
   * entries and first message), the latest summary, the current turn's message and the entries
   * after what it covers (docs/long-runs.md, "Compaction"). `state.history` keeps every entry. A copy.
   *
   * @example
   * agent.view().length <= agent.state.history.length; // always
   */
  view(): HistoryEntry[] {
    return structuredClone(modelView(this.#run.context.history));
  }

  /** The persisted run: canonical JSON that `Agent.resume` reads. Valid at any moment. */
  checkpoint(): string {
    return this.#run.checkpoint();
  }

  /**
   * Starts the run and runs until it settles: from the user's goal, or from a conversation —
   * system messages first (the model's instructions, never summarised away), then earlier turns,
   * the last one the user's message the run acts on.
   * @throws OptionsError if the goal or a message is malformed (nothing starts).
   * @throws RunStateError if the run is not `idle`.
   *
   * @example
   * await agent.start([
   *   { role: 'system', content: 'You answer for the refunds desk.' },
   *   { role: 'user', content: 'Where is my refund for order 7?' },
   * ]);
   */
  async start(goal: string | readonly Message[], options: RunOptions = {}): Promise<Status> {
    const event = startEvent('start', goal, this.#details());
    const { signal } = checkOptions('start', options, runShape, this.#details());
    this.#expect(['idle'], 'start', 'a run that answered goes on with send(message)');
    return this.#withSignal(signal, () => this.#run.send(event));
  }

  /**
   * Sends the user's next message: a run that answered (`done`), or that a budget stopped, goes on
   * with it as a new turn, and runs until it settles, as `start` does. The history keeps every
   * turn; the run's budgets are the run's (what earlier turns spent counts), and the turn's
   * limits (`perTurn`) count from zero. On a stored run, the message is saved (under the run's
   * lease, expecting the version read) before the policy is asked: a stale copy of the run gets a
   * `ConflictError` and spends nothing.
   * @throws RunStateError if the run is not `done` or `budget_exhausted`.
   */
  async send(message: string, options: RunOptions = {}): Promise<Status> {
    this.#checkText('send', 'message', message);
    const { signal } = checkOptions('send', options, runShape, this.#details());
    this.#run.throwIfFaulted();
    this.#expect(SENDABLE, 'send');
    return this.#withSignal(signal, async () => {
      await this.#run.rejoinGroup();
      return this.#run.send({ type: 'SEND', message });
    });
  }

  /**
   * Continues a resumable run: one restored mid-run, one that `failed` (the policy is tried
   * again), one whose budget was raised, one with a decision recorded in the store (applied as
   * `decide` would, at the time it was recorded), one with approvals that have expired (their
   * calls end as `approval expired`). Otherwise returns the status unchanged (and a run loaded
   * with a held lease gives it up).
   *
   * A recorded decision whose checks fail now (a tool's schema or rule changed since) is dropped:
   * it is cleared from the store and its calls stay pending, for a human to decide again.
   * @throws RunStateError if the run was never started.
   */
  async run(options: RunOptions = {}): Promise<Status> {
    const { signal } = checkOptions('run', options, runShape, this.#details());
    return this.#withSignal(signal, () => this.#runNow());
  }

  /**
   * `operation`, stopped in this process as a crash at that moment would stop it once `signal`
   * aborts (`RunOptions.signal`). An already aborted signal rejects at once, changing nothing.
   */
  async #withSignal(signal: AbortSignal | undefined, operation: () => Promise<Status>): Promise<Status> {
    if (signal === undefined) return operation();
    signal.throwIfAborted();
    const abandon = () => void this.#run.abandon(signal.reason);
    signal.addEventListener('abort', abandon, { once: true });
    try {
      return await operation();
    } finally {
      signal.removeEventListener('abort', abandon);
    }
  }

  async #runNow(): Promise<Status> {
    const status = this.status;
    if (status === 'idle') {
      throw new RunStateError(
        'run: the run has not started; call start(goal)',
        ['running', 'failed', 'budget_exhausted'],
        this.#details(),
      );
    }
    const recorded = this.#recorded;
    this.#recorded = null;
    if (status === 'running') return this.#run.settle();
    if (status === 'failed' || status === 'budget_exhausted') return this.#run.send({ type: 'RUN' });
    if (status !== 'awaiting_approval') return this.#rest(false);
    if (recorded !== null) {
      const applied = await this.#applyRecorded(recorded);
      if (applied !== null && applied !== 'awaiting_approval') return applied;
      if (applied === null && !this.#someExpired()) return this.#rest(true);
    }
    if (this.#someExpired()) return this.#run.send({ type: 'EXPIRE', at: isoTime(this.#runtime.clock.now()) });
    return this.#rest(false);
  }

  /** Applies a recorded decision at the time it was recorded; null when its checks fail now. */
  async #applyRecorded(recorded: RecordedDecision): Promise<Status | null> {
    const context = this.#run.context;
    const where = {
      calls: context.calls,
      history: context.history.slice(),
      tools: this.#runtime.tools,
      at: recorded.at,
      details: this.#details(),
    };
    let decisions: Awaited<ReturnType<typeof readDecisions>>['decisions'];
    try {
      ({ decisions } = await readDecisions([recorded.decisions, { by: recorded.by }, undefined], where));
    } catch (error) {
      if (error instanceof UserError) return null;
      throw error;
    }
    return this.#run.send({ type: 'DECIDE', decisions, by: recorded.by, at: recorded.at });
  }

  #someExpired(): boolean {
    const at = isoTime(this.#runtime.clock.now());
    return this.#run.context.calls.some((c) => isExpiredAt(c, at));
  }

  /** Whether `run()` has something to do on this run at rest. */
  #hasWork(): boolean {
    const status = this.status;
    if (status === 'failed' || status === 'budget_exhausted') return false;
    return status === 'awaiting_approval' && (this.#recorded !== null || this.#someExpired());
  }

  /** A run at rest: saved if `force` (to clear a dropped decision), and its lease given up. */
  async #rest(force: boolean): Promise<Status> {
    this.#run.throwIfFaulted();
    await this.#run.save(force);
    this.#run.throwIfFaulted();
    return this.status;
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
    const { decisions, by, signal } = await readDecisions([first, second, third], where, true);
    // Checked against the calls as they were: a decision that raced another is checked again.
    if (this.#run.context.calls !== where.calls) return this.decide(first as never, second as never, third as never);
    return this.#withSignal(signal, () => {
      this.#recorded = null; // this decision's save clears the recorded one
      return this.#run.send({ type: 'DECIDE', decisions, by, at: where.at });
    });
  }

  /**
   * Cancels the run from any status but `cancelled` (a run that answered is closed: no message
   * goes on from it). A policy or tool call in flight has its signal aborted.
   * @throws RunStateError if the run is already cancelled.
   */
  async cancel(reason = ''): Promise<Status> {
    this.#checkText('cancel', 'reason', reason);
    this.#expect(LIVE, 'cancel');
    return this.#run.send({ type: 'CANCEL', reason });
  }

  /**
   * Changes budget limits (raise them, then `run()` continues a `budget_exhausted` run).
   * @returns the new limits.
   * @throws RunStateError if the run is cancelled.
   * @throws the run's fault (as every operation does) after a failed save or a lost lease.
   */
  extendBudget(limits: Partial<Limits>): Limits {
    const given = parseLimits(limits);
    this.#run.throwIfFaulted();
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

  #expect(allowed: readonly Status[], operation: string, doneHint?: string): void {
    const status = this.status;
    if (!allowed.includes(status)) {
      const expected = `expected ${allowed.join(' or ')}`;
      const why =
        status === 'cancelled'
          ? 'the run was cancelled'
          : status === 'done' && doneHint
            ? `${expected}; ${doneHint}`
            : expected;
      throw new RunStateError(`${operation}: the run is ${status}; ${why}`, allowed, this.#details());
    }
  }
}

/**
 * A run loaded under a lease the caller holds (a worker's claim): read, and its group read unless
 * it has ended (it spends nothing again). The lease stays the caller's.
 */
async function openHeld(store: CheckpointStore, runId: string, held: Lease): Promise<OpenedRun | null> {
  const run = await store.load(runId);
  if (run === null) return null;
  const group = await groupOfRun(store, runId, run.status);
  return { run, lease: held, group };
}

/** A lease handed to `Agent.load`: well-formed, and on this run. */
function checkHeldLease(lease: unknown, runId: string): asserts lease is Lease {
  checkLease('Agent.load: lease', lease);
  if (lease.runId !== runId) {
    throw new OptionsError(`Agent.load: lease is on run ${JSON.stringify(lease.runId)}, not ${JSON.stringify(runId)}`, {
      runId,
    });
  }
}
