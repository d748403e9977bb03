/**
 * A model-based test of a user's own agent (`tollgate/testing/fast-check`): fast-check generates
 * what the policy answers and a sequence of moves — decisions, crashes before and after a tool
 * call or a save, waits past an approval's expiry, budget extensions, `run()`, cancels — and
 * plays them on a real Agent over a real store, with the user's own tools, rules and budgets.
 * After every move the run is held to `checkInvariants`. A failure is shrunk to the shortest
 * scenario and reported with the seed and path that replay it.
 */
import fc from 'fast-check';
import type { JsonObject, Message } from '../../machines/types.js';
import { Agent } from '../agent.js';
import { RunNotFoundError, UserError } from '../errors.js';
import { startEvent } from '../messages.js';
import type { CheckpointStore, Lease } from '../store/contract.js';
import { MemoryStore } from '../stores/memory.js';
import type { Action, CallDecisionInput, Limits, Status, Tool } from '../types.js';
import { action, decision } from './arbitraries.js';
import { crashableStore } from './crashable-store.js';
import { recordEffects, withFn } from './effects.js';
import { checkInvariants, type InvariantOptions, type Violation } from './invariants.js';
import { ManualClock } from './manual-clock.js';
import { scriptedPolicy } from './scripted-policy.js';

/**
 * Where a planned crash strikes: around the n-th tool call (of `tool`, when the move names one) or
 * the n-th save of the operations that follow.
 */
export type CrashPoint = 'beforeCall' | 'afterCall' | 'beforeSave' | 'afterSave';

/** One move of a scenario. */
export type Move =
  | { kind: 'decide'; decision: CallDecisionInput; pick: number }
  | { kind: 'crash'; at: CrashPoint; nth: number; tool?: string }
  | { kind: 'wait'; ms: number }
  | { kind: 'extend'; steps: number }
  | { kind: 'run' }
  /** The user's next message (`send`), when the run answered or a budget stopped it. */
  | { kind: 'send' }
  | { kind: 'cancel' };

/** What fast-check generates: what the policy answers, step by step, and the moves. */
export interface Scenario {
  actions: Action[];
  /** A crash planned before the run starts (in its first steps). */
  first: Extract<Move, { kind: 'crash' }> | null;
  moves: Move[];
}

export interface ModelTestOptions {
  /** Your tools: their `fn` really runs (give them your fakes), their rules are your rules. */
  tools: readonly Tool[];
  /**
   * What each scenario's run starts from, as `agent.start` takes it: a goal, or your agent's
   * system messages and a conversation. @default 'the goal'
   */
  goal?: string | readonly Message[];
  /** Arguments by tool name (see `action`); an approver's edits (`decision({ edit })`). */
  args?: Record<string, fc.Arbitrary<JsonObject>>;
  edit?: fc.Arbitrary<JsonObject>;
  /** Steps the policy is scripted for, and the run's starting `maxSteps`. @default 6 */
  maxSteps?: number;
  maxTokens?: number | null;
  maxCostUsd?: number | null;
  /** @default 60_000 (moves wait past it) */
  approvalTtlMs?: number;
  /** A new store for each scenario. @default a new MemoryStore */
  store?: () => CheckpointStore | Promise<CheckpointStore>;
  /** Called before each scenario: reset your fakes. */
  reset?: () => void | Promise<void>;
  /** The keys that landed downstream so far (your fake's log): a key twice breaks "at most once". */
  applied?: () => readonly string[];
  forbidden?: InvariantOptions['forbidden'];
  /** Weight of malformed and hostile actions (see `action`). @default 1 */
  hostile?: number;
  /** fast-check's parameters: runs, and the seed and path a failure prints, to replay it. */
  numRuns?: number;
  seed?: number;
  path?: string;
  /** The most moves in a scenario. @default 12 */
  maxMoves?: number;
}

/** What a passing `modelTest` did: scenarios, moves and crashes played. */
export interface ModelTestReport {
  scenarios: number;
  moves: number;
  crashes: number;
}

/**
 * Leases are long (a loaded machine's pauses never cost a live owner its run): a crash is taken
 * over at once instead, as Tollgate takes over a holder provably dead on this machine.
 */
