/** Test helpers for Tollgate users: `import { ManualClock, scriptedPolicy } from 'tollgate/testing'`. */
export { ManualClock } from './manual-clock.js';
export { scriptedPolicy } from './scripted-policy.js';
