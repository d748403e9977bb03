/**
 * fast-check commands over a real Agent (the `World`), with the machine's pure `transition()` as
 * the model (model-events.ts). Each command's `check` reads only the model; `run` performs the
 * move on the world, steps the model, and throws on any difference, spec violation or broken
 * invariant; `toString` names the move in a shrunk counterexample.
 */
import type fc from 'fast-check';
import { initialTransition } from 'xstate';
import { agentMachine } from '../../../machines/index.js';
import type { AgentContext, BudgetKind, Limits } from '../../../machines/types.js';
import {
  describeMove,
  isDeciding,
  type Mistake,
  type ModelState,
  type Move,
  moveLabel,
  type PolicySpec,
  RUN_ID,
  statusOf,
  T0,
} from './alphabet.js';
import { noteCalls } from './counts.js';
import { describeDifference } from './drive.js';
import { checkWorld } from './invariants.js';
import { activeLeft, applyEvent, applyMove, policyCut } from './model-events.js';
import { before, checkMove } from './oracle.js';
import type { CallTool } from './tools.js';
import { World, type WorldOptions } from './world.js';

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];

export interface Model {
  snapshot: Snapshot;
  /** The test clock, as the model expects it. */
  now: number;
  /** Retries of the policy call in flight so far, and the clock time they took. */
  attempt: number;
  policyElapsedMs: number;
  retries: number;
  retryDelayMs: number;
  /** Moves run, by label, for the counts a run prints. */
  executed: string[];
  /** What the moves did to the steps' calls (several calls, partial decisions, …), for the counts. */
  seen: string[];
}

/** The first spent budget, in the order the machine checks them (steps, tokens, cost, time). */
function spentBudget(c: AgentContext): BudgetKind | null {
  const l = c.limits;
  if (c.steps >= l.maxSteps) return 'steps';
  if (l.maxTokens !== null && c.usage.inputTokens + c.usage.outputTokens >= l.maxTokens) return 'tokens';
  if (l.maxCostUsd !== null && Math.round(c.usage.costUsd * 1e6) >= Math.round(l.maxCostUsd * 1e6)) return 'cost';
  if (l.maxActiveMs !== null && c.activeMs >= l.maxActiveMs) return 'time';
  return null;
}

export const state = (m: Readonly<Model>): ModelState => ({ value: m.snapshot.value, context: m.snapshot.context });
export const status = (m: Readonly<Model>) => statusOf(m.snapshot.value);
export const isFinal = (m: Readonly<Model>) => status(m) === 'done' || status(m) === 'cancelled';

/** Checks the real world against the model and the invariants; throws with every difference. */
async function verify(m: Model, world: World, label: string, spec: string[] = []): Promise<void> {
  const problems: string[] = [...spec];
  const actual = world.snapshot() as unknown as ModelState;
  const d = describeDifference(actual, state(m));
  if (d) problems.push(`differs from the model: ${d}`);
  if (world.clock.now() !== m.now) problems.push(`clock ${world.clock.now()}, model ${m.now}`);
  if (world.opError !== undefined) problems.push(`inv6: the operation threw ${String(world.opError)}`);
  problems.push(...(await checkWorld(world)));
  world.ledger.data.violations.length = 0;
  if (problems.length > 0) throw new Error(`after ${label}:\n  ${problems.join('\n  ')}`);
}

/**
 * Whether a throwing policy call is tried again: retries left, and neither the call nor its
 * back-off reaches the end of the active-time budget (the runtime stops there for time).
 */
function retries(m: Readonly<Model>, move: Move): boolean {
  if (move.kind !== 'policy' || move.spec.kind !== 'throws' || m.attempt >= m.retries) return false;
  const left = activeLeft(m.snapshot.context, m.policyElapsedMs);
  return left === null || move.spec.elapsedMs + m.retryDelayMs * 2 ** m.attempt < left;
}

export class MoveCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly move: Move,
    readonly when: (m: Readonly<Model>) => boolean,
  ) {}

  check(m: Readonly<Model>): boolean {
    return this.when(m);
  }

  async run(m: Model, world: World): Promise<void> {
    const move = this.move;
    m.executed.push(moveLabel(move));
    const was = before(world);
    const cutInBackOff =
      move.kind === 'policy' &&
      move.spec.kind === 'throws' &&
      m.attempt < m.retries &&
      !retries(m, move) &&
      policyCut(move.spec, m.snapshot.context, m.policyElapsedMs) === null;
    if (cutInBackOff) {
      // The back-off reaches the end of the budget: the runtime stops the call there, for time.
      const left = activeLeft(m.snapshot.context, m.policyElapsedMs) as number;
      await world.perform(move);
      const error = { name: 'TimeoutError', message: 'active-time budget', elapsedMs: m.policyElapsedMs + left };
      m.now += left;
      m.snapshot = applyEvent(agentMachine, m.snapshot, { type: 'xstate.error.actor.policy', error }, m.now);
      m.attempt = 0;
      m.policyElapsedMs = 0;
    } else if (move.kind === 'policy' && retries(m, move)) {
      // Retried by the runtime after a back-off on the clock: no machine event yet.
      const backoff = m.retryDelayMs * 2 ** m.attempt;
      await world.perform(move);
      m.policyElapsedMs += move.spec.elapsedMs + backoff;
      m.now += move.spec.elapsedMs + backoff;
      m.attempt++;
    } else {
      const restartsPolicy = move.kind === 'crash' && isDeciding(state(m));
      const given = {
        ...(move.kind === 'crash' && move.maxSteps !== undefined ? { maxSteps: move.maxSteps } : {}),
        ...(move.kind === 'crash' && move.maxCostUsd !== undefined ? { maxCostUsd: move.maxCostUsd } : {}),
      };
      if (move.kind === 'crash' && Object.keys(given).length > 0 && !isFinal(m)) {
        const before = m.snapshot.context.limits.maxCostUsd ?? Number.POSITIVE_INFINITY;
        if (move.maxCostUsd !== undefined && move.maxCostUsd < before) m.seen.push('resumes with a lower maxCostUsd');
        // Limits given at resume replace the checkpoint's (as an EXTEND_BUDGET would); a run
        // resumed mid policy call whose budget is now spent stops instead of asking again.
        m.snapshot = applyEvent(agentMachine, m.snapshot, { type: 'EXTEND_BUDGET', limits: given }, m.now);
        const stoppedBy = spentBudget(m.snapshot.context);
        if (restartsPolicy && stoppedBy) {
          m.snapshot = agentMachine.resolveState({
            value: 'budget_exhausted',
            context: { ...m.snapshot.context, stoppedBy },
          });
        }
      }
      await world.perform(move.kind === 'crash' && isFinal(m) ? { kind: 'crash' } : move);
      const prior = state(m);
      ({ snapshot: m.snapshot, now: m.now } = applyMove(agentMachine, m.snapshot, move, m.now, m.policyElapsedMs));
      noteCalls(m, move, prior);
      if (move.kind === 'policy' || restartsPolicy) {
        m.attempt = 0;
        m.policyElapsedMs = 0;
      }
    }
    await verify(m, world, describeMove(move), checkMove(move, was, world));
  }

  toString(): string {
    return describeMove(this.move);
  }
}

