/**
 * Checking a human's decisions before anything is sent: every decision names a pending call by
 * its exact id, none has expired, edits are allowed and valid. One bad decision refuses them all
 * with a typed error, and nothing is saved or run.
 */
import { isExpiredAt } from '../../machines/calls.js';
import type { CallDecision, HistoryEntry, JsonObject, StepCall } from '../../machines/types.js';
import {
  ApprovalExpiredError,
  EditRejectedError,
  NoPendingApprovalError,
  OptionsError,
  StaleApprovalError,
} from '../errors.js';
import { isPlainObject, toJson } from '../json.js';
import { checkKeys, showValue } from '../option-keys.js';
import { checkText } from '../options.js';
import { validateArgs } from '../tool-schema.js';
import type { Tool } from '../types.js';
import { approvalRule, historyBeforeStep } from './approval.js';

interface Where {
  calls: readonly StepCall[];
  /** The run's history (a copy), for the tool's approval rule. */
  history: readonly HistoryEntry[];
  tools: ReadonlyMap<string, Tool>;
  at: string;
  details: { runId: string; status: import('../../machines/types.js').Status };
}

function pendingOnly(where: Where): StepCall[] {
  const pending = where.calls.filter((c) => c.state === 'pending');
  if (pending.length === 0) {
    throw new NoPendingApprovalError(
      `decide: no call awaits approval (status ${where.details.status})`,
      ['awaiting_approval'],
      where.details,
    );
  }
  return pending;
}

/** The pending call a legacy `decide(approved, note, { callId })` decides. */
export function legacyTarget(where: Where, callId: string | undefined): StepCall {
  const pending = pendingOnly(where);
  const first = pending[0] as StepCall;
  if (callId === undefined) {
    if (pending.length > 1) {
      throw new OptionsError(
        `decide: ${pending.length} calls are pending (${pending.map((c) => c.id).join(', ')}): name the one you decide with { callId }, or decide them together with decide({ [callId]: … })`,
        where.details,
      );
    }
    return first;
  }
  const call = pending.find((c) => c.id === callId);
  if (!call) {
    throw new StaleApprovalError(
      `decide: call ${JSON.stringify(callId)} is not the pending call ${JSON.stringify(first.id)}`,
      callId,
      first.id,
      where.details,
    );
  }
  return call;
}

const DECISION_KEYS = ['approve', 'note', 'args', 'always'];

async function checkEdit(call: StepCall, args: unknown, where: Where): Promise<JsonObject> {
  const refuse = (why: string) =>
    new EditRejectedError(`decide: call ${JSON.stringify(call.id)}: ${why}`, call.id, where.details);
  const tool = where.tools.get(call.tool);
  if (!tool) throw refuse(`tool ${call.tool} is not among this agent's tools`);
  if (tool.allowEdit === false) throw refuse(`tool ${call.tool} does not allow edits (allowEdit: false)`);
  if (call.outcome === 'unknown') {
    throw refuse('its outcome is unknown (it was in flight at a crash): it runs again only as it was, or is denied');
  }
  if (!isPlainObject(args)) throw refuse(`args must be an object, got ${showValue(args)}`);
  const copy = toJson(args, 'args');
  if (!copy.ok) throw refuse(copy.reason);
  const valid = await validateArgs(tool, copy.value as JsonObject);
  if (!valid.ok) throw refuse(valid.error);
  // A rule's automatic denial is a hard limit: an approver's edit cannot step over it.
  const ctx = {
    runId: where.details.runId,
    step: call.step,
    tool: call.tool,
    history: () => historyBeforeStep(where.history),
  };
  const answer = await approvalRule(tool, valid.value, ctx);
  if (answer.kind === 'deny') throw refuse(`the tool's rule denies these arguments: ${answer.reason}`);
  return copy.value as JsonObject;
}

/**
 * The decisions of `decide({ [callId]: { approve, note?, args?, always? } })`, checked as a whole
 * against the pending calls; throws the first problem found.
 */
