/**
 * The compaction model (issue 16): the pure agent machine, given the compaction guard with the
 * same threshold the Agent is given, is the oracle; a `CompactionWorld` drives the real Agent
 * move by move (its policy and summariser answer when told, so a crash can be taken with either
 * in flight) and checks after every move that the Agent is where the machine is, and the
 * invariants that hold whatever the machine says: the journal only grows (a summary never
 * rewrites it), every view the policy got was within its threshold unless the last summary
 * failed, summaries fold and never cover a range twice, and the tokens counted are exactly those
 * the policy and the summariser reported.
 */
import canonicalize from 'canonicalize';
import { initialTransition, transition } from 'xstate';
import { summaryDueWhen } from '../../../machines/agent-machine.js';
import { modelView, nextCover } from '../../../machines/compaction.js';
import { agentMachine } from '../../../machines/index.js';
import type { AgentInput, HistoryEntry, Limits } from '../../../machines/types.js';
import type { Agent as AgentClass } from '../../../src/agent.js';
import type { CompactionOptions, Policy } from '../../../src/index.js';
import { ManualClock } from '../../../src/testing/index.js';
import { answerEstimate, chargeOf, noRoomWhy, spentOf, viewOf } from './budget-spec.js';

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const AT = new Date(T0).toISOString();
export const GOAL = 'count the days';
/** The view is compacted when over 4 entries; the latest turn (2 entries) is kept. */
export const THRESHOLD = 4;
export const KEEP = 1;
/** Small limits: each budget is hit within a path of a few moves. */
export const LIMITS: Limits = { maxSteps: 4, maxTokens: 60, maxActiveMs: null, maxCostUsd: null };
const INPUT: AgentInput = { runId: 'run-c', limits: LIMITS, approvalTtlMs: null };
/** What each policy call and each summary reports. */
const POLICY_USAGE = { inputTokens: 5, outputTokens: 1 };
const SUMMARY_USAGE = { inputTokens: 7, outputTokens: 2 };
const COSTLY_USAGE = { inputTokens: 40, outputTokens: 10 };

export type Move =
  | { kind: 'start' }
  /** The policy calls the pure tool `t` with its step number. */
  | { kind: 'call' }
  | { kind: 'final' }
  | { kind: 'throws' }
  | { kind: 'summary'; costly: boolean }
  /** The summariser throws. */
  | { kind: 'summaryThrows' }
  /** The summariser answers something that is no summary. */
  | { kind: 'summaryBad' }
  | { kind: 'extend' }
  | { kind: 'run' }
  | { kind: 'cancel' };

type Snapshot = ReturnType<typeof initialTransition<typeof agentMachine>>[0];

/** The oracle: the pure machine with the compaction guard the runtime provides for the same option. */
export function oracleMachine(machine: typeof agentMachine = agentMachine) {
  return machine.provide({
    guards: {
      summaryDue: summaryDueWhen(
        (context) =>
          context.compaction.failures < 3 &&
          context.history.length >= context.compaction.retryAt &&
          modelView(context.history).length > THRESHOLD &&
          nextCover(context.history, KEEP) !== null,
      ),
    },
  });
}

const statusOf = (s: Snapshot) => (typeof s.value === 'string' ? s.value : 'running');
const runningAs = (s: Snapshot) => (typeof s.value === 'object' ? (s.value as { running: string }).running : null);

/** The moves each state offers. */
export function movesFor(s: Snapshot): Move[] {
  switch (statusOf(s)) {
    case 'idle':
      return [{ kind: 'start' }];
    case 'running':
      return runningAs(s) === 'summarising'
        ? [
            { kind: 'summary', costly: false },
            { kind: 'summary', costly: true },
            { kind: 'summaryThrows' },
            { kind: 'summaryBad' },
            { kind: 'cancel' },
          ]
        : [{ kind: 'call' }, { kind: 'final' }, { kind: 'throws' }];
    case 'budget_exhausted':
      return s.context.limits.maxSteps < LIMITS.maxSteps + 2
        ? [{ kind: 'extend' }, { kind: 'run' }]
        : [{ kind: 'run' }];
    case 'failed':
      return [{ kind: 'run' }];
    default:
      return [];
  }
}

const UNPRICED = { unknown: 'no price option, and the usage reports no costUsd' } as const;

/** What a policy call reporting `POLICY_USAGE` is charged in context `c` (budget-spec.ts). */
const policyCharge = (c: Snapshot['context'], answer: Parameters<typeof answerEstimate>[0]) =>
  chargeOf(spentOf(c), POLICY_USAGE, true, viewOf(c.history), answerEstimate(answer), UNPRICED);