const LEASE_MS = 30_000;

/** The lease a store call answered with, if any (`claim`, `renew`, `open`, `claimNext`). */
function leaseIn(value: unknown, runId: string): Lease | null {
  if (value === null || typeof value !== 'object') return null;
  const v = value as Partial<Lease> & { lease?: unknown };
  if (v.runId === runId && typeof v.token === 'number' && typeof v.owner === 'string') return v as Lease;
  return v.lease === undefined ? null : leaseIn(v.lease, runId);
}
const never = () => new Promise<never>(() => {});

/** A planned crash: where, the how-many-th, and (around a call) of which tool or of any. */
function crashArbitrary(options: ModelTestOptions): fc.Arbitrary<Extract<Move, { kind: 'crash' }>> {
  return fc
    .record({
      kind: fc.constant('crash' as const),
      at: fc.constantFrom<CrashPoint>('beforeCall', 'afterCall', 'beforeSave', 'afterSave'),
      nth: fc.integer({ min: 1, max: 3 }),
      tool: fc.option(fc.constantFrom(...options.tools.map((t) => t.name)), { nil: undefined }),
    })
    .map(({ tool, ...move }) => (tool === undefined || move.at.endsWith('Save') ? move : { ...move, tool }));
}

/** The moves fast-check draws from. */
function moveArbitrary(options: ModelTestOptions): fc.Arbitrary<Move> {
  const ttl = options.approvalTtlMs ?? 60_000;
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('decide' as const),
        decision: decision(options.edit ? { edit: options.edit } : {}),
        pick: fc.nat(3),
      }),
    },
    { weight: 3, arbitrary: crashArbitrary(options) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.constantFrom(1_000, ttl - 1, ttl, ttl + 1) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('extend' as const), steps: fc.integer({ min: 1, max: 3 }) }),
    },
    { weight: 2, arbitrary: fc.constant({ kind: 'run' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'send' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
  );
}

/** One scenario on a real Agent: incarnations that die at planned points, the next loading the run. */
class Play {
  readonly clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  readonly recorded;
  readonly runId = 'model-run';
  readonly policy;
  agent!: Agent;
  /** A crash planned for the coming operations, and the tool calls and saves counted since. */
  plan: { at: CrashPoint; nth: number; tool: string | undefined; calls: number; saves: number } | null = null;
  crashes = 0;
  #die: () => void = () => {};
  #held: () => Lease | null = () => null;
  #died: Promise<'crashed'> = never();
  /** The most each budget was set to (a crash never lowers one). */
  limits: Partial<Limits>;

  constructor(
    readonly options: ModelTestOptions,
    readonly store: CheckpointStore,
    scenario: Scenario,
  ) {
    this.recorded = recordEffects(options.tools);
    this.policy = scriptedPolicy(scenario.actions);
    this.limits = { maxSteps: options.maxSteps ?? 6 };
  }

  /** An incarnation's tools: the recorded ones, with the planned crash around their call. */
  #tools(): Tool[] {
    return this.recorded.tools.map((tool) =>
      withFn(tool, (args, key, ctx) => {
        const strike = this.#strikes('beforeCall', 'afterCall', 'calls', tool.name);
        if (strike === 'before') return this.#crash();
        const out = tool.fn(args, key, ctx);
        return strike === 'after' ? Promise.resolve(out).then(() => this.#crash()) : out;
      }),
    );
  }

  /**
   * An incarnation's store: the planned crash around a save, and nothing at all once dead. The
   * lease it holds is noted, for the next process to release when this one dies.
   */
  #store(): CheckpointStore {
    const dying = crashableStore(this.store);
    this.#die = dying.crash;
    let held: Lease | null = null;
    this.#held = () => held;
    return new Proxy(dying.store, {
      get: (target, p) => {
        const value = Reflect.get(target, p, target);
        if (typeof value !== 'function' || p === 'close') return value;
        if (p !== 'save')
          return async (...args: unknown[]) => {
            const answer: unknown = await value.apply(target, args);
            if (p === 'release') held = null;
            else held = leaseIn(answer, this.runId) ?? held;
            return answer;
          };
        return (...args: unknown[]) => {
          const strike = this.#strikes('beforeSave', 'afterSave', 'saves', undefined);
          if (strike === 'before') return this.#crash();
          const saved = value.apply(target, args) as Promise<unknown>;
          return strike === 'after' ? saved.then(() => this.#crash()) : saved;
        };
      },
    });
  }

  #strikes(
    before: CrashPoint,
    after: CrashPoint,
    count: 'calls' | 'saves',
    tool: string | undefined,
  ): 'before' | 'after' | null {
    const plan = this.plan;
    if (!plan || (plan.at !== before && plan.at !== after)) return null;
    if (plan.tool !== undefined && plan.tool !== tool) return null;
    plan[count]++;
    if (plan[count] !== plan.nth) return null;
    this.plan = null;
    return plan.at === before ? 'before' : 'after';
  }

  /** The process dies here: nothing more reaches the store, and this call never returns. */
  #crash(): Promise<never> {
    this.#die();
    this.#resolveDied?.('crashed');
    return never();
  }

  #resolveDied: ((v: 'crashed') => void) | undefined;

  #incarnation(): void {
    this.#died = new Promise((resolve) => {
      this.#resolveDied = resolve;
    });
  }

  async start(): Promise<void> {
    this.#incarnation();
    const { maxTokens, maxCostUsd, approvalTtlMs = 60_000 } = this.options;
    this.agent = new Agent({
      runId: this.runId,
      tools: this.#tools(),
      policy: this.policy,
      clock: this.clock,
      store: this.#store(),
      leaseMs: LEASE_MS,
      leaseWaitMs: 2_000, // a lease the dead process took and nobody noted is waited for (and then fails)
      approvalTtlMs,
      maxSteps: this.limits.maxSteps as number,
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    });
    await this.op(() => this.agent.start(this.options.goal ?? 'the goal'));
  }

  /**
   * Runs an operation of the live agent. When its process dies on the way, the next one loads the
   * run from the store once the dead one's lease has lapsed, and continues it if it was mid-step.
   */
  async op(fn: () => Promise<Status>): Promise<void> {
    const done = fn().then(
      () => 'done' as const,
      (error: unknown) => error,
    );
    const outcome = await Promise.race([done, this.#died]);
    if (outcome === 'crashed') {
      this.crashes++;
      // Its death is provable on this machine: the next process releases exactly its lease.
      const held = this.#held();
      if (held) await this.store.release(held);
      this.#incarnation();
      const loaded = await this.#reload().catch((error: unknown) => {
        if (error instanceof RunNotFoundError) return null; // it died before its first save
        throw error;
      });
      if (!loaded) return this.start(); // the next process starts the run again
      this.agent = loaded;
      if (this.agent.status === 'running') await this.op(() => this.agent.run());
      return;
    }
    // A refusal (a stale or expired decision, an edit the tool does not allow, a run that ended) changes nothing.
    if (outcome !== 'done' && !(outcome instanceof UserError)) throw outcome;
  }

  /** The next process loads the run: an incarnation of its own, whose store and lease can die too. */
  #reload(): Promise<Agent> {
    return Agent.load(this.#store(), this.runId, {
      tools: this.#tools(),
      policy: this.policy,
      clock: this.clock,
      leaseMs: LEASE_MS,
      leaseWaitMs: 2_000,
      ...(this.limits.maxSteps === undefined ? {} : { maxSteps: this.limits.maxSteps }),
    });
  }

  /** Plans a crash for the operations that follow. */
  arm(move: Extract<Move, { kind: 'crash' }>): void {
    this.plan = { at: move.at, nth: move.nth, tool: move.tool, calls: 0, saves: 0 };
  }

  async move(move: Move): Promise<void> {
    const status = this.agent.status;
    switch (move.kind) {
      case 'decide': {
        const pending = this.agent.state.pendingCalls;
        const call = pending[move.pick % Math.max(1, pending.length)];
        if (status === 'awaiting_approval' && call)
          await this.op(() => this.agent.decide({ [call.id]: move.decision }));
        break;
      }
      case 'crash':
        this.arm(move);
        break;
      case 'wait':
        this.clock.advance(move.ms);
        break;
      case 'extend':
        if (status !== 'done' && status !== 'cancelled' && status !== 'running') {
          const maxSteps = this.agent.state.limits.maxSteps + move.steps;
          this.limits.maxSteps = Math.max(this.limits.maxSteps ?? 0, maxSteps);
          await this.op(async () => {
            this.agent.extendBudget({ maxSteps });
            return this.agent.status;
          });
        }
        break;
      case 'run':
        if (status !== 'done' && status !== 'cancelled') await this.op(() => this.agent.run());
        break;
      case 'send':
        if (status === 'done' || status === 'budget_exhausted')
          await this.op(() => this.agent.send('and one more thing'));
        break;
      case 'cancel':
        if (status !== 'cancelled') await this.op(() => this.agent.cancel('the test cancelled'));
        break;
    }
  }

  check(): Promise<Violation[]> {
    const applied = this.options.applied?.();
    return checkInvariants(this.agent, {
      ...this.recorded,
      limits: this.limits,
      ...(applied ? { applied } : {}),
      ...(this.options.forbidden ? { forbidden: this.options.forbidden } : {}),
    });
  }
}