export async function checkDecisions(map: unknown, where: Where): Promise<CallDecision[]> {
  if (!isPlainObject(map)) throw new OptionsError(`decide: decisions must be an object, got ${showValue(map)}`);
  const ids = Object.keys(map);
  if (ids.length === 0) throw new OptionsError('decide: decisions name no call', where.details);
  const pending = pendingOnly(where);
  const out: CallDecision[] = [];
  for (const id of ids) {
    const call = pending.find((c) => c.id === id);
    if (!call) {
      throw new StaleApprovalError(
        `decide: call ${JSON.stringify(id)} is not pending (pending: ${pending.map((c) => c.id).join(', ')})`,
        id,
        (pending[0] as StepCall).id,
        where.details,
      );
    }
    const d = map[id];
    checkKeys(`decide: call ${JSON.stringify(id)}`, d, DECISION_KEYS);
    const { approve, note = '', args, always } = d as Record<string, unknown>;
    if (typeof approve !== 'boolean') {
      throw new OptionsError(
        `decide: call ${JSON.stringify(id)}: approve must be true or false, got ${showValue(approve)}`,
      );
    }
    checkText(`decide: call ${JSON.stringify(id)}`, 'note', note);
    if (!approve && (args !== undefined || always !== undefined)) {
      throw new OptionsError(`decide: call ${JSON.stringify(id)}: args and always go with an approval only`);
    }
    if (always !== undefined && typeof always !== 'boolean') {
      throw new OptionsError(
        `decide: call ${JSON.stringify(id)}: always must be true or false, got ${showValue(always)}`,
      );
    }
    if (isExpiredAt(call, where.at)) {
      throw new ApprovalExpiredError(
        `decide: call ${JSON.stringify(id)} expired at ${call.expiresAt}; nothing was decided`,
        id,
        call.expiresAt as string,
        where.details,
      );
    }
    const edited = args === undefined ? undefined : await checkEdit(call, args, where);
    out.push({
      callId: id,
      approve,
      note,
      ...(edited ? { args: edited } : {}),
      ...(always === true ? { always: true } : {}),
    });
  }
  return out;
}

/**
 * The arguments of `decide`, in either form, checked: `(approved, note?, { callId?, by?, signal? })`
 * or `({ [callId]: decision }, { by?, signal? })` (`signal` only where the caller takes one:
 * `withSignal`). Errors carry the run's id and status.
 */
export async function readDecisions(
  [first, second, third]: [unknown, unknown, unknown],
  where: Where,
  withSignal = false,
): Promise<{ decisions: CallDecision[]; by: string; signal?: AbortSignal }> {
  const extra = withSignal ? ['signal'] : [];
  try {
    if (typeof first === 'boolean') {
      const note = second === undefined ? '' : second;
      checkText('decide', 'note', note);
      const opts = decideOptions(third, ['callId', 'by', ...extra]);
      if (opts.callId !== undefined) checkText('decide', 'callId', opts.callId);
      const call = legacyTarget(where, opts.callId);
      return {
        decisions: [{ callId: call.id, approve: first, note: note as string }],
        by: opts.by ?? 'human',
        ...signalOf(opts),
      };
    }
    if (first === null || typeof first !== 'object') {
      throw new OptionsError(`decide: expected true, false or a map of decisions by call id, got ${showValue(first)}`);
    }
    const opts = decideOptions(second, ['by', ...extra]);
    return { decisions: await checkDecisions(first, where), by: opts.by ?? 'human', ...signalOf(opts) };
  } catch (error) {
    // The caller's mistakes name the run they concern, like every other error of the Agent.
    if (error instanceof OptionsError && error.runId === undefined) {
      throw new OptionsError(error.message, { ...where.details, cause: error });
    }
    throw error;
  }
}

function decideOptions(value: unknown, known: string[]): { callId?: string; by?: string; signal?: AbortSignal } {
  const opts = value === undefined ? {} : value;
  try {
    checkKeys('decide', opts, known);
  } catch (error) {
    const hint = typeof opts === 'string' ? ' (to name the call you reviewed, pass { callId })' : '';
    throw new OptionsError(`${(error as Error).message}${hint}`);
  }
  const { by, signal } = opts as { by?: unknown; signal?: unknown };
  if (by !== undefined) checkText('decide', 'by', by);
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new OptionsError(`decide: signal must be an AbortSignal, got ${showValue(signal)}`);
  }
  return opts as { callId?: string; by?: string; signal?: AbortSignal };
}

const signalOf = (opts: { signal?: AbortSignal }) => (opts.signal === undefined ? {} : { signal: opts.signal });
