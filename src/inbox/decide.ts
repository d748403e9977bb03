/**
 * Recording an approver's decisions from the API: the body is checked, the decision is
 * recorded with `recordDecision` (never applied here: a worker applies it), and a decision
 * repeated by the same approver is answered as the first one was, changing nothing.
 */
import type { ApprovalRecord, HistoryEntry, JsonObject, StepCall } from '../../machines/types.js';
import type { Clock } from '../clock.js';
import type { AgentDefinition } from '../define.js';
import { ConflictError, EditRejectedError, OptionsError, RunNotFoundError, StaleApprovalError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { checkDecisions } from '../runtime/decisions.js';
import type { CheckpointStore, RecordedDecision } from '../store/contract.js';
import type { Decisions, Tool } from '../types.js';
import { recordDecision } from '../worker/record.js';
import { decodeRun } from './views.js';

/** The longest note an approver may write. */
export const MAX_NOTE = 4_000;

/** One decision as the API takes it. */
export type ApiDecision = { approve: true; note?: string; args?: JsonObject } | { approve: false; note: string };

/** The API's answer to a recorded decision. */
export interface DecisionResult {
  recorded: RecordedDecision;
  /** True when this approver had already made this very decision: nothing changed. */
  repeated: boolean;
}

/**
 * Reads `{ decisions: { [callId]: { approve, note?, args? } } }`; a denial needs a note.
 * @throws OptionsError on anything else.
 */
export function parseDecisions(body: unknown): Record<string, ApiDecision> {
  if (!isPlainObject(body) || Object.keys(body).some((k) => k !== 'decisions') || !isPlainObject(body.decisions)) {
    throw new OptionsError(
      'the body must be { "decisions": { "<callId>": { "approve": true|false, "note"?, "args"? } } }',
    );
  }
  const entries = Object.entries(body.decisions);
  if (entries.length === 0) throw new OptionsError('decisions name no call');
  // No prototype: a call id is any key the body has, `__proto__` included (refused later as no pending call).
  const out: Record<string, ApiDecision> = Object.create(null);
  for (const [id, d] of entries) {
    const where = `call ${JSON.stringify(id)}`;
    if (!isPlainObject(d)) throw new OptionsError(`${where}: a decision must be an object`);
    const extra = Object.keys(d).filter((k) => !['approve', 'note', 'args'].includes(k));
    if (extra.length > 0) throw new OptionsError(`${where}: unknown field ${JSON.stringify(extra[0])}`);
    const { approve, note, args } = d;
    if (typeof approve !== 'boolean') throw new OptionsError(`${where}: approve must be true or false`);
    if (note !== undefined && (typeof note !== 'string' || note.length > MAX_NOTE)) {
      throw new OptionsError(`${where}: note must be a string of at most ${MAX_NOTE} characters`);
    }
    if (approve) {
      if (args !== undefined && !isPlainObject(args)) throw new OptionsError(`${where}: args must be a JSON object`);
      out[id] = {
        approve,
        ...(note === undefined ? {} : { note }),
        ...(args === undefined ? {} : { args: args as JsonObject }),
      };
    } else {
      if (args !== undefined) throw new OptionsError(`${where}: args go with an approval only`);
      if (typeof note !== 'string' || note.trim() === '') {
        throw new OptionsError(`${where}: a denial needs a note (the reason the model is told)`);
      }
      out[id] = { approve, note };
    }
  }
  return out;
}

/** Everything the store says about how a call was decided: applied, or recorded for a worker. */
function decisionsOf(calls: readonly StepCall[], history: readonly HistoryEntry[]): Map<string, ApprovalRecord> {
  const found = new Map<string, ApprovalRecord>();
  for (const entry of history) {
    const approval = entry.role === 'tool' ? entry.approval : undefined;
    if (approval && !approval.standing) found.set(approval.callId, approval);
  }
  for (const call of calls)
    if (call.approval && !call.approval.standing) found.set(call.approval.callId, call.approval);
  return found;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The recorded decision this request repeats, if every call it names was already decided this
 * way by this approver (recorded and waiting for a worker, or applied); else null.
 */
function repeatOf(
  decisions: Record<string, ApiDecision>,
  by: string,
  run: ReturnType<typeof decodeRun>,
  queued: RecordedDecision | null,
): RecordedDecision | null {
  const applied = decisionsOf(run.context.calls, run.context.history);
  const ids = Object.keys(decisions);
  if (queued && queued.by === by && ids.length > 0 && ids.every((id) => Object.hasOwn(queued.decisions, id))) {
    const match = ids.every((id) => {
      const q = queued.decisions[id] as { approve?: boolean; args?: unknown };
      const d = decisions[id] as ApiDecision;
      return q.approve === d.approve && (!('args' in d) || same(q.args, d.args));
    });
    if (match) return queued;
  }
  const records = ids.map((id) => applied.get(id));
  const all = records.every((r, i) => {
    const d = decisions[ids[i] as string] as ApiDecision;
    return r && r.by === by && r.approved === d.approve && (!('args' in d) || same(r.args, d.args));
  });
  if (!all || records.length === 0) return null;
  const first = records[0] as ApprovalRecord;
  return {
    by,
    at: first.at,
    decisions: Object.fromEntries(
      records.map((r) => [
        (r as ApprovalRecord).callId,
        { approve: (r as ApprovalRecord).approved, note: (r as ApprovalRecord).note },
      ]),
    ),
  };
}

/**
 * Records `decisions` on `runId` by `by`. A repeat of this approver's own decision answers
 * `repeated: true` and records nothing. Errors are recordDecision's (typed: stale, expired,
 * already decided, edit rejected, busy).
 */
export async function decideRun(
  store: CheckpointStore,
  runId: string,
  decisions: Record<string, ApiDecision>,
  context: { by: string; agents: ReadonlyMap<string, AgentDefinition<any>>; clock: Clock | undefined },
): Promise<DecisionResult> {
  const record = await store.load(runId);
  if (!record) throw new RunNotFoundError(`no run ${JSON.stringify(runId)}`, { runId });
  const run = decodeRun(record);
  const repeated = repeatOf(decisions, context.by, run, record.decision);
  if (repeated) return { recorded: repeated, repeated: true };
  // A call decided by someone else (or otherwise by this approver): say who, rather than "not pending".
  const decided = decisionsOf(run.context.calls, run.context.history);
  for (const id of Object.keys(decisions)) {
    const earlier = decided.get(id);
    if (earlier && !run.context.calls.some((c) => c.id === id && c.state === 'pending')) {
      throw new ConflictError(
        `call ${JSON.stringify(id)} was already ${earlier.approved ? 'approved' : 'denied'} by ${JSON.stringify(earlier.by)} at ${earlier.at}; nothing was recorded`,
        record.version,
        record.version,
        { runId },
      );
    }
  }
  const agent = record.agent === null ? undefined : context.agents.get(record.agent);
  const edit = Object.entries(decisions).find(([, d]) => d.approve && d.args !== undefined);
  if (edit && !agent) throw noDefinition(runId, edit[0], record.agent);
  const recorded = await recordDecision(store, runId, decisions as Decisions, {
    by: context.by,
    ...(agent ? { agent } : {}),
    ...(context.clock ? { clock: context.clock } : {}),
  });
  return { recorded, repeated: false };
}

/**
 * Checks edited arguments for one pending call exactly as a decision would be checked (the
 * tool's schema and approval rule), recording nothing.
 * @returns the arguments as the tool would get them.
 * @throws the typed errors of a decision (EditRejectedError, StaleApprovalError, …).
 */
export async function checkEdit(
  store: CheckpointStore,
  runId: string,
  callId: string,
  args: unknown,
  context: { agents: ReadonlyMap<string, AgentDefinition<any>>; now: number },
): Promise<JsonObject> {
  const record = await store.load(runId);
  if (!record) throw new RunNotFoundError(`no run ${JSON.stringify(runId)}`, { runId });
  const run = decodeRun(record);
  const agent = record.agent === null ? undefined : context.agents.get(record.agent);
  if (!agent) throw noDefinition(runId, callId, record.agent);
  if (!run.context.calls.some((c) => c.state === 'pending' && c.id === callId)) {
    throw new StaleApprovalError(`call ${JSON.stringify(callId)} is not pending`, callId, '', { runId });
  }
  const tools = new Map<string, Tool>(agent.tools.map((t: Tool) => [t.name, t]));
  const [checked] = await checkDecisions(
    { [callId]: { approve: true, args } },
    {
      calls: run.context.calls,
      history: run.context.history,
      tools,
      at: new Date(context.now).toISOString(),
      details: { runId, status: run.status },
    },
  );
  return (checked?.args ?? {}) as JsonObject;
}

/** The error for an edit the server cannot check: it was not given the run's agent definition. */
export function noDefinition(runId: string, callId: string, agent: string | null): EditRejectedError {
  return new EditRejectedError(
    `call ${JSON.stringify(callId)}: edits cannot be checked: the inbox was not given the definition of agent ${JSON.stringify(agent)} (tollgate serve <module>, or createInboxServer({ agents }))`,
    callId,
    { runId },
  );
}
