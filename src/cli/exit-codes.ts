/** Exit codes of the `tollgate` command, stable for scripts (docs/cli.md). */
import type { Status } from '../../machines/types.js';

export const EXIT = {
  /** The run is done (or the command succeeded). */
  ok: 0,
  /** The runtime or the environment failed: a store that cannot be reached, a bug. */
  error: 1,
  /** A usage error: bad arguments, unknown run, a module that exports no agent, a corrupt file. */
  usage: 2,
  /** The run waits for a human's approval. */
  awaitingApproval: 3,
  /** A budget stopped the run. */
  budgetExhausted: 4,
  /** The policy failed after its retries. */
  failed: 5,
  /** The run was cancelled. */
  cancelled: 6,
} as const;

/** The exit code a run's status maps to. */
export function exitFor(status: Status): number {
  switch (status) {
    case 'awaiting_approval':
      return EXIT.awaitingApproval;
    case 'budget_exhausted':
      return EXIT.budgetExhausted;
    case 'failed':
      return EXIT.failed;
    case 'cancelled':
      return EXIT.cancelled;
    default:
      return EXIT.ok;
  }
}

/** An error the CLI reports as one line with a usage exit code. */
export class CliUsageError extends Error {
  override name = 'CliUsageError';
}
