/**
 * fast-check command sequences over a real Agent (the `World`), with the machine's pure
 * `transition()` as the model. They reach what simple paths miss: loops from approval back to
 * running, long runs against every budget, many approvals and denials, crashes at any moment
 * (mid policy call, mid tool call, while waiting for a human), limits changed at resume, and
 * the mistakes a caller can make.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { initialTransition, transition } from 'xstate';
import { agentMachine } from '../../../machines/index.js';
import type { AgentContext, BudgetKind, Limits } from '../../../machines/types.js';
import { NoPendingApprovalError, RunStateError, StaleApprovalError } from '../../../src/errors.js';
import {
  activeLeft,
  advanceOf,
  describeMove,
  isDeciding,
  isExecuting,
  type ModelState,
  type Move,
  modelEvent,
  type PolicySpec,
  policyCut,
  RUN_ID,
  statusOf,
  T0,
  type ToolSpec,
  TTL_MS,
} from './alphabet.js';
import { describeDifference } from './drive.js';
import { checkWorld } from './invariants.js';
import { before, checkMove } from './oracle.js';
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
  /** Commands run, for the case counts. */
  executed: string[];
}

/** The first spent budget, in the order the machine checks them (steps, tokens, time). */
function spentBudget(c: AgentContext): BudgetKind | null {
  const l = c.limits;
  if (c.steps >= l.maxSteps) return 'steps';
  if (l.maxTokens !== null && c.usage.inputTokens + c.usage.outputTokens >= l.maxTokens) return 'tokens';
  if (l.maxActiveMs !== null && c.activeMs >= l.maxActiveMs) return 'time';
  return null;
}

const state = (m: Readonly<Model>): ModelState => ({ value: m.snapshot.value, context: m.snapshot.context });
const status = (m: Readonly<Model>) => statusOf(m.snapshot.value);
const isFinal = (m: Readonly<Model>) => status(m) === 'done' || status(m) === 'cancelled';

/** Checks the real world against the model and the invariants; throws with every difference. */
function verify(m: Model, world: World, label: string, spec: string[] = []): void {
  const problems: string[] = [...spec];
  const actual = world.snapshot() as unknown as ModelState;
  const d = describeDifference(actual, state(m));
  if (d) problems.push(`differs from the model: ${d}`);
  if (world.clock.now() !== m.now) problems.push(`clock ${world.clock.now()}, model ${m.now}`);
  if (world.opError !== undefined) problems.push(`inv6: the operation threw ${String(world.opError)}`);
  problems.push(...checkWorld(world));
  world.ledger.data.violations.length = 0;
  if (problems.length > 0) throw new Error(`after ${label}:\n  ${problems.join('\n  ')}`);
}

/** Applies a move's machine event to the model (if it has one) and moves the model's clock. */
function step(m: Model, move: Move): void {
  const event = modelEvent(move, state(m), m.now, m.policyElapsedMs);
  const advance = move.kind === 'wait' ? move.ms : advanceOf(move, state(m), m.policyElapsedMs);
  if (event) m.snapshot = transition(agentMachine, m.snapshot, event)[0];
  m.now += advance;
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

class MoveCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly move: Move,
    readonly when: (m: Readonly<Model>) => boolean,
  ) {}

  check(m: Readonly<Model>): boolean {
    return this.when(m);
  }

  async run(m: Model, world: World): Promise<void> {
    m.executed.push(this.move.kind);
    const move = this.move;
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
      m.snapshot = transition(agentMachine, m.snapshot, { type: 'xstate.error.actor.policy', error })[0];
      m.now += left;
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
      if (move.kind === 'crash' && move.maxSteps !== undefined && !isFinal(m)) {
        // Limits given at resume replace the checkpoint's (as an EXTEND_BUDGET would); a run
        // resumed mid policy call whose budget is now spent stops instead of asking again.
        m.snapshot = transition(agentMachine, m.snapshot, {
          type: 'EXTEND_BUDGET',
          limits: { maxSteps: move.maxSteps },
        })[0];
        const stoppedBy = spentBudget(m.snapshot.context);
        if (restartsPolicy && stoppedBy) {
          m.snapshot = agentMachine.resolveState({
            value: 'budget_exhausted',
            context: { ...m.snapshot.context, stoppedBy },
          });
        }
      }
      await world.perform(move.kind === 'crash' && isFinal(m) ? { kind: 'crash' } : move);
      const endsPolicyCall = move.kind === 'policy' || restartsPolicy;
      step(m, move);
      if (endsPolicyCall) {
        m.attempt = 0;
        m.policyElapsedMs = 0;
      }
    }
    verify(m, world, describeMove(move), checkMove(move, was, world));
  }

  toString(): string {
    return describeMove(this.move);
  }
}

/** A caller's mistake: must throw the typed error and change nothing. */
class MistakeCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly move: Extract<Move, { kind: 'decideStale' | 'decideNothing' | 'startAgain' }>,
    readonly when: (m: Readonly<Model>) => boolean,
    readonly expected: new (...args: never[]) => Error,
  ) {}

  check(m: Readonly<Model>): boolean {
    return this.when(m);
  }

  async run(m: Model, world: World): Promise<void> {
    m.executed.push(this.move.kind);
    const was = before(world);
    await world.perform(this.move);
    if (!(world.mistakeError instanceof this.expected)) {
      throw new Error(`${this.move.kind}: expected ${this.expected.name}, got ${String(world.mistakeError)}`);
    }
    verify(m, world, this.move.kind, checkMove(this.move, was, world));
  }

  toString(): string {
    return this.move.kind;
  }
}

