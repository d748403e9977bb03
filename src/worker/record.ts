/**
 * `recordDecision`: an approver's side of the approval queue. It reads the stored run, checks
 * the decision exactly as `agent.decide` would (exact call ids, not expired, edits allowed and
 * valid), and records it in the store for a worker to apply. Nothing runs in the caller.
 */

import { z } from 'zod';
import { isExpiredAt } from '../../machines/calls.js';
import { hasLoneSurrogate } from '../../machines/strings.js';
import type { CallDecision } from '../../machines/types.js';
import { untilAborted } from '../abort.js';
import { decodeStored, statusOfValue } from '../checkpoint/index.js';
import { type Clock, isoTime, systemClock } from '../clock.js';
import { type AgentDefinition, resumeOptionsOf } from '../define.js';
import { ApprovalExpiredError, CheckpointError, ConflictError, OptionsError, RunNotFoundError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { checkedApart, checkOptions, fn, must, type OptionShape, text } from '../option-schema.js';
import { checkText, parseResumeOptions, runShape } from '../options.js';
import { readDecisions } from '../runtime/decisions.js';
import type { CheckpointStore, RecordedDecision } from '../store/contract.js';
import type { Decisions, Tool } from '../types.js';
import { checkDefinition, checkQueueStore } from './checks.js';

/** Options of `recordDecision`. */
export interface RecordDecisionOptions {
  /** Who decided: kept with the decision and in the run's history. */
  by: string;
  /**
   * The run's agent definition: edited arguments are checked against its tool's schema and rule,
   * as `decide` checks them. Without it, a decision that edits arguments is refused.
   * @default none
   */
  agent?: AgentDefinition<any>;
  /** With `recordDecision(store, runId, approved, …)`: the note (a denial's reason the model hears). @default '' */
  note?: string;
  /** With `recordDecision(store, runId, approved, …)`: the pending call's id; needed when several are pending. */
  callId?: string;
  /** The time the decision is recorded at, checked against each call's expiry. @default the definition's clock, else systemClock */
  clock?: Clock;
  /**
   * Aborting it stops the call: it rejects with the signal's reason. Aborted before the store was
   * asked to record the decision, nothing is recorded; while it was being asked, the decision may
   * have been recorded (as after a crash): `store.load(runId).decision` tells. @default none
   */
  signal?: AbortSignal;
}

const recordShape = {
  by: must('a string naming who decided (without lone surrogates)', (e) =>
    z.custom<string>((v) => typeof v === 'string' && v.trim() !== '' && !hasLoneSurrogate(v), e),
  ),
  // Checked apart (checks.ts), for an error that names what is wrong with the definition.
  agent: checkedApart,
  note: text('a string').optional(),
  callId: text('a string').optional(),
  clock: z.looseObject({ now: fn }, { error: 'an object with now()' }).optional(),
  signal: runShape.signal,
} satisfies OptionShape<RecordDecisionOptions>;

/**
 * Records a human's decision on a run awaiting approval, for a worker to apply. Two forms, as
 * `decide`: a map `{ [callId]: { approve: true, note?, args?, always? } | { approve: false, note? } }`,
 * or `approved` (true/false) for the only pending call or the one `callId` names. The decision
 * is checked in full first; one problem throws a typed error and nothing is recorded.
 *
 * A recorded decision is decided in time: the worker applies it at the time it was recorded,
 * even if the call's approval expires before the worker gets to it.
 * @returns the decision as recorded.
 * @throws RunNotFoundError if there is no such run.
 * @throws NoPendingApprovalError if the run awaits no approval.
 * @throws StaleApprovalError if a call id is not a pending call's id.
 * @throws ApprovalExpiredError if a named call has expired.
 * @throws EditRejectedError if edited arguments are not allowed or not valid.
 * @throws ConflictError if a decision is already recorded (the first decider wins) or the run changed meanwhile.
 * @throws RunBusyError while a worker holds the run (retry shortly).
 *
 * @example
 * await recordDecision(store, runId, { [callId]: { approve: true, note: 'ok' } }, { by: 'ana' });
 */
export async function recordDecision(
  store: CheckpointStore,
  runId: string,
  decisions: Decisions | boolean,
  options: RecordDecisionOptions,
): Promise<RecordedDecision> {
  const call = 'recordDecision';
  checkQueueStore(call, store);
  checkText(call, 'runId', runId);
  const { by, agent, note, callId, signal } = checkOptions(call, options, recordShape);
  signal?.throwIfAborted();
  if (agent !== undefined) checkDefinition(call, 'agent', agent);
  if (typeof decisions !== 'boolean' && (note !== undefined || callId !== undefined)) {
    throw new OptionsError(`${call}: note and callId go with recordDecision(store, runId, approved, …) only`);
  }
  const clock = options.clock ?? agent?.clock ?? systemClock;
  const tools: ReadonlyMap<string, Tool> = agent
    ? parseResumeOptions(resumeOptionsOf(agent), call).runtime.tools
    : new Map();
  if (!agent && isPlainObject(decisions)) {
    const edit = Object.entries(decisions).find(
      ([, d]) => isPlainObject(d) && (d as Record<string, unknown>).args !== undefined,
    );
    if (edit) {
      throw new OptionsError(
        `${call}: call ${JSON.stringify(edit[0])} edits its arguments: pass { agent } (the run's definition) so that the edit is checked against the tool's schema and rule`,
        { runId },
      );
    }
  }

  const record = await untilAborted(signal, store.load(runId));
  if (!record) throw new RunNotFoundError(`${call}: no run ${JSON.stringify(runId)} in the store`, { runId });
  if (agent && record.agent !== null && record.agent !== agent.name) {
    throw new OptionsError(
      `${call}: run ${JSON.stringify(runId)} is a run of agent ${JSON.stringify(record.agent)}, not ${JSON.stringify(agent.name)}`,
      { runId },
    );
  }
  let run: ReturnType<typeof decodeStored>;
  try {
    run = decodeStored(record.head, record.entries, record.base);
  } catch (error) {
    if (!(error instanceof CheckpointError)) throw error;
    throw new CheckpointError(`${call}: run ${JSON.stringify(runId)}: ${error.message}`, error.path, {
      runId,
      cause: error,
    });
  }
  const status = statusOfValue(run.value);
  if (record.decision) {
    throw new ConflictError(
      `${call}: run ${JSON.stringify(runId)} already has a decision recorded (by ${JSON.stringify(record.decision.by)}), not yet applied`,
      record.version,
      record.version,
      { runId, status },
    );
  }
  const at = isoTime(clock.now());
  const where = { calls: run.context.calls, history: run.context.history, tools, at, details: { runId, status } };
  const args: [unknown, unknown, unknown] =
    typeof decisions === 'boolean'
      ? [decisions, note, callId === undefined ? {} : { callId }]
      : [decisions, {}, undefined];
  const checked = await readDecisions(args, where).catch((error: unknown) => {
    // The checks are decide's; the message names the call the caller made.
    if (error instanceof Error) error.message = error.message.replace(/^decide\b/, call);
    throw error;
  });
  // Either form: a decision recorded for a worker is one that can still apply (decide's boolean
  // form would apply it as "approval expired"; recorded, it would only wait for a worker to).
  for (const d of checked.decisions) {
    const pending = run.context.calls.find((c) => c.id === d.callId);
    if (pending && isExpiredAt(pending, at)) {
      throw new ApprovalExpiredError(
        `${call}: call ${JSON.stringify(d.callId)} expired at ${pending.expiresAt}; nothing was recorded`,
        d.callId,
        pending.expiresAt as string,
        { runId, status },
      );
    }
  }
  const recorded: RecordedDecision = { decisions: asMap(checked.decisions), by, at };
  signal?.throwIfAborted();
  await untilAborted(signal, store.queueDecision(runId, recorded, record.version));
  return recorded;
}

/** The checked decisions in `decide`'s map form, as the store keeps them. */
function asMap(decisions: readonly CallDecision[]): Record<string, unknown> {
  return Object.fromEntries(
    decisions.map((d) => [
      d.callId,
      d.approve
        ? { approve: true, note: d.note, ...(d.args ? { args: d.args } : {}), ...(d.always ? { always: true } : {}) }
        : { approve: false, note: d.note },
    ]),
  );
}