const describeMove = (m: Move): string =>
  m.kind === 'decide'
    ? `decide(${JSON.stringify(m.decision)}, call ${m.pick})`
    : m.kind === 'crash'
      ? `crash(${m.at} #${m.nth}${m.tool === undefined ? '' : ` of ${m.tool}`})`
      : m.kind === 'wait'
        ? `wait(${m.ms} ms)`
        : m.kind === 'extend'
          ? `extend(+${m.steps} steps)`
          : `${m.kind}()`;

/**
 * Plays fast-check's scenarios on your agent and throws on the first broken invariant, with the
 * shortest scenario that breaks it and the seed and path that replay it. Call it in a test.
 *
 * @example
 * it('keeps every promise', async () => {
 *   await modelTest({ tools: [refund, lookup], applied: () => bank.keys, reset: () => bank.clear() });
 * }, 60_000);
 */
export async function modelTest(options: ModelTestOptions): Promise<ModelTestReport> {
  if (options.goal !== undefined) startEvent('modelTest', options.goal); // a bad goal fails here, not in a scenario
  const steps = options.maxSteps ?? 6;
  const scenario: fc.Arbitrary<Scenario> = fc.record({
    actions: fc.array(
      action({
        tools: options.tools,
        answers: 0, // the run answers when the script ends: each scenario plays every step
        ...(options.args ? { args: options.args } : {}),
        ...(options.hostile === undefined ? {} : { hostile: options.hostile }),
      }),
      { minLength: 1, maxLength: steps },
    ),
    first: fc.option(crashArbitrary(options), { nil: null, freq: 2 }),
    moves: fc.array(moveArbitrary(options), { maxLength: options.maxMoves ?? 12 }),
  });
  const report: ModelTestReport = { scenarios: 0, moves: 0, crashes: 0 };
  const property = fc.asyncProperty(scenario, async (s) => {
    await options.reset?.();
    const store = await (options.store?.() ?? new MemoryStore());
    const play = new Play(options, store, s);
    const fail = (where: string, violations: Violation[]) => {
      throw new Error(`after ${where}:\n${violations.map((v) => `  ${v.invariant}: ${v.message}`).join('\n')}`);
    };
    report.scenarios++;
    if (s.first) play.arm(s.first);
    await play.start();
    let found = await play.check();
    if (found.length > 0) fail('start', found);
    for (const [i, move] of s.moves.entries()) {
      await play.move(move);
      report.moves++;
      found = await play.check();
      if (found.length > 0) fail(`move ${i + 1}, ${describeMove(move)}`, found);
    }
    report.crashes += play.crashes;
  });
  await fc.assert(property, {
    numRuns: options.numRuns ?? 50,
    includeErrorInReport: true,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.path === undefined ? {} : { path: options.path }),
  });
  return report;
}
