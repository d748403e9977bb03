/**
 * What can go wrong between a `PostgresStore` and its server, as Tollgate's typed errors. The
 * server said no for a reason of its own (a timeout, a shutdown, no resources): a
 * `StoreUnavailableError`, retry later. The connection broke or stopped answering: a
 * `StoreUnavailableError` too, and for a write the outcome is unknown — the statement may have
 * been committed just before the connection went — so the message says to load the run.
 */
import { StoreUnavailableError, SystemError, TollgateError } from '../../errors.js';

/** What a fault message needs to say about the operation that failed. */
export interface FaultContext {
  /** `PostgresStore.save`, … */
  call: string;
  /** The server, without its password. */
  where: string;
  /** Whether the operation writes: then a broken connection leaves its outcome unknown. */
  writes: boolean;
  statementTimeoutMs: number;
  queryTimeoutMs: number;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The error's SQLSTATE when the server reported it, else null (the connection or the driver failed). */
export function sqlStateOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SQLSTATE.test(code) ? code : null;
}

/**
 * Whether the connection that saw `error` must be thrown away rather than pooled again: it
 * broke, timed out with a query in flight, or the server is ending it.
 */
export function connectionIsSpent(error: unknown): boolean {
  if (error instanceof TollgateError) return false;
  const state = sqlStateOf(error);
  return state === null || state.startsWith('08') || state.startsWith('57P');
}

function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | null;
  const parts = [e?.message, e?.code].filter((p) => typeof p === 'string' && p !== '');
  return parts.length > 0 ? parts.join(', ') : String(error);
}

/** `error` as a typed error; Tollgate's own errors pass through. */
export function pgFault(error: unknown, ctx: FaultContext): TollgateError {
  if (error instanceof TollgateError) return error;
  const details = { cause: error };
  const state = sqlStateOf(error);
  const unknownOutcome = ctx.writes
    ? '; the write may or may not have been committed: load the run to see what the store holds'
    : '';
  if (state === null) {
    if ((error as Error | null)?.message === 'Query read timeout') {
      return new StoreUnavailableError(
        `${ctx.call}: ${ctx.where} did not answer within queryTimeoutMs (${ctx.queryTimeoutMs} ms); the connection was dropped${unknownOutcome}`,
        details,
      );
    }
    return new StoreUnavailableError(
      `${ctx.call}: lost the connection to ${ctx.where} (${reasonOf(error)})${unknownOutcome}`,
      details,
    );
  }
  if (state === '57014') {
    // A cancelled statement is rolled back: nothing it did was committed.
    return new StoreUnavailableError(
      `${ctx.call}: ${ctx.where} cancelled the statement (statementTimeoutMs is ${ctx.statementTimeoutMs} ms); nothing was written`,
      details,
    );
  }
  // 08 connection, 40 serialization/deadlock, 53 resources (disk, memory, connections),
  // 57 operator intervention (shutdown), 58 system I/O: the server's state, not the request.
  const message = (error as Error).message;
  if (/^(08|40|53|57|58)/.test(state)) {
    const outcome = connectionIsSpent(error) ? unknownOutcome : '';
    return new StoreUnavailableError(
      `${ctx.call}: ${ctx.where} failed: ${message} (SQLSTATE ${state})${outcome}`,
      details,
    );
  }
  return new SystemError(`${ctx.call}: ${ctx.where} refused the statement: ${message} (SQLSTATE ${state})`, details);
}
