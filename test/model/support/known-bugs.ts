/**
 * Runtime bugs these suites found and that are not fixed yet (the runtime is not this suite's to
 * change). Each has an `it.fails` test that reproduces it; the suites report a violation that
 * matches a known bug separately instead of failing on it, so every other check keeps running.
 * When a bug is fixed its `it.fails` test starts failing: delete the entry here and that test.
 */
export interface KnownBug {
  id: string;
  summary: string;
  matches(violation: string): boolean;
}

/**
 * None open. Fixed (commit 6843266), each now a regression test: `cancelled-checkpoint-rejected`
 * (paths.int.test.ts) and `resume-lower-budget-still-calls` (commands.test.ts).
 */
export const KNOWN_BUGS: KnownBug[] = [];

/** The known bug a violation stands for, if any. */
export function knownBug(violation: string): KnownBug | undefined {
  return KNOWN_BUGS.find((bug) => bug.matches(violation));
}

/**
 * Statuses from which the command sequences cancel. With `cancel-keeps-call` fixed, cancel from
 * every non-final status (add idle, awaiting_approval, budget_exhausted and running.executing).
 */
