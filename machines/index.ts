/**
 * `tollgate/machine`: the agent machine and its types, nothing of the runtime. Import it into
 * Stately tooling, drive it with XState's pure `transition()`, or provide your own actors.
 */
export { type AgentMachine, agentMachine, historyActions } from './agent-machine.js';
export { exhaustedBudget } from './budget.js';
export { callIdOf, keyOf, pendingCalls } from './calls.js';
export {
  type Cover,
  latestSummary,
  MAX_SUMMARY_FAILURES,
  MAX_SUMMARY_LENGTH,
  modelView,
  nextCover,
  turnsOf,
} from './compaction.js';
export { describeError } from './describe-error.js';
export type { DoneEvent, ErrorEvent, MachineEvent, PolicyInput, ToolInput } from './events.js';
export { type Append, appendCopy, appendInPlace, deepFreeze } from './history.js';
export {
  type AgentContext,
  type AgentEvent,
  type AgentInput,
  type ApprovalRecord,
  type AssistantCall,
  type BudgetKind,
  type CallCost,
  type CallDecision,
  type CallOutcome,
  type CallState,
  type ClassifiedCall,
  type CompactionState,
  type Decision,
  type HistoryEntry,
  type Json,
  type JsonObject,
  type Limits,
  type PendingCall,
  type RunUsage,
  STATUSES,
  type Status,
  type StepCall,
  type SummaryEntry,
  type SummaryOutcome,
  type TokenCount,
  type ToolOutcome,
  type Usage,
  type Verdict,
} from './types.js';
