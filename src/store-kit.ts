/**
 * `tollgate/store-kit`: what a store author needs, in one entry point. The contract
 * (`CheckpointStore` and its types), the checked base that checks every argument once
 * (`CheckedStore`, `CheckedGroupStore`), the rules every store shares (arguments, leases, the
 * approval queue, claim order, group budgets), and the conformance suite every store runs
 * (also exported by `tollgate/testing`). docs/stores.md, "Writing your own store", shows them at work.
 */

export {
  agentAfterSave,
  checkAgentName,
  checkClock,
  checkDuration,
  checkLimit,
  checkListOptions,
  checkRunId,
  checkStoreOptions,
  checkWrite,
  MAX_AGENT_NAME_LENGTH,
  MAX_TIMER_MS,
  unstorableText,
} from './store/arguments.js';
export { type CheckedClaim, type CheckedClaimNext, CheckedStore } from './store/checked.js';
export { CheckedGroupStore, type CheckedSettlement } from './store/checked-groups.js';
export { CLAIM_CLASSES, type ClaimClass, ClaimTurns, claimClass, OLDEST_EVERY, rankOf } from './store/claim-order.js';
export { nowOf, timestampOf } from './store/clock.js';
export { checkSave, deleteConflict, saveConflict } from './store/conflicts.js';
export {
  type CheckpointStore,
  type ClaimNextOptions,
  type ClaimOptions,
  type GroupBudget,
  type GroupBudgetStore,
  type GroupCharge,
  type GroupHoldRequest,
  type GroupHoldResult,
  type GroupPeriod,
  type GroupSettlement,
  type GroupSpend,
  groupBudgetsOf,
  type Lease,
  type ListOptions,
  type OpenedRun,
  type RecordedDecision,
  type RunSummary,
  type RunWrite,
  type StoredRun,
} from './store/contract.js';
export {
  checkGroupBudget,
  checkGroupCharge,
  checkGroupHold,
  checkGroupId,
  checkGroupSettlement,
  costAfter,
  DEFAULT_GROUP_BUDGET,
  exhaustedOf,
  groupAfterJoin,
  groupHold,
  holdLeaseLost,
  lapsedHold,
  MAX_GROUP_ID_LENGTH,
  MAX_GROUP_MICRO_USD,
  MAX_GROUP_TOKENS,
  microOf,
  settledByLapse,
  spendOf,
  windowOf,
} from './store/groups.js';
export { checkProcess } from './store/holder-process.js';
export {
  busyError,
  checkClaim,
  checkLease,
  checkOwner,
  checkRenew,
  checkRenewMany,
  claimRecord,
  claimWithin,
  fenceRecord,
  isCurrent,
  isLive,
  type LeaseRecord,
  leaseLost,
  leaseOf,
  MAX_OWNER_LENGTH,
  releaseRecord,
  renewedOrLost,
  renewRecord,
} from './store/leases.js';
export { hasEnded, openByParts } from './store/open.js';
export { compareCodePoints, compareRuns } from './store/order.js';
export { earliestExpiry, matchesExpired, pendingCallsOf, pendingFields } from './store/pending-calls.js';
export {
  checkClaimNext,
  checkQueue,
  checkRecordedDecision,
  decisionOf,
  isRunnable,
  MAX_DECISION_BYTES,
} from './store/queue.js';
export {
  type Capability,
  type ClaimNextRaceJob,
  type ClaimNextRaceReport,
  type ClaimRaceJob,
  type ClaimRaceReport,
  type ConformanceCase,
  type ConformanceContext,
  checkpointStoreConformance,
  conformanceCases,
  raceClaimNext,
  raceClaims,
  raceSaves,
  type SaveRaceJob,
  type SaveRaceReport,
  serveWriter,
  skipReason,
  spawnNodeWriter,
  type TestApi,
  type WriterJob,
  type WriterProcess,
  type WriterReport,
} from './testing/conformance.js';
