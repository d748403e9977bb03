/** Test helpers for Tollgate users: `import { ManualClock, scriptedPolicy } from 'tollgate/testing'`. */

export {
  type Capability,
  type ConformanceCase,
  type ConformanceContext,
  checkpointStoreConformance,
  conformanceCases,
  raceSaves,
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
