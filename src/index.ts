/** Tollgate's public API. Everything a user imports from 'tollgate' is named here. */

export { agentMachine } from '../machines/agent.js';
export { Agent } from './agent.js';
export { CHECKPOINT_FORMAT, CHECKPOINT_VERSION } from './checkpoint.js';
export { type Clock, systemClock } from './clock.js';
export { type AgentDefinition, agentOptionsOf, defineAgent, isAgentDefinition, resumeOptionsOf } from './define.js';
export {
  CheckpointError,
  ConflictError,
  LeaseLostError,
  NoPendingApprovalError,
  OptionsError,
  RunBusyError,
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
  type ClaimOptions,
  checkLimit,
  type Lease,
  type ListOptions,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from './store.js';
export {
  busyError,
  checkClaim,
  checkLease,
  checkRenew,
  claimRecord,
  claimWithin,
  fenceRecord,
  isCurrent,
  isLive,
  type LeaseRecord,
  leaseLost,
  leaseOf,
  releaseRecord,
  renewRecord,
} from './stores/leases.js';
export {
  checkListOptions,
  checkRunId,
  checkWrite,
  compareCodePoints,
  compareRuns,
  earliestExpiry,
  MAX_TIMER_MS,
  matchesExpired,
  pendingCallsOf,
  pendingFields,
} from './stores/rules.js';
export type {
  Action,
  AgentOptions,
  BudgetKind,
  DecideOptions,
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
