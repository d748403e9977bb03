/**
 * `tollgate/worker`: scale-out. Workers claim runnable runs from a shared store and work them;
 * `submitRun`, `submitMessage` and `recordDecision` put work in the store without running anything in the caller;
 * `expireDue` makes approval expiry fire. See docs/workers.md.
 */
export { type ExpiredRun, type ExpireOptions, expireDue } from './expire.js';
export { type SubmitMessageOptions, submitMessage } from './message.js';
export type { WorkerOptions } from './options.js';
export { type RecordDecisionOptions, recordDecision } from './record.js';
export { type SubmitOptions, submitRun } from './submit.js';
export { type StopOptions, Worker, type WorkerEvent } from './worker.js';