/** What a summary is charged: its request is the entries it covers; `usage` null when it reported none. */
function summaryCharge(c: Snapshot['context'], usage: typeof SUMMARY_USAGE | null, text: string | null) {
  const cover = nextCover(c.history, KEEP);
  if (!cover) throw new Error('summarising with nothing to cover');
  const output = Math.max(1, Math.ceil((text ?? '').length / 4));
  const cost = usage ? UNPRICED : ({ unknown: 'the summariser reported no usage' } as const);
  return chargeOf(spentOf(c), usage, usage !== null, cover.entries, output, cost);
}

/** The machine events a move stands for, given the state it is made in. */
export function eventsOf(move: Move, s: Snapshot): Parameters<typeof transition<typeof agentMachine>>[2][] {
  const c = s.context;
  const base = { elapsedMs: 0, at: AT };
  switch (move.kind) {
    case 'start':
      return [{ type: 'START', goal: GOAL }];
    case 'call': {
      const i = c.steps + 1;
      const answer = {
        type: 'calls' as const,
        calls: [{ tool: 't', args: { i }, toolCallId: null, verdict: { kind: 'run' as const } }],
        text: null,
      };
      return [
        { type: 'xstate.done.actor.policy', output: { ...answer, ...policyCharge(c, answer), ...base } },
        { type: 'xstate.done.actor.tool', output: { type: 'result', result: i, ...base } },
      ];
    }
    case 'final': {
      const answer = { type: 'final' as const, final: 'done' };
      return [{ type: 'xstate.done.actor.policy', output: { ...answer, ...policyCharge(c, answer), ...base } }];
    }
    case 'throws':
      return [{ type: 'xstate.error.actor.policy', error: Object.assign(new Error('model down'), { elapsedMs: 0 }) }];
    case 'summary': {
      const cover = nextCover(c.history, KEEP);
      if (!cover) throw new Error('summarising with nothing to cover');
      const text = summaryText(cover.covers.to);
      const charged = summaryCharge(c, move.costly ? COSTLY_USAGE : SUMMARY_USAGE, text);
      return [
        {
          type: 'xstate.done.actor.summary',
          output: { type: 'summary', text, covers: cover.covers, ...charged, ...base },
        },
      ];
    }
    case 'summaryThrows':
      return [
        {
          type: 'xstate.done.actor.summary',
          output: { type: 'failed', error: 'Error: summariser down', usage: null, ...base },
        },
      ];
    case 'summaryBad':
      return [
        {
          type: 'xstate.done.actor.summary',
          output: {
            type: 'failed',
            error: 'Error: summarize returned 42, not a string or { text, usage? }',
            ...summaryCharge(c, null, null),
            ...base,
          },
        },
      ];
    case 'extend':
      return [
        {
          type: 'EXTEND_BUDGET',
          limits: { maxSteps: c.limits.maxSteps + 1, maxTokens: (c.limits.maxTokens ?? 0) + 60 },
        },
      ];
    case 'run':
      return [{ type: 'RUN' }];
    case 'cancel':
      return [{ type: 'CANCEL', reason: 'enough' }];
  }
}

export const summaryText = (to: number) => `days 1 to entry ${to}`;

export function initial(machine = oracleMachine()): Snapshot {
  return initialTransition(machine, INPUT)[0];
}

/**
 * A model call that starts (deciding entered or a new step in it, summarising entered) and whose
 * estimated request does not fit the token budget: the runtime does not make it, and says why.
 */
function noRoom(before: Snapshot, after: Snapshot): Parameters<typeof transition<typeof agentMachine>>[2] | null {
  const c = after.context;
  const now = runningAs(after);
  const starts = now !== null && (runningAs(before) !== now || before.context.steps !== c.steps);
  if (!starts || (now !== 'deciding' && now !== 'summarising')) return null;
  const request = now === 'deciding' ? viewOf(c.history) : (nextCover(c.history, KEEP)?.entries ?? []);
  const why = noRoomWhy(spentOf(c), request);
  if (why === null) return null;
  const output = { type: 'exhausted' as const, budget: 'tokens' as const, why };
  return now === 'deciding'
    ? { type: 'xstate.done.actor.policy', output: { ...output, usage: null, elapsedMs: 0, at: AT } }
    : { type: 'xstate.done.actor.summary', output };
}

export function apply(machine: ReturnType<typeof oracleMachine>, s: Snapshot, move: Move): Snapshot {
  let next = s;
  for (const e of eventsOf(move, next)) {
    const before = next;
    [next] = transition(machine, next, e);
    const refused = noRoom(before, next);
    if (refused) [next] = transition(machine, next, refused);
  }
  return next;
}

