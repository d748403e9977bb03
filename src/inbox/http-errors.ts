/**
 * Tollgate's typed errors as HTTP answers: `{ error: { code, message, runId?, callId? } }` with
 * the status a client can act on. A refused decision changes nothing, whatever the status.
 */
import {
  ApprovalExpiredError,
  CheckpointError,
  ConflictError,
  EditRejectedError,
  NoPendingApprovalError,
  OptionsError,
  RunBusyError,
  RunNotFoundError,
  RunStateError,
  StaleApprovalError,
  StoreUnavailableError,
  TollgateError,
} from '../errors.js';

/** The body of every error answer. */
export interface ApiError {
  error: {
    /** A stable code: `unauthenticated`, `forbidden`, `bad_request`, `not_found`, `stale`, `not_pending`, `already_decided`, `busy`, `expired`, `edit_rejected`, `too_large`, `unavailable`, `damaged`, `internal`. */
    code: string;
    message: string;
    runId?: string;
    callId?: string;
  };
}

/** What a client is told of a damaged run; the full error, which may quote it or name files, is logged. */
export const DAMAGED_REASON = "this run's stored state could not be read";

/** An error answer made here, for what is not a Tollgate error (authentication, CSRF, sizes). */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
  }
}

/** The status and body for an error thrown while answering a request. */
export function errorAnswer(error: unknown): { status: number; body: ApiError } {
  const [status, code] = classify(error);
  // A damaged run's error can quote its stored state or name the server's files: the client is
  // told which run, the server's log (see server.ts) gets the rest.
  const message =
    error instanceof CheckpointError
      ? `${DAMAGED_REASON} (see the server log)`
      : status === 500 && !(error instanceof TollgateError)
        ? 'internal error (see the server log)'
        : error instanceof Error
          ? error.message
          : String(error);
  const body: ApiError = { error: { code, message } };
  if (error instanceof TollgateError && error.runId !== undefined) body.error.runId = error.runId;
  if (
    error instanceof StaleApprovalError ||
    error instanceof ApprovalExpiredError ||
    error instanceof EditRejectedError
  ) {
    body.error.callId = error.callId;
  }
  return { status, body };
}

function classify(error: unknown): [number, string] {
  if (error instanceof HttpError) return [error.status, error.code];
  if (error instanceof RunNotFoundError) return [404, 'not_found'];
  if (error instanceof ApprovalExpiredError) return [410, 'expired'];
  if (error instanceof StaleApprovalError) return [409, 'stale'];
  if (error instanceof NoPendingApprovalError || error instanceof RunStateError) return [409, 'not_pending'];
  if (error instanceof RunBusyError) return [409, 'busy'];
  if (error instanceof ConflictError) return [409, 'already_decided'];
  if (error instanceof EditRejectedError) return [422, 'edit_rejected'];
  if (error instanceof CheckpointError) return [500, 'damaged'];
  if (error instanceof OptionsError) return [400, 'bad_request'];
  if (error instanceof StoreUnavailableError) return [503, 'unavailable'];
  return [500, 'internal'];
}
