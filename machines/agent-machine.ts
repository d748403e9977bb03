/**
 * The agent run as an XState v5 machine. Pure: no I/O, no clock, no randomness. Time arrives in
 * events (`at`, `elapsedMs`), and the policy and tool are actors registered by name that the
 * runtime provides with `machine.provide({ actors })`. Importable by Stately tooling as is; each
 * state's `description` says the invariant it keeps.
 */
import { assertEvent, assign, setup } from 'xstate';
import { exhaustedBudget, spentAfter } from './budget.js';
import {
  askAgain,
  decide,
  decisionsMatch,
  expired,
  isExpiredAt,
  nextBatch,
  nextQueued,
  runningCall,
  runningCalls,
  startsABatch,
  startsACall,
  updateCall,
} from './calls.js';
import { describeError, elapsedOf } from './describe-error.js';
import type { MachineEvent } from './events.js';
import { appendCopy } from './history.js';
import { actors, historyActions, types } from './history-actions.js';
import type { AgentContext, CallCost, StepCall, TokenCount, ToolOutcome } from './types.js';

export { historyActions } from './history-actions.js';

/** A step starts on entering `deciding`; a change of limits while it waits for the policy starts none. */
const startingAStep = (event: MachineEvent) => event.type !== 'EXTEND_BUDGET';

/**
 * The `summaryDue` guard for a run whose view is over its compaction threshold when `due(context)`
 * says so: true when a step starts and the view is due, but not right after a summariser that
 * found nothing to summarise (no loop). The runtime provides it with the run's option.
 */
export function summaryDueWhen(due: (context: AgentContext) => boolean) {
  return ({ context, event }: { context: AgentContext; event: MachineEvent }): boolean =>
    startingAStep(event) &&
    !(event.type === 'xstate.done.actor.summary' && event.output.type === 'skipped') &&
    due(context);
}

/**
 * What a tool call's outcome makes of the call `key`: done with its result or error (keeping its
 * approval), or, its outcome unknown, a human asked again; and the active time it took.
 */
function outcomeOf(context: AgentContext, key: string, o: ToolOutcome): Partial<AgentContext> {
  if (o.type === 'outcome_unknown') {
    return {
      activeMs: context.activeMs + (o.elapsedMs ?? 0),
      calls: updateCall(context.calls, key, (c) => askAgain(c, context.approvalTtlMs, o.at, o.notDone !== true)),
    };
  }
  const body =
    o.type === 'result' ? { result: o.result, ...(o.verified ? { verified: true as const } : {}) } : { error: o.error };
  return { activeMs: context.activeMs + o.elapsedMs, calls: ended(context.calls, key, body) };
}

/** `calls` with the call `key` done with `body`, keeping its approval. */
function ended(calls: readonly StepCall[], key: string, body: { error: string } | { result: unknown }): StepCall[] {
  return updateCall(calls, key, (c) => ({
    ...c,
    state: 'done',
    done: { ...(body as StepCall['done'] & object), ...(c.approval ? { approval: c.approval } : {}) },
  }));
}

/** The runtime (not the tool) failed running the call `key`: still an observation, with the time it took. */
function faultOf(context: AgentContext, key: string, error: unknown): Partial<AgentContext> {
  return {
    activeMs: context.activeMs + elapsedOf(error),
    calls: ended(context.calls, key, { error: describeError(error) }),
  };
}

/**
 * What a priced call (a policy decision or a summary) adds: its tokens, its cost (an unknown cost
 * under a cost budget spends what is left: budget.ts) and its active time, and why a cost was unknown.
 */