/** A caller's mistake: must throw the typed error and change nothing. */
export class MistakeCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly move: Mistake,
    readonly when: (m: Readonly<Model>) => boolean,
    readonly expected: new (...args: never[]) => Error,
  ) {}

  check(m: Readonly<Model>): boolean {
    return this.when(m);
  }

  async run(m: Model, world: World): Promise<void> {
    m.executed.push(this.move.kind);
    if (this.move.kind === 'decideEditForbidden')
      m.seen.push(`edits refused: ${this.move.why ?? 'forbidden'}${this.move.always ? ', with always' : ''}`);
    const was = before(world);
    await world.perform(this.move);
    if (!(world.mistakeError instanceof this.expected) || world.mistakeError.constructor !== this.expected) {
      throw new Error(`${describeMove(this.move)}: expected ${this.expected.name}, got ${String(world.mistakeError)}`);
    }
    await verify(m, world, describeMove(this.move), checkMove(this.move, was, world));
  }

  toString(): string {
    return describeMove(this.move);
  }
}

/** Raises the limits relative to the current ones (so it helps a budget_exhausted run). */
export class ExtendCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly steps: number,
    readonly tokens: number,
    readonly ms: number,
    /** Micro-dollars more (when the run has a cost budget). */
    readonly micro = 0,
  ) {}

  check(m: Readonly<Model>): boolean {
    return !isFinal(m);
  }

  async run(m: Model, world: World): Promise<void> {
    const l = m.snapshot.context.limits;
    const limits: Partial<Limits> = {
      maxSteps: l.maxSteps + this.steps,
      ...(l.maxTokens === null ? {} : { maxTokens: l.maxTokens + this.tokens }),
      ...(l.maxActiveMs === null ? {} : { maxActiveMs: l.maxActiveMs + this.ms }),
      ...(l.maxCostUsd === null ? {} : { maxCostUsd: (Math.round(l.maxCostUsd * 1e6) + this.micro) / 1e6 }),
    };
    await new MoveCommand({ kind: 'extend', limits }, () => true).run(m, world);
  }

  toString(): string {
    return `extend(+${this.steps} steps, +${this.tokens} tokens, +${this.ms} ms, +${this.micro} µ$)`;
  }
}

/**
 * A step of several calls of one tool that has a standing approval (the first by name, when
 * several have one), all of them covered by that one grant.
 */
export class StandingStepCommand implements fc.AsyncCommand<Model, World> {
  constructor(readonly spec: PolicySpec) {}

  check(m: Readonly<Model>): boolean {
    return isDeciding(state(m)) && Object.keys(m.snapshot.context.standing).length > 0;
  }

  async run(m: Model, world: World): Promise<void> {
    const tool = Object.keys(m.snapshot.context.standing).sort()[0] as CallTool;
    const spec = { ...this.spec, calls: this.spec.calls.map((c) => ({ ...c, tool })) };
    await new MoveCommand({ kind: 'policy', spec }, () => true).run(m, world);
  }

  toString(): string {
    return `${describeMove({ kind: 'policy', spec: this.spec })} (each call of the tool with a standing approval)`;
  }
}

export interface RunSetup {
  limits: Limits;
  approvalTtlMs: number | null;
}

export const RETRIES = 1;
export const RETRY_DELAY_MS = 5;

/** A fresh model and world for one case. */
export function newCase(generated: RunSetup, resume?: WorldOptions['resume']): { model: Model; real: World } {
  // fc.record builds null-prototype objects; the run's JSON has plain ones.
  const setup = JSON.parse(JSON.stringify(generated)) as RunSetup;
  const options: WorldOptions = {
    limits: setup.limits,
    approvalTtlMs: setup.approvalTtlMs,
    policyRetries: RETRIES,
    retryDelayMs: RETRY_DELAY_MS,
    ...(resume ? { resume } : {}),
  };
  const [snapshot] = initialTransition(agentMachine, {
    runId: RUN_ID,
    limits: setup.limits,
    approvalTtlMs: setup.approvalTtlMs,
  });
  return {
    model: {
      snapshot,
      now: T0,
      attempt: 0,
      policyElapsedMs: 0,
      retries: RETRIES,
      retryDelayMs: RETRY_DELAY_MS,
      executed: [],
      seen: [],
    },
    real: new World(options),
  };
}
