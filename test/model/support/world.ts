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
import type {
  HistoryEntry,
  Limits,
  PendingCall,
  Policy,
  ResumeOptions,
  RunState,
  Status,
  Tool,
} from '../../../src/index.js';
import { ManualClock } from '../../../src/testing/index.js';
import {
  APPROVER,
  CANCEL_REASON,
  DECIDER,
  DENIER,
  GOAL,
  isMistake,
  MESSAGE,
  type Mistake,
  type Move,
  RUN_ID,
  rawAction,
  requestedCalls,
  specCost,
  specUsage,
  T0,
  TTL_MS,
  toolResult,
  usagePresent,
} from './alphabet.js';
import { answerEstimate, chargeOf } from './budget-spec.js';
import { type Made, mapDecision, mistakeCall, seedDecision } from './human.js';
import { Ledger, type LedgerData } from './ledger.js';
import { answerOf, earliestExpiry, toolCut, toolObservation } from './model-events.js';
import { cancelStep, crashCall, decideCalls, endCall, expireCalls, timedOut } from './spec-step.js';
import { type ToolName, type VerifyAnswer, verifiedResult } from './tools.js';
import { worldRule, worldTools } from './world-tools.js';

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
  /** The view the policy call in flight was shown. */
  #shown: HistoryEntry[] = [];
  /** What wipe's `verify` answers (set by the move that makes it ask: a crash, a timeout). */
  #verifyAnswer: VerifyAnswer = 'unknown';

  constructor(options: WorldOptions, restore?: { blob: string; now: number; ledger: LedgerData }) {
    this.options = options;
    this.clock = new ManualClock(restore?.now ?? T0);
    this.ledger = new Ledger(options.limits, options.approvalTtlMs, restore?.ledger);
    if (restore) {
      this.agent = this.#resume(restore.blob);
    } else {
      this.agent = new Agent({
        ...this.#runtime(),
        runId: RUN_ID,
        maxSteps: options.limits.maxSteps,
        maxTokens: options.limits.maxTokens,
        maxActiveMs: options.limits.maxActiveMs,
        maxCostUsd: options.limits.maxCostUsd,
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
  #runtime(): Pick<ResumeOptions, 'policy' | 'tools' | 'clock' | 'policyRetries' | 'retryDelayMs' | 'concurrency'> {
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
      this.ledger.policyCalled(ctx.step, history);
      this.#shown = structuredClone(history); // what the call's request is estimated from
      // An adversarial policy: it tries to rewrite what it was shown. The run must not change
      // (the comparison with the model after this step would see it).
      try {
        (history[0] as { content: string }).content = 'tampered';
      } catch {
        /* frozen, as it should be */
      }
      history.push({ role: 'user', content: 'injected' });
      return this.#block(
        { kind: 'policy', step: ctx.step, attempt: ctx.attempt, tool: '', key: '' },
        ctx.signal,
      ) as never;
    };
    const fn =
      (name: ToolName): Tool['fn'] =>
      (args, key, ctx) => {
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
      };
    const rule: Tool['needsApproval'] = (args, ctx) => {
      if (ctx.runId !== RUN_ID || (ctx.tool !== 'wipe' && ctx.tool !== 'send') || !Object.isFrozen(args))
        this.ledger.violation(`approval rule: called with ${JSON.stringify({ ...ctx, history: undefined })}`);
      return worldRule(args, ctx.tool);
    };
    // wipe's verify answers what the move says (the world knows no more of the effect than that).
    const verify: NonNullable<Tool['verify']> = ({ key }) => {
      if (!alive()) {
        this.ledger.violation(`a dead process (incarnation ${me}) asked verify`);
        return never();
      }
      this.ledger.verifyAsked(key);
      const answer = this.#verifyAnswer;
      if (answer === 'notDone') this.ledger.notDone(key);
      return answer === 'done'
        ? { done: verifiedResult(key) }
        : answer === 'notDone'
          ? { notDone: true }
          : { unknown: true };
    };
    return {
      policy,
      tools: worldTools(fn, rule, verify),
      clock,
      policyRetries: this.options.policyRetries,
      retryDelayMs: this.options.retryDelayMs,
      // The model's calls run one at a time, in order (calls side by side: test/parallel-tools.test.ts).
      concurrency: 1,
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

  #resume(blob: string, maxSteps?: number, maxCostUsd?: number): Agent {
    const resume = this.options.resume ?? realResume;
    return resume(blob, {
      ...this.#runtime(),
      ...(maxSteps === undefined ? {} : { maxSteps }),
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    });
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

  /** The active time the run has left, less `spent`, as the world counts it; null without a time budget. */
  #activeLeft(spent: number): number | null {
    const { limits, activeMs } = this.ledger.data;
    return limits.maxActiveMs === null ? null : limits.maxActiveMs - activeMs - spent;
  }

  #spend(ms: number): void {
    this.clock.advance(ms);
    this.ledger.data.activeMs += ms;
  }

  /** The pending calls as the human sees them. */
  pending(): PendingCall[] {
    return this.agent.state.pendingCalls;
  }

  /** Writes the human's decisions down (ledger and step record) before they are sent. */
  #record(made: Made[], by: (m: Made) => string): void {
    for (const m of made) this.ledger.decided(m.record);
    decideCalls(
      this.ledger.data,
      made.map((m) => ({ ...m.chosen, by: by(m), at: m.record.at })),
    );
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

  async #makeMistake(move: Mistake): Promise<void> {
    if (move.kind === 'startAgain') return this.#mistake(() => this.agent.start(GOAL));
    const call = mistakeCall(move, this.pending(), this.clock.now());
    if ('map' in call) return this.#mistake(() => this.agent.decide(call.map, { by: DECIDER }));
    const [approved, note, opts] = call.legacy;
    return this.#mistake(() => this.agent.decide(approved, note, opts));
  }

  #policy(move: Extract<Move, { kind: 'policy' }>): { retried: boolean; wait: number; sleepsBefore: number } | null {
    const gate = this.#takeGate('policy');
    const { spec } = move;
    // The run's active-time deadline, as the runtime sets it for this call.
    const left = this.#activeLeft(this.#retryMs);
    if (left !== null && spec.elapsedMs >= left) {
      // The deadline comes first: time passes to it, the runtime aborts the call (its gate is
      // gone now, not after the abort reaches it, so the wait that follows waits for what follows).
      if (this.gate === gate) this.gate = null;
      this.clock.advance(left);
      this.ledger.data.activeMs += this.#retryMs + left;
      this.#retryMs = 0;
      return null;
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
      const calls = spec.kind === 'call' || spec.kind === 'calls' ? requestedCalls(spec) : null;
      const d = this.ledger.data;
      const charged = chargeOf(
        { limits: d.limits, tokens: d.tokens, costMicro: d.costMicro },
        usage && { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens },
        usagePresent(spec),
        this.#shown,
        answerEstimate(answerOf(spec)),
        specCost(spec),
      );
      this.ledger.policyAnswered(gate.step, charged, calls, this.clock.now());
      return rawAction(spec);
    });
    if (!(retried || (canRetry && left !== null))) return null;
    return { retried, wait: retried ? backoff : (left as number) - spec.elapsedMs, sleepsBefore };
  }

  #tool(move: Extract<Move, { kind: 'tool' }>): void {
    const gate = this.#takeGate('tool');
    const { spec } = move;
    // The call's deadline: the tool's timeout, or the active time left when that is sooner.
    const left = this.#activeLeft(0);
    const cut = toolCut(spec, left);
    const seen = toolObservation(gate.tool, spec, left);
    this.#verifyAnswer = spec.verify ?? 'unknown';
    gate.open(() => {
      this.#spend(cut ?? spec.elapsedMs); // a cut fires the runtime's deadline
      if (cut !== null && 'error' in seen) {
        timedOut(this.ledger.data, gate.key, this.#verifyAnswer, seen, this.clock.now());
      } else endCall(this.ledger.data, gate.key, seen as never);
      if (cut !== null) return never();
      if (spec.kind === 'throw') throw new Error('boom');
      return toolResult(gate.tool, spec);
    });
  }

  /** Performs a move on the real agent and waits until it is quiet again. */
  async perform(move: Move): Promise<void> {
    const d = this.ledger.data;
    if (isMistake(move)) {
      await this.#makeMistake(move);
    } else {
      switch (move.kind) {
        case 'start':
          this.#begin(() => this.agent.start(GOAL));
          break;
        case 'policy': {
          const backoff = this.#policy(move);
          if (backoff) {
            // The runtime backs off on the clock before asking again (a sleep begun after the
            // call ended, not the call's own deadline): let that time pass, or the budget's rest.
            await this.#quiesce(() => this.#sleepsStarted > backoff.sleepsBefore || this.#opDone);
            this.clock.advance(backoff.wait);
            if (backoff.retried) {
              this.#retryMs += backoff.wait;
            } else {
              // The back-off reached the end of the budget: the call ends there, for time.
              d.activeMs += this.#retryMs + backoff.wait;
              this.#retryMs = 0;
            }
          }
          break;
        }
        case 'tool':
          this.#tool(move);
          break;
        case 'crash':
          this.crash(move.maxSteps, move.afterMs, move.maxCostUsd, move.verify);
          break;
        case 'approve':
        case 'deny':
        case 'approveLate': {
          if (move.kind === 'approveLate') this.clock.advance(TTL_MS);
          const { made, callId } = seedDecision(move, this.pending(), this.clock.now());
          const by = made.chosen.approve ? APPROVER : DENIER;
          this.#record([made], () => by);
          this.#begin(() =>
            this.agent.decide(made.chosen.approve, made.chosen.note, { by, ...(callId ? { callId } : {}) }),
          );
          break;
        }
        case 'decide': {
          const { made, map } = mapDecision(move, this.pending(), this.clock.now());
          this.#record(made, () => DECIDER);
          this.#begin(() => this.agent.decide(map, { by: DECIDER }));
          break;
        }
        case 'expire': {
          const first = earliestExpiry(this.pending());
          this.clock.advance(move.first ? Math.max(0, (first ?? this.clock.now()) - this.clock.now()) : TTL_MS);
          if (this.status === 'awaiting_approval') expireCalls(d, this.clock.now());
          this.#begin(() => this.agent.run());
          break;
        }
        case 'run':
          if (this.status === 'awaiting_approval') expireCalls(d, this.clock.now());
          this.#begin(() => this.agent.run());
          break;
        case 'cancel':
          cancelStep(d);
          this.#begin(() => this.agent.cancel(CANCEL_REASON));
          break;
        case 'send':
          this.#begin(() => this.agent.send(MESSAGE));
          break;
        case 'extend':
          this.agent.extendBudget(move.limits);
          this.ledger.setLimits(move.limits);
          break;
        case 'wait':
          this.clock.advance(move.ms);
          break;
      }
    }
    await this.#quiesce();
    for (const p of this.pending()) this.ledger.requestSeen(p.key, p.id);
  }

  /**
   * The process dies (after `afterMs` more of the call in flight): checkpoint now, freeze the old
   * agent, resume from the blob with fresh instances. A resumed run that was mid-call is
   * continued (`run()`), as a worker would.
   */
  crash(maxSteps?: number, afterMs?: number, maxCostUsd?: number, verify: VerifyAnswer = 'unknown'): string {
    if (afterMs !== undefined) this.clock.advance(afterMs);
    this.#verifyAnswer = verify;
    const blob = this.agent.checkpoint();
    this.#incarnation++;
    this.#retryMs = 0;
    this.gate = null;
    this.#op = null;
    this.#opDone = true;
    this.ledger.data.crashes++;
    this.agent = this.#resume(blob, maxSteps, maxCostUsd);
    const given = {
      ...(maxSteps === undefined ? {} : { maxSteps }),
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    };
    // Invariant 5 at every crash: the blob loads and a loaded run writes the same blob back.
    if (Object.keys(given).length === 0 && this.agent.checkpoint() !== blob)
      this.ledger.violation('inv5: resume(blob).checkpoint() !== blob');
    this.ledger.setLimits(given);
    crashCall(this.ledger.data, this.clock.now(), verify);
    if (this.agent.status === 'running') this.#begin(() => this.agent.run());
    return blob;
  }

  /** Waits for quiet after `crash()` (perform does this itself). */
  async settle(): Promise<void> {
    await this.#quiesce();
    for (const p of this.pending()) this.ledger.requestSeen(p.key, p.id);
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
      tools: worldTools((name) => flag(name), flag('an approval rule')),
      clock: this.clock,
    };
  }
}
