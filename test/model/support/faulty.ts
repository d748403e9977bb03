/**
 * Hand-made faulty variants of the machine and the runtime: the bugs the suites exist to catch.
 * Each is built from the real thing and differs from it in one place only: a guard or action
 * swapped with `provide`, a rewired state, one of the pure call helpers the machine's actions are
 * made of (machines/calls.ts) wrapped, or the real `Agent.resume` wrapped. faulty.test.ts puts
 * each in place for the Agent and the model alike (as if the bug had been committed), runs the
 * suites against it, and requires that each is caught.
 */
import { assign, createMachine } from 'xstate';
import type * as Calls from '../../../machines/calls.js';
import type { agentMachine as AgentMachine } from '../../../machines/index.js';
import type { AgentContext, ClassifiedCall, StepCall } from '../../../machines/types.js';
import type { Agent } from '../../../src/agent.js';
import { encodeCheckpoint } from '../../../src/checkpoint/index.js';
import type { ResumeFn } from './world.js';

type Machine = typeof AgentMachine;
type CallsModule = typeof Calls;

export interface Variant {
  name: string;
  /** Replaces some of machines/calls.js (for the machine, hence the Agent and the model). */
  calls?: (real: CallsModule) => Partial<CallsModule>;
  /** The machine the Agent (and the model) will use instead of the real one. */
  machine?: (real: Machine, calls: CallsModule) => Machine;
  /** The resume the crash simulation will use instead of `Agent.resume` (given the Agent class). */
  resume?: (agent: typeof Agent) => ResumeFn;
  /** The checks expected to catch it (any one suffices). */
  caughtBy: RegExp;
}

/** A resume that restores the run with its step count dropped to the lowest consistent value. */
const dropSteps =
  (agent: typeof Agent): ResumeFn =>
  (blob, options) => {
    const parsed = JSON.parse(blob) as {
      snapshot: { context: AgentContext; children: Record<string, { snapshot: { input: unknown } }> };
    };
    const c = parsed.snapshot.context;
    c.steps = c.calls[0]?.step ?? 0;
    const policy = parsed.snapshot.children.policy;
    if (policy) policy.snapshot.input = { runId: c.runId, step: c.steps + 1 };
    return agent.resume(encodeCheckpoint(parsed.snapshot), options);
  };

const swapVerdict = (c: ClassifiedCall): ClassifiedCall => {
  if (c.verdict.kind === 'run') return { ...c, verdict: { kind: 'ask' } };
  if (c.verdict.kind === 'ask') return { ...c, verdict: { kind: 'run' } };
  return c;
};

const isPending = (c: StepCall) => c.state === 'pending';

/** The machine with the `dispatching` state's transitions replaced. */
function rewireDispatching(real: Machine, always: unknown[]): Machine {
  type Node = { states: Record<string, Node>; always?: unknown };
  const config = real.config as unknown as Node;
  const running = config.states.running as Node;
  const rewired = {
    ...config,
    states: {
      ...config.states,
      running: {
        ...running,
        states: { ...running.states, dispatching: { ...running.states.dispatching, always } },
      },
    },
  };
  return createMachine(rewired as never, real.implementations as never) as unknown as Machine;
}

export const VARIANTS: Variant[] = [
  {
    name: 'budget off by one (noStepsLeft uses > instead of >=)',
    machine: (real) =>
      real.provide({
        guards: {
          noStepsLeft: ({ context, event }) =>
            event.type !== 'EXTEND_BUDGET' && context.steps > context.limits.maxSteps,
        },
      }) as Machine,
    caughtBy: /inv3/,
  },
  {
    name: 'cost budget ignored (noCostLeft never holds)',
    machine: (real) => real.provide({ guards: { noCostLeft: () => false } }) as Machine,
    caughtBy: /inv3/,
  },
  {
    name: 'approval guard inverted (a call that needs a human runs, one that needs nobody waits)',
    calls: (real) => ({
      stepCalls: (context, classified, at) => real.stepCalls(context, classified.map(swapVerdict), at),
    }),
    caughtBy: /inv1|approval:/,
  },
  {
    name: 'denial that still executes (a denied call is queued to run, its denial kept)',
    calls: (real) => ({
      decide: (calls, decisions, by, at) => {
        const out = real.decide(calls, decisions, by, at);
        const next = out.calls.map((c, i) =>
          calls[i]?.state === 'pending' && c.done && 'error' in c.done && c.done.error.startsWith('denied by human:')
            ? { ...c, state: 'queued' as const, done: null }
            : c,
        );
        return { ...out, calls: next };
      },
    }),
    caughtBy: /inv1\/7|inv7/,
  },
  {
    name: 'resume that drops the step count',
    resume: dropSteps,
    caughtBy: /inv3|inv4|inv5/,
  },
  {
    name: 'decisions matched by position, not by id (the i-th decision goes to the i-th pending call)',
    calls: (real) => ({
      decide: (calls, decisions, by, at) => {
        const pending = calls.filter(isPending);
        const moved = decisions.map((d, i) => ({ ...d, callId: pending[i]?.id ?? d.callId }));
        return real.decide(calls, moved, by, at);
      },
    }),
    caughtBy: /inv1|inv7|spec:/,
  },
  {
    name: "an approver's edit dropped (the call runs with the model's arguments)",
    calls: (real) => ({
      decide: (calls, decisions, by, at) =>
        real.decide(
          calls,
          decisions.map(({ args: _edit, ...d }) => d),
          by,
          at,
        ),
    }),
    caughtBy: /inv1|spec:/,
  },
  {
    name: 'the policy asked again before every call of the step has an outcome (once one call ran, the waiting ones are dropped)',
    machine: (real) =>
      rewireDispatching(real, [
        { guard: 'hasQueuedCall', target: 'executing', actions: 'startNextCall' },
        {
          guard: ({ context }: { context: AgentContext }) =>
            context.calls.some(isPending) && !context.calls.some((c) => c.state === 'done'),
          target: '#agent.awaiting_approval',
        },
        { target: 'deciding', actions: 'finishStep' },
      ]),
    caughtBy: /calls:|inv6|spec:/,
  },
  {
    name: "one call's expiry expires every pending call of the step (one TTL clock for all)",
    machine: (real, calls) =>
      real.provide({
        actions: {
          expireCalls: assign(({ context }) => ({
            calls: context.calls.map((c) => (isPending(c) ? calls.expired(c, null) : c)),
          })),
        },
      }) as Machine,
    caughtBy: /spec:/,
  },
];
