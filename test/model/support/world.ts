/**
 * The world a real Agent runs in during model-based tests: a manual clock, a policy and tools
 * that block on gates the test opens (so every intermediate state, including "a call in
 * flight", can be observed and checkpointed), a human who decides, and a ledger of everything
 * that happened outside the agent. A crash is simulated by taking a checkpoint, freezing the old
 * agent for good (its gates and sleeps never resolve) and resuming from the blob with fresh
 * policy and tool instances.
 */
import { Agent } from '../../../src/agent.js';
import type { Clock } from '../../../src/clock.js';
import type { Limits, PendingCall, Policy, ResumeOptions, RunState, Status, Tool } from '../../../src/index.js';
import { ManualClock } from '../../../src/testing/index.js';
import {
  APPROVE_NOTE,
  APPROVER,
  CANCEL_REASON,
  DENIER,
  DENY_NOTE,
  GOAL,
  type Move,
  RUN_ID,
  rawAction,
  specUsage,
  T0,
  TOOL_TIMEOUT_MS,
  TOOLS,
  type ToolName,
  TTL_MS,
  toolResult,
} from './alphabet.js';
import { Ledger, type LedgerData } from './ledger.js';

/** How a run is resumed: `Agent.resume`, or a faulty stand-in for it. */
export type ResumeFn = (blob: string, options: ResumeOptions) => Agent;
export const realResume: ResumeFn = (blob, options) => Agent.resume(blob, options);

export interface WorldOptions {
  limits: Limits;
  approvalTtlMs: number | null;
  policyRetries: number;
  retryDelayMs: number;
  resume?: ResumeFn;
}

/** A call blocked in the policy or a tool, waiting for the test to say how it ends. */
export interface Gate {
  kind: 'policy' | 'tool';
  step: number;
  attempt: number;
  tool: string;
  key: string;
  /** Ends the call: `thunk` runs inside the call (it may move the clock, return or throw). */
  open(thunk: () => unknown): void;
}

const never = () => new Promise<never>(() => {});

export class World {
  readonly clock: ManualClock;
  readonly ledger: Ledger;
  readonly options: WorldOptions;
  agent: Agent;
  gate: Gate | null = null;
  /** The error of the last operation, if it failed. */
  opError: unknown = undefined;
  /** What the last refused call threw. */
  mistakeError: unknown = undefined;
  #incarnation = 0;
  /** Sleeps (retry back-off, deadlines) the live incarnation has begun. */
  #sleepsStarted = 0;
  #op: object | null = null;
  /**
   * Clock time spent in the policy call in flight (its failed attempts and back-off). The run
   * counts it when the call ends; a crash loses it (a checkpoint cannot know it).
   */
  #retryMs = 0;
  #opDone = true;

  constructor(options: WorldOptions, restore?: { blob: string; now: number; ledger: LedgerData }) {
    this.options = options;
    this.clock = new ManualClock(restore?.now ?? T0);
    this.ledger = new Ledger(options.limits, restore?.ledger);
    if (restore) {
      this.agent = this.#resume(restore.blob);
    } else {
      this.agent = new Agent({
        ...this.#runtime(),
        runId: RUN_ID,
        maxSteps: options.limits.maxSteps,
        maxTokens: options.limits.maxTokens,
        maxActiveMs: options.limits.maxActiveMs,
        approvalTtlMs: options.approvalTtlMs,
      });
    }
  }

  get status(): Status {
    return this.agent.status;
  }

  /** Clock time the policy call in flight has taken so far (its failed tries and back-off). */
  get inCallMs(): number {
    return this.#retryMs;
  }

  get incarnation(): number {
    return this.#incarnation;
  }

  /** The checkpoint's snapshot: what the machine holds, exactly. */
  snapshot(): { value: unknown; context: Record<string, unknown> } {
    const parsed = JSON.parse(this.agent.checkpoint()) as {
      snapshot: { value: unknown; context: Record<string, unknown> };
    };
    return { value: parsed.snapshot.value, context: parsed.snapshot.context };
  }

