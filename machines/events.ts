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

/**
 * Input of the tools actor, which runs a batch of concurrent calls: the calls are the context's
 * running ones, read when it starts (so a batch resumed after some of its calls ended runs only
 * the others).
 */
export interface ToolsInput {
  runId: string;
  /** The step whose calls run. */
  step: number;
}

/**
 * One call of a batch ended (sent by the tools actor as each ends, in the order they end). A fault
 * of the runtime while running it comes as an error outcome, as the tool's own error would.
 */
export type CallEvent = { type: 'CALL_DONE'; key: string; output: ToolOutcome };

export type DoneEvent<T, Id extends string> = { type: `xstate.done.actor.${Id}`; output: T };
export type ErrorEvent<Id extends string> = { type: `xstate.error.actor.${Id}`; error: unknown };

/** Every event the machine handles, including those of its invoked actors. */
export type MachineEvent =
  | AgentEvent
  | DoneEvent<Decision, 'policy'>
  | ErrorEvent<'policy'>
  | DoneEvent<ToolOutcome, 'tool'>
  | ErrorEvent<'tool'>
  | CallEvent
  | DoneEvent<null, 'tools'>
  | ErrorEvent<'tools'>
  | DoneEvent<SummaryOutcome, 'summary'>
  | ErrorEvent<'summary'>;
