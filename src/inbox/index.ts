/**
 * `tollgate/inbox`: the web approval inbox. A JSON API and a page where approvers see the runs
 * awaiting approval and record their decisions, which workers apply. See docs/inbox.md.
 */
export type { DamagedView } from './api.js';
export type { InboxAuth } from './auth.js';
export type { ApiDecision, DecisionResult } from './decide.js';
export type { ApiError } from './http-errors.js';
export { createInboxServer, type InboxOptions, type InboxServer, type ListenOptions } from './server.js';
export type { CallView, RunDetail, RunView, ToolView } from './views.js';
