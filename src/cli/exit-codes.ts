/** Exit codes of the `tollgate` command, stable for scripts (docs/cli.md), and the CLI's own errors. */
import type { Status } from '../../machines/types.js';
import { UserError } from '../errors.js';

export const EXIT = {
  /** The run is done (or the command succeeded). */
  ok: 0,
  /** The runtime or the environment failed: a store that cannot be reached, a missing driver, a bug. */
  error: 1,
  /** A usage error: bad arguments, unknown run, a module that exports no agent, a corrupt file. */
  usage: 2,
  /** The run waits for a human's approval. */
  awaitingApproval: 3,
  /** A budget stopped the run. */
  budgetExhausted: 4,
  /** The policy failed after its retries. */
  failed: 5,
  /** The run was cancelled (by someone else: `tollgate cancel` itself ends with 0). */
  cancelled: 6,
  /** `tollgate replay`: the agent module would not do what the stored run did. */
  diverged: 7,
  /** `tollgate check`: a stored run would not resume as it stands under the agent module. */
  wouldBreak: 8,
} as const;

/** Each exit code with what it means, for `--help` (docs/cli.md has the same table). */
export const EXIT_MEANINGS: readonly (readonly [number, string])[] = [
  [EXIT.ok, 'done, or the command succeeded'],
  [EXIT.error, 'the runtime or the environment failed (store unreachable, driver or build missing)'],
  [EXIT.usage, 'usage error: bad arguments, unknown run, bad module or file, stale decision'],
  [EXIT.awaitingApproval, 'the run waits for approval'],
  [EXIT.budgetExhausted, 'a budget stopped the run'],
  [EXIT.failed, 'the policy failed after its retries'],
  [EXIT.cancelled, 'the run is cancelled'],
  [EXIT.diverged, 'tollgate replay: the module would not do what the run did'],
  [EXIT.wouldBreak, 'tollgate check: a stored run would not resume as it stands under the module'],
];

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

/** The caller's mistake, found by the CLI: reported as one line, exit code 2. */
export class CliUsageError extends Error {
  override name = 'CliUsageError';
}

/**
 * What the machine lacks, not the caller's mistake: a driver or loader that is not installed,
 * Tollgate's own build missing. Reported as one line, exit code 1.
 */
export class CliEnvironmentError extends Error {
  override name = 'CliEnvironmentError';
}

/** The exit code for an error that ends a command. */
export function exitCodeOf(error: unknown): number {
  return error instanceof UserError || error instanceof CliUsageError ? EXIT.usage : EXIT.error;
}
