/**
 * Hand-made faulty variants of the machine and the runtime: the bugs the suites exist to catch.
 * Each is built from the real machine (guards and transitions swapped with `provide` or a
 * rewired config) or wraps the real `Agent.resume`, so it differs from the real thing in one
 * place only. faulty.test.ts runs the suites against each and requires that each is caught.
 */
import { type AnyStateMachine, createMachine } from 'xstate';
import type { agentMachine as AgentMachine } from '../../../machines/index.js';
import type { AgentContext, Decision } from '../../../machines/types.js';
import type { Agent } from '../../../src/agent.js';
import { encodeCheckpoint } from '../../../src/checkpoint.js';
import type { ResumeFn } from './world.js';

type Machine = typeof AgentMachine;

export interface Variant {
  name: string;
  /** The machine the Agent (and the model) will use instead of the real one. */
  machine?: (real: Machine) => Machine;
  /** The resume the crash simulation will use instead of `Agent.resume` (given the Agent class). */
  resume?: (agent: typeof Agent) => ResumeFn;
  /** The checks expected to catch it (any one suffices). */
  caughtBy: RegExp;
}

const output = (event: unknown) => (event as { output: Decision }).output;

/** A resume that restores the run with its step count dropped to the lowest consistent value. */
const dropSteps =
  (agent: typeof Agent): ResumeFn =>
  (blob, options) => {
    const parsed = JSON.parse(blob) as {
      snapshot: { context: AgentContext; children: Record<string, { snapshot: { input: unknown } }> };
    };
    const c = parsed.snapshot.context;
    c.steps = c.pending?.step ?? c.inflight?.step ?? 0;
    const policy = parsed.snapshot.children.policy;
    if (policy) policy.snapshot.input = { runId: c.runId, step: c.steps + 1 };
    return agent.resume(encodeCheckpoint(parsed.snapshot), options);
  };

export const VARIANTS: Variant[] = [
  {
    name: 'budget off by one (stepsExhausted uses > instead of >=)',
    machine: (real) =>
      real.provide({ guards: { stepsExhausted: ({ context }) => context.steps > context.limits.maxSteps } }) as Machine,
    caughtBy: /inv3/,
  },
  {
    name: 'approval guard inverted (needsApproval negated)',
    machine: (real) =>
      real.provide({
        guards: {
          needsApproval: ({ event }) => {
            const d = output(event);
            return d.type === 'call' && !d.needsApproval;
          },
        },
      }) as Machine,
    caughtBy: /inv1|approval:/,
  },
  {
    name: 'denial that still executes (DENY wired to the APPROVE transitions)',
    machine: (real) => {
      const config = real.config as { states: Record<string, { on: Record<string, unknown> }> };
      const awaiting = config.states.awaiting_approval as { on: Record<string, unknown> };
      const rewired = {
        ...config,
        states: {
          ...config.states,
          awaiting_approval: { ...awaiting, on: { ...awaiting.on, DENY: awaiting.on.APPROVE } },
        },
      };
      return createMachine(rewired as never, real.implementations as never) as unknown as Machine;
    },
    caughtBy: /inv1\/7|inv7/,
  },
  {
    name: 'resume that drops the step count',
    resume: dropSteps,
    caughtBy: /inv3|inv4|inv5/,
  },
];

export type { AnyStateMachine };
