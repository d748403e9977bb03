/**
 * Test helpers for Tollgate users: `import { checkInvariants, recordEffects, scriptedPolicy } from 'tollgate/testing'`
 * (docs/testing-your-agent.md).
 */

export {
  checkResumable,
  type ResumeCheck,
  type ResumeProblem,
  type ResumeProblemKind,
} from './check-runs.js';
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
} from './conformance.js';
export { type CrashableStore, crashableStore } from './crashable-store.js';
export { type Effect, type RecordedTools, recordEffects } from './effects.js';
export { type Fork, type ForkOptions, forkRun } from './fork.js';
export {
  checkInvariants,
  type InvariantName,
  type InvariantOptions,
  type RunRecord,
  type Violation,
} from './invariants.js';
export { ManualClock } from './manual-clock.js';
export { type Divergence, type ReplayReport, recordedPolicy, replayRun } from './replay.js';
export { scriptedPolicy } from './scripted-policy.js';
