/**
 * The actions that append to the history, on one append strategy: the machine's own is
 * `appendCopy` (a snapshot never changes once made); the runtime provides these with
 * `appendInPlace` (O(1) per step). Also the machine's setup types, shared by both.
 */
import { assertEvent, fromPromise, setup } from 'xstate';
import { turnStartOf } from './budget.js';
import { stepCalls } from './calls.js';
import type { MachineEvent, PolicyInput, ToolInput, ToolsInput } from './events.js';
import { type Append, assistantEntry, toolEntry } from './history.js';
import type {
  AgentContext,
  AgentInput,
  Decision,
  HistoryEntry,
  StepCall,
  SummaryOutcome,
  ToolOutcome,
} from './types.js';

export const types = {
  context: {} as AgentContext,
  events: {} as MachineEvent,
  input: {} as AgentInput,
};

export const actors = {
  // Placeholders: the runtime provides the real implementations with machine.provide().
  policy: fromPromise<Decision, PolicyInput>(async () => {
    throw new Error('the policy actor was not provided');
  }),
  tool: fromPromise<ToolOutcome, ToolInput>(async () => {
    throw new Error('the tool actor was not provided');
  }),
  // Runs a batch of concurrent calls, sending CALL_DONE (or CALL_FAILED) as each ends.
  tools: fromPromise<null, ToolsInput>(async () => {
    throw new Error('the tools actor was not provided');
  }),
  summarize: fromPromise<SummaryOutcome, PolicyInput>(async () => {
    throw new Error('the summarize actor was not provided');
  }),
};

/** For typing the actions defined outside the machine's setup. */
const typed = setup({ types, actors });

/** The tool entries of the finished calls, in call order: the step's record. */
function finishedEntries(calls: readonly StepCall[]): HistoryEntry[] {
  const several = calls.length > 1;
  return calls.filter((c) => c.state === 'done').map((c) => toolEntry(c, several));
}

/**
 * The actions that append to the history, on one append strategy: the machine's is
 * `appendCopy`; the runtime provides these with `appendInPlace` (O(1) per step).
 */
export function historyActions(append: Append) {
  return {
    startRun: typed.assign(({ event }) => {
      assertEvent(event, 'START');
      if (!('messages' in event)) return { history: append([], { role: 'user', content: event.goal }) };
      return { history: append([], ...event.messages.map((message) => ({ ...message }))) };
    }),
    // A new turn of the conversation: the message is appended, the turn's spending counts from
    // here, and what ended the last turn (its answer, a budget's stop) is over.
    recordMessage: typed.assign(({ context, event }) => {
      assertEvent(event, 'SEND');
      return {
        history: append(context.history, { role: 'user', content: event.message }),
        turn: turnStartOf(context),
        answer: null,
        stoppedBy: null,
        error: null,
      };
    }),
    recordFinal: typed.assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.policy');
      const d = event.output;
      if (d.type !== 'final') return {};
      return { answer: d.final, history: append(context.history, { role: 'assistant', final: d.final }) };
    }),
    // The step's calls, each its own unit: refused ones done at once, the others queued or pending.
    takeCalls: typed.assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.policy');
      const d = event.output;
      if (d.type !== 'calls') return {};
      const calls = stepCalls(context, d.calls, d.at);
      return { calls, history: append(context.history, assistantEntry(calls, d.text)) };
    }),
    recordMalformed: typed.assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.policy');
      const d = event.output;
      if (d.type !== 'malformed') return {};
      return { history: append(context.history, { role: 'tool', tool: d.tool, error: d.error }) };
    }),
    // A summary is appended, never written over what it covers: the journal keeps every entry.
    // Its failure count is reset; the failure it may have ended is no longer the state of things.
    recordSummary: typed.assign(({ context, event }) => {
      assertEvent(event, 'xstate.done.actor.summary');
      const s = event.output;
      if (s.type !== 'summary') return {};
      return {
        history: append(context.history, { role: 'summary', text: s.text, covers: s.covers }),
        compaction: { failures: 0, error: null, retryAt: 0 },
      };
    }),
    // Every call has its outcome: the tool entries go into the history in call order.
    finishStep: typed.assign(({ context }) => ({
      calls: [],
      history: append(context.history, ...finishedEntries(context.calls)),
    })),
    // A cancelled run has nothing pending, in flight or stopped: those belong to live states. The
    // calls that finished keep their record (an effect that happened stays in the journal).
    recordCancel: typed.assign(({ context, event }) => {
      assertEvent(event, 'CANCEL');
      const entries = finishedEntries(context.calls);
      return {
        cancelReason: event.reason,
        calls: [],
        stoppedBy: null,
        ...(entries.length > 0 ? { history: append(context.history, ...entries) } : {}),
      };
    }),
  };
}