const policySpec: fc.Arbitrary<PolicySpec> = fc.record({
  // A final answer ends the run: rare, so runs get long.
  // (fast-check biases towards the first of a oneof and of a constantFrom: a final comes last.)
  kind: fc.oneof(
    { weight: 18, arbitrary: fc.constantFrom('lookup', 'send', 'charge', 'unknown', 'malformed', 'throws') },
    { weight: 1, arbitrary: fc.constant('final' as const) },
  ),
  elapsedMs: fc.integer({ min: 0, max: 30 }),
  usage: fc.option(
    fc.record({ inputTokens: fc.integer({ min: 0, max: 40 }), outputTokens: fc.integer({ min: 0, max: 40 }) }),
    {
      nil: null,
    },
  ),
  variant: fc.integer({ min: 0, max: 5 }),
});

const toolSpec: fc.Arbitrary<ToolSpec> = fc.record({
  kind: fc.constantFrom('result', 'result', 'throw', 'timeout', 'nonjson'),
  elapsedMs: fc.integer({ min: 0, max: 20 }),
  variant: fc.integer({ min: 0, max: 5 }),
});

const awaiting = (m: Readonly<Model>) => status(m) === 'awaiting_approval';
const quiet = (m: Readonly<Model>) => status(m) !== 'running';
const cancellable = (m: Readonly<Model>) => !isFinal(m);

/** The command arbitraries. Policy and tool outcomes come often: runs get long. */
export function commandArbitraries(): fc.Arbitrary<fc.AsyncCommand<Model, World>>[] {
  const policy = policySpec.map((spec) => new MoveCommand({ kind: 'policy', spec }, (m) => isDeciding(state(m))));
  const tool = toolSpec.map((spec) => new MoveCommand({ kind: 'tool', spec }, (m) => isExecuting(state(m))));
  const move = (mv: Move, when: (m: Readonly<Model>) => boolean) => fc.constant(new MoveCommand(mv, when));
  const times = <T>(n: number, arb: T): T[] => Array.from({ length: n }, () => arb);
  // fc.commands picks uniformly among these and skips those whose check() fails: the repeats
  // are weights, so that runs get long (most commands apply only in one status).
  return [
    ...times(4, fc.constant(new MoveCommand({ kind: 'start' }, (m) => status(m) === 'idle'))),
    ...times(16, policy),
    ...times(10, tool),
    ...times(6, move({ kind: 'approve' }, awaiting)),
    ...times(3, move({ kind: 'deny' }, awaiting)),
    ...times(
      2,
      move({ kind: 'run' }, (m) => status(m) !== 'idle'),
    ),
    // One slot shared by waiting and (rarer) cancelling, which ends the run.
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc
          .integer({ min: 1, max: 3 })
          .map((n) => new MoveCommand({ kind: 'wait', ms: n === 3 ? TTL_MS : n * 20_000 }, quiet)),
      },
      { weight: 1, arbitrary: move({ kind: 'cancel' }, cancellable) },
    ),
    // Crashes at any moment: mid policy call, mid tool call, waiting for a human, after the end.
    fc.constant(new MoveCommand({ kind: 'crash' }, () => true)),
    fc.constant(new MoveCommand({ kind: 'crash' }, (m) => status(m) === 'running')),
    fc.integer({ min: 0, max: 12 }).map((maxSteps) => new MoveCommand({ kind: 'crash', maxSteps }, () => true)),
    ...times(
      2,
      fc
        .record({
          steps: fc.integer({ min: 0, max: 4 }),
          tokens: fc.integer({ min: 0, max: 200 }),
          ms: fc.integer({ min: 0, max: 200 }),
        })
        .map(({ steps, tokens, ms }) => new ExtendCommand(steps, tokens, ms)),
    ),
    fc.constant(new MistakeCommand({ kind: 'decideStale' }, awaiting, StaleApprovalError)),
    fc.constant(new MistakeCommand({ kind: 'decideNothing' }, (m) => !awaiting(m), NoPendingApprovalError)),
    fc.constant(new MistakeCommand({ kind: 'startAgain' }, (m) => status(m) !== 'idle', RunStateError)),
  ];
}

/** Raises the limits relative to the current ones (so it helps a budget_exhausted run). */
class ExtendCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly steps: number,
    readonly tokens: number,
    readonly ms: number,
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
    };
    await new MoveCommand({ kind: 'extend', limits }, () => true).run(m, world);
  }

  toString(): string {
    return `extend(+${this.steps} steps, +${this.tokens} tokens, +${this.ms} ms)`;
  }
}

export interface RunSetup {
  limits: Limits;
  approvalTtlMs: number | null;
}

export const setupArbitrary: fc.Arbitrary<RunSetup> = fc.record({
  limits: fc.record({
    maxSteps: fc.integer({ min: 1, max: 12 }),
    maxTokens: fc.option(fc.integer({ min: 20, max: 400 }), { nil: null }),
    maxActiveMs: fc.option(fc.integer({ min: 30, max: 400 }), { nil: null }),
  }),
  approvalTtlMs: fc.option(fc.constant(TTL_MS), { nil: null }),
});

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
    },
    real: new World(options),
  };
}

export { isDeepStrictEqual };
