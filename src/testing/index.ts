/** Test helpers for Tollgate users: `import { ManualClock, scriptedPolicy } from 'tollgate/testing'`. */

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
export { ManualClock } from './manual-clock.js';
export { scriptedPolicy } from './scripted-policy.js';
