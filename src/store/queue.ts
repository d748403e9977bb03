/**
 * The rules of the approval queue and the worker's claim, shared by every store: what a
 * recorded decision must look like, when a run is runnable, and `claimNext`'s options. The
 * memory, file and SQLite stores decide with these functions; the Postgres store says the same
 * in SQL.
 */
import type { Status } from '../../machines/types.js';
import { ConflictError, OptionsError, RunNotFoundError, RunStateError } from '../errors.js';
import { checkKeys, showValue } from '../option-keys.js';
import type { ProcessIdentity } from '../process-identity.js';
import { checkAgentName, checkDuration, checkRunId, unstorableText } from './arguments.js';
import type { ClaimNextOptions, RecordedDecision, RunSummary } from './contract.js';
import { checkProcess } from './holder-process.js';
import { checkOwner } from './leases.js';
import { earliestExpiry } from './pending-calls.js';

/** The longest recorded decision a store keeps, as JSON text (a decision map with edited arguments). */
export const MAX_DECISION_BYTES = 1_000_000;

/**
 * Checks `queueDecision`'s arguments alike in every store and returns the decision as the JSON
 * text a store keeps: a `RecordedDecision` (decisions a non-array object, `by` a string, `at`
 * an ISO-8601 time), whose text every store can keep.
 * @throws OptionsError naming what is wrong.
 */
export function checkRecordedDecision(runId: unknown, decision: RecordedDecision, expectedVersion: unknown): string {
  const call = 'queueDecision';
  checkRunId(call, runId);
  const fail = (what: string, value: unknown): never => {
    throw new OptionsError(`${call}: ${what}, got ${showValue(value)} (run ${showValue(runId)})`);
  };
  if (!Number.isSafeInteger(expectedVersion) || (expectedVersion as number) < 1) {
    fail('expectedVersion must be a whole number ≥ 1', expectedVersion);
  }
  if (decision === null || typeof decision !== 'object' || Array.isArray(decision)) {
    return fail('the decision must be an object { decisions, by, at }', decision);
  }
  checkKeys(call, decision, ['decisions', 'by', 'at'], 'decision field');
  const { decisions, by, at } = decision;
  if (decisions === null || typeof decisions !== 'object' || Array.isArray(decisions)) {
    fail('decision.decisions must be an object of call id → decision', decisions);
  }
  if (Object.keys(decisions).length === 0) fail('decision.decisions must decide at least one call', decisions);
  if (typeof by !== 'string') fail('decision.by must be a string', by);
  if (typeof at !== 'string' || !Number.isFinite(Date.parse(at))) fail('decision.at must be an ISO-8601 time', at);
  let text: string;
  try {
    text = JSON.stringify({ decisions, by, at });
  } catch (error) {
    return fail(`the decision must be JSON (${(error as Error).message})`, decisions);
  }
  if (text.length > MAX_DECISION_BYTES)
    fail(`the decision must be at most ${MAX_DECISION_BYTES} characters of JSON`, text.length);
  const why = unstorableText(text);
  if (why) fail(`the decision holds ${why}; no store can keep it`, decisions);
  return text;
}

/**
 * Whether `queueDecision` may record on a run found as `current` (null: none): throws the
 * store-independent errors, in this order — no run, wrong version, not awaiting approval, a
 * decision already recorded. (The lease rule is the store's: `fenceRecord` without a lease.)
 */
export function checkQueue(
  runId: string,
  current: { version: number; status: Status; decision: unknown } | null,
  expectedVersion: number,
): void {
  if (!current) throw new RunNotFoundError(`queueDecision: no run ${JSON.stringify(runId)} in the store`, { runId });
  if (current.version !== expectedVersion) {
    throw new ConflictError(
      `queueDecision: run ${JSON.stringify(runId)} is at version ${current.version}, not ${expectedVersion}: it changed since it was read`,
      expectedVersion,
      current.version,
      { runId },
    );
  }
  if (current.status !== 'awaiting_approval') {
    throw new RunStateError(
      `queueDecision: run ${JSON.stringify(runId)} is ${current.status}; only a run awaiting approval takes a decision`,
      ['awaiting_approval'],
      { runId, status: current.status },
    );
  }
  if (current.decision !== null && current.decision !== undefined) {
    throw new ConflictError(
      `queueDecision: run ${JSON.stringify(runId)} already has a decision recorded, not yet applied`,
      expectedVersion,
      current.version,
      { runId },
    );
  }
}

/** A recorded decision read back from a store (its JSON text, or the object), or null. */
export function decisionOf(stored: unknown): RecordedDecision | null {
  if (stored === null || stored === undefined) return null;
  return (typeof stored === 'string' ? JSON.parse(stored) : stored) as RecordedDecision;
}

/**
 * Whether a worker may take `run` at the store's `now` (ms), its lease aside: it is `running`
 * (submitted, or its owner died mid-run), or awaiting approval with a recorded decision or an
 * expired pending call.
 */
export function isRunnable(run: Pick<RunSummary, 'status' | 'decision' | 'pendingCalls'>, now: number): boolean {
  if (run.status === 'running') return true;
  if (run.status !== 'awaiting_approval') return false;
  if (run.decision !== null) return true;
  const earliest = earliestExpiry(run.pendingCalls);
  return earliest !== null && earliest <= now;
}

/** Checks `claimNext`'s options alike in every store; `process` defaults to null. */
export function checkClaimNext(options: ClaimNextOptions): ClaimNextOptions & { process: ProcessIdentity | null } {
  const call = 'claimNext';
  if (options === null || typeof options !== 'object') {
    throw new OptionsError(`${call}: options must be an object { owner, leaseMs, agents }, got ${showValue(options)}`);
  }
  checkKeys(call, options, ['owner', 'leaseMs', 'agents', 'process']);
  checkOwner(call, options.owner);
  if (options.leaseMs === undefined) throw new OptionsError(`${call}: leaseMs is required (1 to 2^31−1 ms)`);
  const leaseMs = checkDuration(call, 'leaseMs', options.leaseMs, 0);
  if (!Array.isArray(options.agents) || options.agents.length === 0) {
    throw new OptionsError(
      `${call}: agents must be a non-empty array of agent names, got ${showValue(options.agents)}`,
    );
  }
  for (const name of options.agents) checkAgentName(call, name);
  const process = checkProcess(call, options.process);
  return { owner: options.owner, leaseMs, agents: [...new Set(options.agents)], process };
}
