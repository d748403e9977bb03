/**
 * Tollgate's typed errors. One base class; `UserError` for the caller's mistakes (a bad option,
 * a wrong state, a stale approval, a bad checkpoint) and `SystemError` for the runtime's own
 * faults. Every error carries the run id and status when it concerns a run, so the caller can
 * act on it (resume, decide, inspect).
 */
import type { Status } from '../machines/types.js';
import type { ProcessIdentity } from './process-identity.js';

export interface ErrorDetails {
  runId?: string;
  status?: Status;
  cause?: unknown;
}

/** The base of every error Tollgate throws. */
export class TollgateError extends Error {
  /** The run the error concerns, when there is one. */
  readonly runId: string | undefined;
  /** The run's status when the error was thrown, when there is a run. */
  readonly status: Status | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.runId = details.runId;
    this.status = details.status;
  }
}

/** The caller asked for something that cannot be done: fix the call, not the runtime. */
export class UserError extends TollgateError {}

/** The runtime failed on its own account: a bug or a broken environment. */
export class SystemError extends TollgateError {}

/** An option given to `new Agent`, `Agent.resume`, `decide` or `extendBudget` is invalid. */
export class OptionsError extends UserError {}

/** The operation does not apply to the run's current status (e.g. `start` on a started run). */
export class RunStateError extends UserError {
  /** The statuses in which the operation would have been allowed. */
  readonly expected: readonly Status[];

  constructor(message: string, expected: readonly Status[], details: ErrorDetails = {}) {
    super(message, details);
    this.expected = expected;
  }
}

/** `decide` was called but no call awaits approval. */
export class NoPendingApprovalError extends RunStateError {}

/** `decide` named a call id that is not the pending call's: the decision is stale. */
export class StaleApprovalError extends UserError {
  readonly callId: string;
  readonly pendingId: string;

  constructor(message: string, callId: string, pendingId: string, details: ErrorDetails = {}) {
    super(message, details);
    this.callId = callId;
    this.pendingId = pendingId;
  }
}

/** A checkpoint could not be read: not JSON, wrong format or version, wrong shape. */
export class CheckpointError extends UserError {
  /** Where in the checkpoint the problem is (`snapshot.context.steps`), when known. */
  readonly path: string | undefined;

  constructor(message: string, path?: string, details: ErrorDetails = {}) {
    super(message, details);
    this.path = path;
  }
}

/** A store write expected a version that is no longer current: another writer got there first. */
export class ConflictError extends TollgateError {
  readonly expectedVersion: number;
  readonly actualVersion: number | null;

  constructor(message: string, expectedVersion: number, actualVersion: number | null, details: ErrorDetails = {}) {
    super(message, details);
    this.expectedVersion = expectedVersion;
    this.actualVersion = actualVersion;
  }
}

/**
 * A store's database holds a schema newer than this Tollgate knows (another service was
 * upgraded first). Nothing was changed: upgrade Tollgate, or point it at another database.
 */
export class SchemaVersionError extends SystemError {
  /** The schema version the database records. */
  readonly found: number;
  /** The newest schema version this Tollgate reads and writes. */
  readonly supported: number;

  constructor(message: string, found: number, supported: number, details: ErrorDetails = {}) {
    super(message, details);
    this.found = found;
    this.supported = supported;
  }
}

/** `Agent.load` (or a store operation) named a run the store does not have. */
export class RunNotFoundError extends UserError {}

/**
 * A store cannot be used right now: its server is down, unreachable or not answering in time,
 * the connection broke, the database is locked by another process beyond the wait allowed,
 * or the disk refuses writes. The message names the store (never a password) and what failed.
 *
 * A failed save may or may not have been committed (the statement can reach the server just
 * before the connection breaks): an `Agent` whose save failed stops for good, and
 * `Agent.load` reads what the store holds. Retrying later, with a new `Agent.load`, is safe.
 */
export class StoreUnavailableError extends SystemError {}

/**
 * A store's storage is not what Tollgate wrote: a file that is not a database, a database whose
 * pages are damaged. Nothing was changed; retrying will not help: restore it from a backup or
 * point the store elsewhere. (One damaged run in a `FileStore` is a `CheckpointError` instead,
 * for that run only.)
 */
export class StoreDamagedError extends SystemError {}

/** `decide` named a call whose approval has expired: nothing was decided (`run()` records the expiry). */
export class ApprovalExpiredError extends UserError {
  readonly callId: string;
  readonly expiresAt: string;

  constructor(message: string, callId: string, expiresAt: string, details: ErrorDetails = {}) {
    super(message, details);
    this.callId = callId;
    this.expiresAt = expiresAt;
  }
}

/** `decide` edited a call's arguments where that is not allowed, or to arguments its tool refuses. */
export class EditRejectedError extends UserError {
  readonly callId: string;

  constructor(message: string, callId: string, details: ErrorDetails = {}) {
    super(message, details);
    this.callId = callId;
  }
}

/**
 * A run is held by another owner's live lease: a `claim` found it taken (and, with `wait`, it
 * stayed taken that long), or a `save`/`delete` without a lease came while someone holds it.
 * Nothing was changed. Not the caller's mistake nor a fault: another worker is on the run. Try
 * again after `until`, or claim with `{ wait }`.
 *
 * `token` and `holderProcess` say which lease and which process: a holder on this machine that is
 * provably dead (`provablyDead(error.holderProcess)`) can have exactly that lease released
 * (`store.release` with its token succeeds only while it is still the run's), as `Agent.load` does.
 */
export class RunBusyError extends TollgateError {
  /** The owner id of the live lease. */
  readonly holder: string;
  /** ISO-8601 time the holder's lease ends unless it is renewed (the store's clock). */
  readonly until: string;
  /** The fencing token of the holder's lease, or null when the store did not say. */
  readonly token: number | null;
  /** The holder's process, as its claim recorded it, or null when unknown. */
  readonly holderProcess: ProcessIdentity | null;

  constructor(
    message: string,
    holder: string,
    until: string,
    details: ErrorDetails = {},
    held: { token?: number | null; holderProcess?: ProcessIdentity | null } = {},
  ) {
    super(message, details);
    this.holder = holder;
    this.until = until;
    this.token = held.token ?? null;
    this.holderProcess = held.holderProcess ?? null;
  }
}

/**
 * A lease is no longer the run's current one: the run was claimed again after it lapsed (or
 * by the same owner anew), or the lease was released. A save, delete or renew with it was
 * refused, and nothing was changed. The owner has lost the run: it must stop working on it
 * (call no policy or tool), and may claim it again to carry on from what the store holds.
 */
export class LeaseLostError extends TollgateError {
  /** The fencing token of the lease that was refused. */
  readonly token: number;
  /** The run's current token (it only grows), or null when the run has no lease record at all. */
  readonly currentToken: number | null;
  /** Who holds the run now (a live lease or not), or null when nobody does (released). */
  readonly holder: string | null;

  constructor(
    message: string,
    token: number,
    currentToken: number | null,
    holder: string | null,
    details: ErrorDetails = {},
  ) {
    super(message, details);
    this.token = token;
    this.currentToken = currentToken;
    this.holder = holder;
  }
}