interface Waiting {
  kind: 'policy' | 'summary';
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** The moves' answers, given to the Agent's policy and summariser when they are in flight. */
class Script {
  waiting: Waiting | null = null;
  views: { view: HistoryEntry[]; failed: boolean }[] = [];
  failedLast = () => false;
  readonly policy: Policy = (view) => {
    this.views.push({ view, failed: this.failedLast() });
    return new Promise((resolve, reject) => {
      this.waiting = { kind: 'policy', resolve: resolve as never, reject };
    });
  };
  readonly summarize: CompactionOptions['summarize'] = () =>
    new Promise((resolve, reject) => {
      this.waiting = { kind: 'summary', resolve: resolve as never, reject };
    });
}

/** JSON with its keys in order: a restored run's entries come back with their keys sorted. */
const canon = (v: unknown): string => canonicalize(v) ?? 'undefined';

/** Yields to the event loop until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('the Agent never got there');
}

/** The real Agent, driven move by move, with its invariants checked after each. */
export class CompactionWorld {
  readonly #Agent: typeof AgentClass;
  #script = new Script();
  #agent: AgentClass;
  #journal: HistoryEntry[] = [];
  #tokens = 0;
  readonly violations: string[] = [];

  constructor(Agent: typeof AgentClass) {
    this.#Agent = Agent;
    this.#agent = new Agent(this.#options());
  }

  /** The options of a new Agent (`resume`: of `Agent.resume`, which keeps the run's own id and limits). */
  #options(resume = false) {
    const script = this.#script;
    script.failedLast = () => this.#agent.state.compaction.error !== null;
    return {
      ...(resume ? {} : { runId: 'run-c', ...LIMITS }),
      policy: script.policy,
      tools: [{ name: 't', fn: (args: { i: number }) => args.i }],
      clock: new ManualClock(T0),
      policyRetries: 0,
      compaction: { when: { entries: THRESHOLD }, keep: KEEP, summarize: script.summarize },
    };
  }

