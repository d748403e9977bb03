/** Tollgate's public API. Everything a user imports from 'tollgate' is named here. */

export { agentMachine } from '../machines/index.js';
export { Agent } from './agent.js';
export { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './checkpoint/index.js';
export { type Clock, systemClock } from './clock.js';
export { type AgentDefinition, agentOptionsOf, defineAgent, isAgentDefinition, resumeOptionsOf } from './define.js';
export {
  ApprovalExpiredError,
  CheckpointError,
  ConflictError,
  EditRejectedError,
  NoPendingApprovalError,
  OptionsError,
  RunNotFoundError,
  RunStateError,
  SchemaVersionError,
  StaleApprovalError,
  StoreDamagedError,
  StoreUnavailableError,
  SystemError,
  TollgateError,
  UserError,
} from './errors.js';
export {
  type CheckpointStore,
  checkLimit,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from './store.js';
export {
  checkListOptions,
  checkRunId,
  checkWrite,
  compareCodePoints,
  compareRuns,
  MAX_TIMER_MS,
} from './stores/rules.js';
export type {
  Action,
  AgentOptions,
  ApprovalContext,
  ApprovalRecord,
  ApprovalRule,
  AssistantCall,
  BudgetKind,
  CallDecisionInput,
  CallRequest,
  DecideManyOptions,
  DecideOptions,
  Decisions,
  HistoryEntry,
  Json,
  JsonObject,
  Limits,
  PendingCall,
  Policy,
  PolicyContext,
  ResumeOptions,
  RunEvent,
  RunState,
  Status,
  Tool,
  ToolContext,
  Usage,
} from './types.js';