  /** Policy, tools and clock for one incarnation: calls from a dead one are flagged and frozen. */
  #runtime(): Pick<ResumeOptions, 'policy' | 'tools' | 'clock' | 'policyRetries' | 'retryDelayMs'> {
    const me = this.#incarnation;
    const alive = () => me === this.#incarnation;
    const shared = this.clock;
    const clock: Clock = {
      now: () => shared.now(),
      sleep: async (ms, signal) => {
        if (alive()) this.#sleepsStarted++;
        await shared.sleep(ms, signal);
        if (!alive()) await never();
      },
    };
    const policy: Policy = (history, ctx) => {
      if (!alive()) {
        this.ledger.violation(`a dead process (incarnation ${me}) called the policy`);
        return never();
      }
      // An adversarial policy: it tries to rewrite what it was shown. The run must not change
      // (the comparison with the model after this step would see it).
      try {
        (history[0] as { content: string }).content = 'tampered';
      } catch {
        /* frozen, as it should be */
      }
      history.push({ role: 'user', content: 'injected' });
      this.ledger.policyCalled(ctx.step);
      return this.#block(
        { kind: 'policy', step: ctx.step, attempt: ctx.attempt, tool: '', key: '' },
        ctx.signal,
      ) as never;
    };
    const tool = (name: ToolName): Tool<any> => ({
      name,
      sideEffect: TOOLS[name].sideEffect,
      idempotent: TOOLS[name].idempotent,
      timeoutMs: TOOL_TIMEOUT_MS,
      fn: (args, key, ctx) => {
        if (!alive()) {
          this.ledger.violation(`a dead process (incarnation ${me}) called ${name}`);
          return never();
        }
        this.ledger.toolCalled({
          tool: name,
          key,
          args,
          approvedCallId: ctx.approvedCallId,
          at: shared.now(),
          incarnation: me,
        });
        return this.#block({ kind: 'tool', step: ctx.step, attempt: 0, tool: name, key }, ctx.signal);
      },
    });
    return {
      policy,
      tools: [tool('lookup'), tool('send'), tool('charge')],
      clock,
      policyRetries: this.options.policyRetries,
      retryDelayMs: this.options.retryDelayMs,
    };
  }

  #block(call: Omit<Gate, 'open'>, signal: AbortSignal): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const gate: Gate = {
        ...call,
        open: (thunk) => {
          if (this.gate === gate) this.gate = null;
          try {
            resolve(thunk());
          } catch (error) {
            reject(error);
          }
        },
      };
      this.gate = gate;
      signal.addEventListener(
        'abort',
        () => {
          if (this.gate === gate) this.gate = null;
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  #resume(blob: string, maxSteps?: number): Agent {
    const resume = this.options.resume ?? realResume;
    return resume(blob, { ...this.#runtime(), ...(maxSteps === undefined ? {} : { maxSteps }) });
  }

  #begin(operation: () => Promise<Status>): void {
    const token = {};
    this.#op = token;
    this.#opDone = false;
    this.opError = undefined;
    operation().then(
      () => {
        if (this.#op === token) this.#opDone = true;
      },
      (error) => {
        if (this.#op !== token) return;
        this.#opDone = true;
        this.opError = error;
      },
    );
  }

  /** Waits until the agent is blocked in a call or its operation has returned. */
  async #quiesce(until: () => boolean = () => this.gate !== null || this.#opDone): Promise<void> {
    for (let i = 0; !until(); i++) {
      if (i > 5_000) throw new Error(`the agent neither settled nor called out (status ${this.status}): it hangs`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  #takeGate(kind: Gate['kind']): Gate {
    const gate = this.gate;
    if (!gate || gate.kind !== kind) throw new Error(`test error: no ${kind} call in flight (status ${this.status})`);
    return gate;
  }

  /** The active time the real run has left, less `spent`; null without a time budget. */
  #activeLeft(spent: number): number | null {
    const { limits, activeMs } = this.agent.state;
    return limits.maxActiveMs === null ? null : limits.maxActiveMs - activeMs - spent;
  }

  #spend(ms: number): void {
    this.clock.advance(ms);
    this.ledger.data.activeMs += ms;
  }

  /** The pending call as the human sees it. */
  pending(): PendingCall | null {
    return this.agent.state.pending;
  }

  #decide(approved: boolean): void {
    const pending = this.pending();
    if (!pending) throw new Error(`test error: nothing to decide (status ${this.status})`);
    this.ledger.decided({
      callId: pending.id,
      key: pending.key,
      tool: pending.tool,
      args: pending.args,
      approved,
      at: this.clock.now(),
      expiresAt: pending.expiresAt === null ? null : Date.parse(pending.expiresAt),
    });
    const [note, by] = approved ? [APPROVE_NOTE, APPROVER] : [DENY_NOTE, DENIER];
    this.#begin(() => this.agent.decide(approved, note, { callId: pending.id, by }));
  }

  /** A call that must be refused: records its error (or `'accepted'`) in `mistakeError`. */
  async #mistake(operation: () => Promise<Status>): Promise<void> {
    let outcome: unknown = null;
    operation().then(
      () => {
        outcome = 'accepted';
      },
      (error) => {
        outcome = error ?? 'rejected';
      },
    );
    // A refusal comes back at once; an accepted mistake shows as a settled run or as a hang.
    await this.#quiesce(() => outcome !== null);
    this.mistakeError = outcome;
  }

  /** Performs a move on the real agent and waits until it is quiet again. */
  async perform(move: Move): Promise<void> {
    switch (move.kind) {
      case 'start':
        this.#begin(() => this.agent.start(GOAL));
        break;
      case 'policy': {
        const gate = this.#takeGate('policy');
        const { spec } = move;
        // The run's active-time deadline, as the runtime sets it for this call.
        const left = this.#activeLeft(this.#retryMs);
        if (left !== null && spec.elapsedMs >= left) {
          // The deadline comes first: time passes to it, the runtime aborts the call (its gate
          // is gone now, not after the abort reaches it, so the wait below waits for what follows).
          if (this.gate === gate) this.gate = null;
          this.clock.advance(left);
          this.ledger.data.activeMs += this.#retryMs + left;
          this.#retryMs = 0;
          break;
        }
        const backoff = this.options.retryDelayMs * 2 ** gate.attempt;
        const canRetry = spec.kind === 'throws' && gate.attempt < this.options.policyRetries;
        const retried = canRetry && (left === null || spec.elapsedMs + backoff < left);
        const sleepsBefore = this.#sleepsStarted;
        gate.open(() => {
          this.clock.advance(spec.elapsedMs);
          if (retried) {
            this.#retryMs += spec.elapsedMs;
          } else {
            // The call is over: its time (retries included) is now the run's active time.
            this.ledger.data.activeMs += this.#retryMs + spec.elapsedMs;
            this.#retryMs = 0;
          }
          if (spec.kind === 'throws') throw new Error('policy down');
          const usage = specUsage(spec);
          this.ledger.policyAnswered(gate.step, usage ? usage.inputTokens + usage.outputTokens : 0);
          return rawAction(spec);
        });
        if (retried || (canRetry && left !== null)) {
          // The runtime backs off on the clock before asking again (a sleep begun after the
          // call ended, not the call's own deadline): let that time pass, or the budget's rest.
          await this.#quiesce(() => this.#sleepsStarted > sleepsBefore || this.#opDone);
          const wait = retried ? backoff : (left as number) - spec.elapsedMs;
          this.clock.advance(wait);
          if (retried) {
            this.#retryMs += backoff;
          } else {
            // The back-off reached the end of the budget: the call ends there, for time.
            this.ledger.data.activeMs += this.#retryMs + wait;
            this.#retryMs = 0;
          }
        }
        break;
      }
      case 'tool': {
        const gate = this.#takeGate('tool');
        const { spec } = move;
        // The call's deadline: the tool's timeout, or the active time left when that is sooner.
        const left = this.#activeLeft(0);
        const deadline = left !== null && left < TOOL_TIMEOUT_MS ? left : TOOL_TIMEOUT_MS;
        gate.open(() => {
          if (spec.kind === 'timeout' || spec.elapsedMs >= deadline) {
            this.#spend(deadline); // fires the runtime's deadline
            return never();
          }
          this.#spend(spec.elapsedMs);
          if (spec.kind === 'throw') throw new Error('boom');
          return toolResult(gate.tool, spec);
        });
        break;
      }
      case 'crash':
        this.crash(move.maxSteps);
        break;
      case 'approve':
        this.#decide(true);
        break;
      case 'approveLate':
        this.clock.advance(TTL_MS);
        this.#decide(true);
        break;
      case 'deny':
        this.#decide(false);
        break;
      case 'expire':
        this.clock.advance(TTL_MS);
        this.#begin(() => this.agent.run());
        break;
      case 'cancel':
        this.#begin(() => this.agent.cancel(CANCEL_REASON));
        break;
      case 'extend':
        this.agent.extendBudget(move.limits);
        this.ledger.data.limits = { ...this.ledger.data.limits, ...move.limits };
        break;
      case 'run':
        this.#begin(() => this.agent.run());
        break;
      case 'wait':
        this.clock.advance(move.ms);
        break;
      case 'decideStale': {
        // The id of an earlier request for the same key (superseded), or one never issued.
        const pending = this.pending();
        const stale = pending && pending.attempt > 1 ? `${pending.key}#${pending.attempt - 1}` : `${RUN_ID}:0#1`;
        await this.#mistake(() => this.agent.decide(true, 'stale', { callId: stale }));
        break;
      }
      case 'decideNothing':
        await this.#mistake(() => this.agent.decide(true));
        break;
      case 'startAgain':
        await this.#mistake(() => this.agent.start(GOAL));
        break;
    }
    await this.#quiesce();
    const pending = this.status === 'awaiting_approval' ? this.pending() : null;
    if (pending) this.ledger.requestSeen(pending.key, pending.id);
  }

  /**
   * The process dies: checkpoint now, freeze the old agent, resume from the blob with fresh
   * instances. A resumed run that was mid-call is continued (`run()`), as a worker would.
   */
  crash(maxSteps?: number): string {
    const blob = this.agent.checkpoint();
    this.#incarnation++;
    this.#retryMs = 0;
    this.gate = null;
    this.#op = null;
    this.#opDone = true;
    this.ledger.data.crashes++;
    this.agent = this.#resume(blob, maxSteps);
    // Invariant 5 at every crash: the blob loads and a loaded run writes the same blob back.
    if (maxSteps === undefined && this.agent.checkpoint() !== blob)
      this.ledger.violation('inv5: resume(blob).checkpoint() !== blob');
    if (maxSteps !== undefined) this.ledger.data.limits = { ...this.ledger.data.limits, maxSteps };
    if (this.agent.status === 'running') this.#begin(() => this.agent.run());
    return blob;
  }

  /** Waits for quiet after `crash()` (perform does this itself). */
  settle(): Promise<void> {
    return this.#quiesce();
  }

  state(): RunState {
    return this.agent.state;
  }

  /** A probe runtime for loading blobs: any call it receives is a violation (loading runs nothing). */
  probeOptions(): ResumeOptions {
    const flag = (what: string) => () => {
      this.ledger.violation(`inv5: loading a checkpoint called ${what}`);
      return never();
    };
    return {
      policy: flag('the policy'),
      tools: (['lookup', 'send', 'charge'] as const).map((name) => ({ name, ...TOOLS[name], fn: flag(name) })),
      clock: this.clock,
    };
  }
}
