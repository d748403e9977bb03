/** The events the agent machine handles: the user's, and its invoked actors' done and error events. */
import type { AgentEvent, Decision, StepCall, SummaryOutcome, ToolOutcome } from './types.js';

/** Input of the policy actor. Kept small: an invoked actor's input is persisted. */
export interface PolicyInput {
  runId: string;
  /** The step this call will be, 1-based. */
  step: number;
}

/** Input of the tool actor: the call it runs (the write-ahead record holds it too). */
export type ToolInput = StepCall;

export type DoneEvent<T, Id extends string> = { type: `xstate.done.actor.${Id}`; output: T };
export type ErrorEvent<Id extends string> = { type: `xstate.error.actor.${Id}`; error: unknown };

/** Every event the machine handles, including those of its invoked actors. */
export type MachineEvent =
  | AgentEvent
  | DoneEvent<Decision, 'policy'>
  | ErrorEvent<'policy'>
  | DoneEvent<ToolOutcome, 'tool'>
  | ErrorEvent<'tool'>
  | DoneEvent<SummaryOutcome, 'summary'>
  | ErrorEvent<'summary'>;