function spend(
  context: AgentContext,
  d: { usage: TokenCount | null; cost?: CallCost; elapsedMs: number; estimated?: true; note?: string },
): Partial<AgentContext> {
  const unknown = d.cost !== undefined && 'unknown' in d.cost && context.limits.maxCostUsd !== null;
  const tokens = (d.usage?.inputTokens ?? 0) + (d.usage?.outputTokens ?? 0);
  const estimated = (context.usage.estimatedTokens ?? 0) + (d.estimated ? tokens : 0);
  const error = unknown ? `cost unknown: ${(d.cost as { unknown: string }).unknown}` : (d.note ?? null);
  return {
    activeMs: context.activeMs + d.elapsedMs,
    usage: {
      inputTokens: context.usage.inputTokens + (d.usage?.inputTokens ?? 0),
      outputTokens: context.usage.outputTokens + (d.usage?.outputTokens ?? 0),
      costUsd: spentAfter(context, d.cost),
      ...(estimated > 0 ? { estimatedTokens: estimated } : {}),
    },
    ...(error === null ? {} : { error }),
  };
}

export const agentMachine = setup({
  types,
  actors,
  // Every guard is named, and a condition of several parts is one named guard (not `and()`/`not()`
  // of names): Stately's editor, the machine extractor and `toJSON()` show each by its name.
  guards: {
    // Deciding's budget rule, when a step starts (not on a change of limits while the policy call
    // is in flight: that call was allowed, and what it spends is counted). See `deciding`.
    noStepsLeft: ({ context, event }) => startingAStep(event) && exhaustedBudget(context) === 'steps',
    noTokensLeft: ({ context, event }) => startingAStep(event) && exhaustedBudget(context) === 'tokens',
    noCostLeft: ({ context, event }) => startingAStep(event) && exhaustedBudget(context) === 'cost',
    noTimeLeft: ({ context, event }) => startingAStep(event) && exhaustedBudget(context) === 'time',
    // A limit on the current turn of a conversation (`limits.perTurn`), once the run's allow the step.
    noTurnLeft: ({ context, event }) => startingAStep(event) && exhaustedBudget(context) === 'turn',
    // Whether a step starting now summarises the view first. The machine has no compaction
    // option: the runtime provides this guard for a run given one (`summaryDueWhen`); without
    // it, no summary is ever made.
    summaryDue: summaryDueWhen(() => false),
    hasBudget: ({ context }) => exhaustedBudget(context) === null,
    isOutsideStop: ({ event }) => event.type === 'xstate.done.actor.policy' && event.output.type === 'exhausted',
    isFinal: ({ event }) => event.type === 'xstate.done.actor.policy' && event.output.type === 'final',
    isCalls: ({ event }) => event.type === 'xstate.done.actor.policy' && event.output.type === 'calls',
    // A policy call cut off by the active-time budget (its deadline) stops the run for time,
    // not as a failure: raising maxActiveMs and run() asks the policy again.
    activeTimeSpentByCall: ({ context, event }) =>
      event.type === 'xstate.error.actor.policy' &&
      context.limits.maxActiveMs !== null &&
      context.activeMs + elapsedOf(event.error) >= context.limits.maxActiveMs,
    hasQueuedCall: ({ context }) => nextQueued(context.calls) !== undefined,
    // Whether the next calls to run are two or more that may run together (see nextBatch).
    batchDue: ({ context }) => nextBatch(context.calls).length > 1,
    // Whether the policy's calls, once taken, begin with such a batch.
    startsABatch: ({ event }) =>
      event.type === 'xstate.done.actor.policy' && event.output.type === 'calls' && startsABatch(event.output.calls),
    // Whether a batch's event names one of its calls still in flight (a late or repeated one changes nothing).
    isRunningCall: ({ context, event }) =>
      event.type === 'CALL_DONE' && context.calls.some((c) => c.key === event.key && c.state === 'running'),
    // Whether the policy's calls, once taken, put one in flight at once (as `stepCalls` will queue them).
    startsACall: ({ context, event }) =>
      event.type === 'xstate.done.actor.policy' &&
      event.output.type === 'calls' &&
      startsACall(context, event.output.calls),
    // Whether the call in flight is the step's last without an outcome (nothing queued or pending).
    isLastCall: ({ context }) => context.calls.every((c) => c.state === 'done' || c.state === 'running'),
    hasPendingCall: ({ context }) => context.calls.some((c) => c.state === 'pending'),
    // Decisions are matched to the exact pending calls by id, never by position: a decision
    // about another request (superseded, or already decided) changes nothing.
    decisionsMatch: ({ context, event }) => event.type === 'DECIDE' && decisionsMatch(context.calls, event.decisions),
    someExpired: ({ context, event }) => event.type === 'EXPIRE' && context.calls.some((c) => isExpiredAt(c, event.at)),
    isSummary: ({ event }) => event.type === 'xstate.done.actor.summary' && event.output.type === 'summary',
    isSummaryFailure: ({ event }) => event.type === 'xstate.done.actor.summary' && event.output.type === 'failed',
    isSummaryOutsideStop: ({ event }) =>
      event.type === 'xstate.done.actor.summary' && event.output.type === 'exhausted',
    outcomeUnknown: ({ event }) => event.type === 'xstate.done.actor.tool' && event.output.type === 'outcome_unknown',
  },
  actions: {
    ...historyActions(appendCopy),
    markStepsExhausted: assign({ stoppedBy: 'steps' as const }),
    markTokensExhausted: assign({ stoppedBy: 'tokens' as const }),
    markCostExhausted: assign({ stoppedBy: 'cost' as const }),
    markTimeExhausted: assign({ stoppedBy: 'time' as const }),
    markTurnExhausted: assign({ stoppedBy: 'turn' as const }),
    // The runtime did not make the call: it does not fit a budget (the run's, or its group's in the store).
    markNoRoom: assign(({ event }) => {
      assertEvent(event, ['xstate.done.actor.policy', 'xstate.done.actor.summary']);
      const o = event.output;
      return o.type === 'exhausted' ? { stoppedBy: o.budget, error: o.why ?? null } : {};
    }),
    // Whatever stops the run now (after a change of limits), so stoppedBy is never stale.
    markExhausted: assign(({ context }) => ({ stoppedBy: exhaustedBudget(context) ?? context.stoppedBy })),
    clearStop: assign({ stoppedBy: null, error: null }),
    // Every policy outcome counts one step and adds what it cost. The runtime priced the call;
    // the machine only adds (an unknown cost under a cost budget spends what is left: budget.ts),
    // and keeps why a cost was unknown, for the human who raises the budget.
    countDecision: assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.policy');
      return { steps: context.steps + 1, ...spend(context, event.output) };
    }),
    // A summary is no step (maxSteps counts policy calls), but its tokens, cost and time are spent.
    countSummary: assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.summary');
      const s = event.output;
      return s.type === 'summary' || s.type === 'failed' ? spend(context, s) : {};
    }),
    // A failed summary leaves the history as it was and the run going; it is not tried again
    // until the history grew (at most once a step), and not at all after MAX_SUMMARY_FAILURES.
    recordSummaryFailure: assign(({ context, event }) => {
      assertEvent(event, ['xstate.done.actor.summary', 'xstate.error.actor.summary']);
      const error =
        event.type === 'xstate.error.actor.summary'
          ? describeError(event.error)
          : event.output.type === 'failed'
            ? event.output.error
            : null;
      return {
        compaction: { failures: context.compaction.failures + 1, error, retryAt: context.history.length + 1 },
        ...(event.type === 'xstate.error.actor.summary' ? { activeMs: context.activeMs + elapsedOf(event.error) } : {}),
      };
    }),
    countPolicyTime: assign(({ context, event }) => {
      assertEvent(event, 'xstate.error.actor.policy');
      return { activeMs: context.activeMs + elapsedOf(event.error) };
    }),
    recordPolicyFailure: assign(({ context, event }) => {
      assertEvent(event, 'xstate.error.actor.policy');
      return { error: describeError(event.error), activeMs: context.activeMs + elapsedOf(event.error) };
    }),
    // The next queued call, in call order, goes in flight: entering `executing` with it is the
    // write-ahead record.
    startNextCall: assign(({ context }) => {
      const next = nextQueued(context.calls);
      return next ? { calls: updateCall(context.calls, next.key, (c) => ({ ...c, state: 'running' as const })) } : {};
    }),
    recordOutcome: assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.tool');
      const call = runningCall(context.calls);
      return call && event.output.type !== 'outcome_unknown' ? outcomeOf(context, call.key, event.output) : {};
    }),
    // The tool actor itself failed (a runtime fault, not the tool's): still an observation.
    recordToolFault: assign(({ context, event }) => {
      assertEvent(event, 'xstate.error.actor.tool');
      const call = runningCall(context.calls);
      return call ? faultOf(context, call.key, event.error) : {};
    }),
    // Resumed with a non-idempotent side effect in flight: ask a human again, marked unknown.
    requestAgain: assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.tool');
      const call = runningCall(context.calls);
      return call && event.output.type === 'outcome_unknown' ? outcomeOf(context, call.key, event.output) : {};
    }),
    // A batch's calls go in flight together: entering `batching` with them is their record.
    startBatch: assign(({ context }) => {
      const keys = new Set(nextBatch(context.calls).map((c) => c.key));
      return { calls: context.calls.map((c) => (keys.has(c.key) ? { ...c, state: 'running' as const } : c)) };
    }),
    // One call of the batch ended: its outcome is recorded at once, in the order they end (the
    // step's record orders them by call when the step ends).
    recordCallOutcome: assign(({ context, event }) => {
      assertEvent(event, 'CALL_DONE');
      return outcomeOf(context, event.key, event.output);
    }),
    // The batch ended with calls it gave no outcome for (the tools actor failed, or a fault in
    // it): each is an error observation, never lost from the step's record.
    recordUnreported: assign(({ context, event }) => {
      const error =
        event.type === 'xstate.error.actor.tools'
          ? describeError(event.error)
          : 'Error: the batch ended without an outcome for this call';
      const running = runningCalls(context.calls);
      if (running.length === 0) return {};
      const elapsed = event.type === 'xstate.error.actor.tools' ? elapsedOf(event.error) : 0;
      let calls = context.calls;
      for (const call of running) calls = ended(calls, call.key, { error });
      return { activeMs: context.activeMs + elapsed, calls };
    }),
    applyDecisions: assign(({ context, event }) => {
      assertEvent(event, 'DECIDE');
      const { calls, granted } = decide(context.calls, event.decisions, event.by, event.at);
      return {
        calls,
        standing: Object.keys(granted).length > 0 ? { ...context.standing, ...granted } : context.standing,
      };
    }),
    expireCalls: assign(({ context, event }) => {
      assertEvent(event, 'EXPIRE');
      return { calls: context.calls.map((c) => (isExpiredAt(c, event.at) ? expired(c, null) : c)) };
    }),
    assignLimits: assign(({ context, event }) => {
      assertEvent(event, 'EXTEND_BUDGET');
      return { limits: { ...context.limits, ...event.limits } };
    }),
  },
}).createMachine({
  id: 'agent',
  description:
    'One agent run. Budgets are checked before every policy call; a side-effecting call runs only with a matching, unexpired approval; the whole run is plain JSON in the context.',
  context: ({ input }) => ({
    runId: input.runId,
    history: [],
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 },
    activeMs: 0,
    limits: input.limits,
    approvalTtlMs: input.approvalTtlMs,
    calls: [],
    standing: {},
    answer: null,
    stoppedBy: null,
    error: null,
    cancelReason: null,
    compaction: { failures: 0, error: null, retryAt: 0 },
  }),
  initial: 'idle',
  on: {
    CANCEL: { target: '.cancelled', actions: 'recordCancel' },
    EXTEND_BUDGET: { actions: 'assignLimits' },
  },
  states: {
    idle: {
      description: 'Created, not started: nothing has run.',
      on: { START: { target: 'running', actions: 'startRun' } },
    },
    running: {
      description: 'Deciding the next step (policy) or carrying out its calls (tools).',
      initial: 'deciding',
      states: {
        deciding: {
          description:
            'A step starts here. First the budget rule: a step the budgets do not allow is never taken (invariant 3), and a view over the compaction threshold is summarised first. Then the policy is asked for the next action: one call of it is one step, whatever it returns.',
          // Tried on entering, before the policy call starts (XState starts an invoked actor only
          // once the state is at rest), and after every event that stays here; of those, only a
          // change of limits changes what they read, and it applies from the next step: the call
          // in flight was allowed, and what it spends is counted.
          always: [
            { guard: 'noStepsLeft', target: '#agent.budget_exhausted', actions: 'markStepsExhausted' },
            { guard: 'noTokensLeft', target: '#agent.budget_exhausted', actions: 'markTokensExhausted' },
            { guard: 'noCostLeft', target: '#agent.budget_exhausted', actions: 'markCostExhausted' },
            { guard: 'noTimeLeft', target: '#agent.budget_exhausted', actions: 'markTimeExhausted' },
            { guard: 'noTurnLeft', target: '#agent.budget_exhausted', actions: 'markTurnExhausted' },
            { guard: 'summaryDue', target: 'summarising' },
          ],
          invoke: {
            id: 'policy',
            src: 'policy',
            input: ({ context }) => ({ runId: context.runId, step: context.steps + 1 }),
            onDone: [
              // The policy was not called: the call does not fit a budget (the run's, or its group's in the store).
              { guard: 'isOutsideStop', target: '#agent.budget_exhausted', actions: 'markNoRoom' },
              { guard: 'isFinal', target: '#agent.done', actions: ['countDecision', 'recordFinal'] },
              // The step begins with calls that may run together: they go in flight at once.
              { guard: 'startsABatch', target: 'batching', actions: ['countDecision', 'takeCalls', 'startBatch'] },
              // The step's first call that needs nobody goes in flight at once (its write-ahead record).
              { guard: 'startsACall', target: 'executing', actions: ['countDecision', 'takeCalls', 'startNextCall'] },
              { guard: 'isCalls', target: 'dispatching', actions: ['countDecision', 'takeCalls'] },
              // A malformed action is a step too: the model is told, and the next step starts.
              { target: 'malformed', actions: ['countDecision', 'recordMalformed'] },
            ],
            onError: [
              {
                guard: 'activeTimeSpentByCall',
                target: '#agent.budget_exhausted',
                actions: ['countPolicyTime', 'markTimeExhausted'],
              },
              { target: '#agent.failed', actions: 'recordPolicyFailure' },
            ],
          },
        },
        malformed: {
          description:
            'The policy answered something that is no action: the model is told (an error observation), and the next step starts, deciding anew. Passed through at once: a run never rests here.',
          always: { target: 'deciding' },
        },
        summarising: {
          description:
            "The view is over the compaction threshold: older turns are summarised. The summary is appended to the history (which keeps every entry); its tokens and cost are spent like a policy call's, but it is no step. A failure leaves the view as it was and the run going; a crash here asks again.",
          invoke: {
            id: 'summary',
            src: 'summarize',
            input: ({ context }) => ({ runId: context.runId, step: context.steps + 1 }),
            onDone: [
              { guard: 'isSummary', target: 'deciding', actions: ['countSummary', 'recordSummary'] },
              { guard: 'isSummaryFailure', target: 'deciding', actions: ['countSummary', 'recordSummaryFailure'] },
              // Not summarised: the call does not fit a budget (the run's, or its group's in the store).
              { guard: 'isSummaryOutsideStop', target: '#agent.budget_exhausted', actions: 'markNoRoom' },
              // Nothing to summarise (resumed without the option): deciding asks the policy.
              { target: 'deciding' },
            ],
            onError: { target: 'deciding', actions: 'recordSummaryFailure' },
          },
        },
        dispatching: {
          description:
            'Carries out the step: queued calls run in call order, one at a time, or together when they may (pure tools that need no approval); calls that need a human wait; the policy is asked again only when every call has an outcome.',
          always: [
            { guard: 'batchDue', target: 'batching', actions: 'startBatch' },
            { guard: 'hasQueuedCall', target: 'executing', actions: 'startNextCall' },
            { guard: 'hasPendingCall', target: '#agent.awaiting_approval' },
            { target: 'deciding', actions: 'finishStep' },
          ],
        },
        executing: {
          description:
            'A tool call is in flight. Entering here is the write-ahead record: the checkpoint says its key is in flight, with its approval.',
          invoke: {
            id: 'tool',
            src: 'tool',
            input: ({ context }) => runningCall(context.calls) as StepCall,
            onDone: [
              { guard: 'outcomeUnknown', target: 'dispatching', actions: 'requestAgain' },
              // The step's last call has its outcome: the step's record goes into the history, the next starts.
              { guard: 'isLastCall', target: 'deciding', actions: ['recordOutcome', 'finishStep'] },
              { target: 'dispatching', actions: 'recordOutcome' },
            ],
            onError: [
              { guard: 'isLastCall', target: 'deciding', actions: ['recordToolFault', 'finishStep'] },
              { target: 'dispatching', actions: 'recordToolFault' },
            ],
          },
          // The other calls of the step may be decided (or expire) while this one runs: they are
          // queued (or ended) and dispatched when it is done; the call in flight is not touched.
          on: {
            DECIDE: { guard: 'decisionsMatch', actions: 'applyDecisions' },
            EXPIRE: { guard: 'someExpired', actions: 'expireCalls' },
          },
        },
        batching: {
          description:
            "Calls that may run together (pure tools, needing no approval) are in flight at once, at most the Agent's `concurrency` at a time. Each one's outcome is recorded as it ends; the step's record takes them in call order, whatever order they ended in. A crash runs again only those without an outcome (they are pure); no side effect runs here.",
          invoke: {
            id: 'tools',
            src: 'tools',
            input: ({ context }) => ({ runId: context.runId, step: context.steps }),
            onDone: { target: 'dispatching', actions: 'recordUnreported' },
            onError: { target: 'dispatching', actions: 'recordUnreported' },
          },
          on: {
            CALL_DONE: { guard: 'isRunningCall', actions: 'recordCallOutcome' },
            // As while one call runs: the step's other calls may be decided (or expire) meanwhile.
            DECIDE: { guard: 'decisionsMatch', actions: 'applyDecisions' },
            EXPIRE: { guard: 'someExpired', actions: 'expireCalls' },
          },
        },
      },
    },
    awaiting_approval: {
      description:
        'Calls wait for a human: each decided by its exact id (approve, deny, edit) or expired; nothing runs without a matching, unexpired approval (invariant 1).',
      on: {
        DECIDE: { guard: 'decisionsMatch', target: 'running.dispatching', actions: 'applyDecisions' },
        EXPIRE: { guard: 'someExpired', target: 'running.dispatching', actions: 'expireCalls' },
      },
    },
    budget_exhausted: {
      description:
        "A budget stopped the run; stoppedBy names the one that stops it now. A new message (SEND) begins a new turn: the turn's limits count from zero, the run's budgets still apply.",
      on: {
        RUN: [{ guard: 'hasBudget', target: 'running', actions: 'clearStop' }, { actions: 'markExhausted' }],
        EXTEND_BUDGET: { actions: ['assignLimits', 'markExhausted'] },
        SEND: { target: 'running', actions: 'recordMessage' },
      },
    },
    failed: {
      description: 'The policy kept failing after its retries; run() tries again.',
      on: { RUN: { target: 'running', actions: 'clearStop' } },
    },
    done: {
      description:
        "The policy answered. A conversation goes on from here: a new message (SEND) is appended to the history and the run is running again, its budgets the run's, its turn's limits counted from zero.",
      on: { SEND: { target: 'running', actions: 'recordMessage' } },
    },
    cancelled: { type: 'final', description: 'Cancelled: calls in flight had their signals aborted.' },
  },
});

export type AgentMachine = typeof agentMachine;