  /** Makes the move on the Agent and waits until it is at rest or has a call in flight. */
  async move(move: Move): Promise<void> {
    const w = this.#script.waiting;
    const answer = (kind: Waiting['kind'], act: (w: Waiting) => void) => {
      if (w?.kind !== kind) throw new Error(`${move.kind}: the Agent has no ${kind} call in flight`);
      this.#script.waiting = null;
      act(w);
    };
    switch (move.kind) {
      case 'start':
        void this.#agent.start(GOAL).catch(() => {});
        break;
      case 'call': {
        const i = this.#agent.state.steps + 1;
        this.#charge(POLICY_USAGE, this.#script.views.at(-1)?.view ?? [], 1);
        answer('policy', (x) => x.resolve({ tool: 't', args: { i }, usage: POLICY_USAGE }));
        break;
      }
      case 'final':
        this.#charge(POLICY_USAGE, this.#script.views.at(-1)?.view ?? [], 1);
        answer('policy', (x) => x.resolve({ final: 'done', usage: POLICY_USAGE }));
        break;
      case 'throws':
        answer('policy', (x) => x.reject(new Error('model down')));
        break;
      case 'summary': {
        const cover = nextCover(this.#agent.state.history, KEEP);
        const usage = move.costly ? COSTLY_USAGE : SUMMARY_USAGE;
        this.#charge(usage, cover?.entries ?? [], 1);
        answer('summary', (x) => x.resolve({ text: summaryText(cover?.covers.to ?? -1), usage }));
        break;
      }
      case 'summaryThrows':
        answer('summary', (x) => x.reject(new Error('summariser down')));
        break;
      case 'summaryBad':
        this.#charge(null, nextCover(this.#agent.state.history, KEEP)?.entries ?? [], 1);
        answer('summary', (x) => x.resolve(42));
        break;
      case 'extend': {
        const l = this.#agent.state.limits;
        this.#agent.extendBudget({ maxSteps: l.maxSteps + 1, maxTokens: (l.maxTokens ?? 0) + 60 });
        break;
      }
      case 'run':
        void this.#agent.run().catch(() => {});
        break;
      case 'cancel':
        void this.#agent.cancel('enough').catch(() => {});
        break;
    }
    await this.#settle();
  }

  /**
   * Counts what a call is charged, written out from the contract on what this world knows: the
   * usage reported (null: none, so the estimate of `request` and `output`), within what the
   * token budget leaves.
   */
  #charge(usage: typeof POLICY_USAGE | null, request: readonly HistoryEntry[], output: number): void {
    const spent = { limits: this.#agent.state.limits, tokens: this.#tokens, costMicro: 0 };
    const charged = chargeOf(spent, usage, usage !== null, request, output, UNPRICED);
    this.#tokens += charged.usage.inputTokens + charged.usage.outputTokens;
  }

  /** The process dies (its calls in flight never answer) and a new one resumes from the last checkpoint. */
  async crash(): Promise<void> {
    const blob = this.#agent.checkpoint();
    const old = this.#agent;
    this.#script = new Script();
    this.#agent = this.#Agent.resume(blob, this.#options(true));
    // The dead process's calls are abandoned: cancelling it aborts them without touching the blob.
    if (old.status !== 'done' && old.status !== 'cancelled') await old.cancel('crashed').catch(() => {});
    if (this.#agent.status === 'running') void this.#agent.run().catch(() => {});
    await this.#settle();
  }

  async #settle(): Promise<void> {
    await until(() => this.#agent.status !== 'running' || this.#script.waiting !== null);
  }

  /** Checks the Agent against the oracle's state, and the invariants; records what is wrong. */
  check(model: Snapshot, label: string): void {
    const state = this.#agent.state;
    const value = JSON.parse(this.#agent.checkpoint()).snapshot.value;
    const bad = (what: string) => this.violations.push(`${label}: ${what}`);
    if (canon(value) !== canon(model.value)) {
      bad(`state ${JSON.stringify(value)}, the machine says ${JSON.stringify(model.value)}`);
    }
    const running = typeof value === 'object' ? value.running : null;
    const inFlight = this.#script.waiting?.kind ?? null;
    if (running !== null && inFlight !== (running === 'summarising' ? 'summary' : 'policy')) {
      bad(`${running}, but the call in flight is ${inFlight ?? 'none'}`);
    }
    const c = model.context;
    const same = (what: string, a: unknown, b: unknown) => {
      if (canon(a) !== canon(b)) bad(`${what} ${JSON.stringify(a)}, the machine says ${JSON.stringify(b)}`);
    };
    same('history', state.history, c.history);
    same('steps', state.steps, c.steps);
    same('usage', state.usage, c.usage);
    same('compaction', state.compaction, c.compaction);
    same('stoppedBy', state.stoppedBy, c.stoppedBy);
    same('error', state.error, c.error);
    // Whatever the machine says: the journal only grows, never rewritten by a summary.
    const h = state.history;
    if (h.length < this.#journal.length || this.#journal.some((e, i) => canon(e) !== canon(h[i]))) {
      bad('the journal was rewritten: an entry it had is gone or changed');
    }
    this.#journal = h;
    // Every token the policy and the summariser reported is counted (estimated when none, never
    // past the budget), and only those.
    if (state.usage.inputTokens + state.usage.outputTokens !== this.#tokens) {
      bad(`tokens counted ${state.usage.inputTokens + state.usage.outputTokens}, reported ${this.#tokens}`);
    }
    const limit = state.limits.maxTokens;
    if (limit !== null && state.usage.inputTokens + state.usage.outputTokens > limit) {
      bad(`tokens counted ${state.usage.inputTokens + state.usage.outputTokens}, over the budget of ${limit}`);
    }
    // Summaries fold: from 1, each further than the one before, each before its own index.
    let last = 0;
    for (const [i, e] of h.entries()) {
      if (e.role !== 'summary') continue;
      if (e.covers.from !== 1 || e.covers.to <= last || e.covers.to >= i)
        bad(`summary ${i} covers ${JSON.stringify(e.covers)}`);
      last = e.covers.to;
    }
    // The policy's views: within the threshold, unless the last summary failed; the goal first.
    for (const { view, failed } of this.#script.views) {
      if (view[0]?.role !== 'user') bad('a view without the goal first');
      if (view.length > THRESHOLD && !failed) bad(`a view of ${view.length} entries (threshold ${THRESHOLD})`);
      const tools = view.filter((e) => e.role === 'tool').length;
      const calls = view.filter((e) => e.role === 'assistant' && 'tool' in e).length;
      if (tools !== calls) bad('a view with a call and its result split');
    }
    this.#script.views = [];
    if (canon(this.#agent.view()) !== canon(modelView(h))) bad('agent.view() is not the model view');
  }

  async dispose(): Promise<void> {
    const s = this.#agent.status;
    if (s !== 'done' && s !== 'cancelled') await this.#agent.cancel('end of test').catch(() => {});
  }
}
