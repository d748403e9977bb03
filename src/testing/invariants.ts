/**
 * The run's invariants as a function a user calls on any run (an agent, a checkpoint, a stored
 * run): what its journal shows, checked against the tools that ran and, when the test recorded
 * them, the tool calls that were actually made (`recordEffects`) and what landed downstream.
 * It judges the record, never the runtime's word: each approval is matched to its call by the
 * call id's digest of the tool and arguments, and each rule is asked again.
 */
import { callIdOf } from '../../machines/calls.js';
import { describeError } from '../../machines/describe-error.js';
import type { AgentContext, ApprovalRecord, JsonObject, Limits } from '../../machines/types.js';
import {
  decodeCheckpoint,
  decodeStored,
  encodeCheckpoint,
  type PersistedRun,
  statusOfValue,
} from '../checkpoint/index.js';
import { approvalRule, type RuleAnswer } from '../runtime/approval.js';
import { validateArgs } from '../tool-schema.js';
import type { Status, Tool } from '../types.js';
import type { Effect } from './effects.js';
import { historyProblem } from './history-shape.js';

/** Which promise a violation breaks. */
export type InvariantName = 'checkpoint' | 'history' | 'approval' | 'denial' | 'once' | 'budget' | 'forbidden';

/** One broken promise: which, what the record shows, and the history entries that show it. */
export interface Violation {
  invariant: InvariantName;
  message: string;
  /** Indices into the run's history (empty when the violation is in no entry). */
  entries: number[];
}

/** A run as `checkInvariants` takes it: an agent, a checkpoint, or what `store.load` returned. */
export type RunRecord =
  | { checkpoint(): string }
  | string
  | { head: string; entries: readonly string[]; base?: string | null };

export interface InvariantOptions {
  /**
   * The tools the run ran with. With them each call that ran is held to its tool's approval rule
   * (asked again with the arguments that ran) and to `allowEdit`, and `effects` to `idempotent`.
   */
  tools?: readonly Tool[];
  /** The calls of the tools' `fn` the test recorded (`recordEffects`), for this run or several. */
  effects?: readonly Effect[];
  /**
   * The idempotency keys of the effects that landed downstream, one per landing (your fake
   * payment provider's log): a key that landed twice breaks "at most once".
   */
  applied?: readonly string[];
  /** The budgets the run must have kept; each defaults to the run's own (`state.limits`). */
  limits?: Partial<Limits>;
  /**
   * Your own statement of calls that must never run, written apart from the tools' rules (a
   * rule with a bug lets them through): a reason for a forbidden call, else `false`.
   */
  forbidden?: (call: { tool: string; args: JsonObject }) => string | false;
}

/** Errors the runtime records for a call that did not run (a tool's own errors say it did). */
const NOT_RUN = [
  'denied by human: ',
  'denied by rule: ',
  'approval expired',
  'invalid arguments',
  'unknown tool ',
  'malformed action: ',
  'refused: ',
  'not run: ',
];

export type Outcome = { result?: unknown; error?: string; approval?: ApprovalRecord; outcome?: 'unknown' };

/** One call of the run, with where the history shows it and what became of it. */
export interface CallRecord {
  key: string;
  step: number;
  tool: string;
  args: JsonObject;
  /** The assistant entry that asked for it (or -1 for a call of the step in progress). */
  at: number;
  /** Its tool entry, or -1. */
  entryAt: number;
  outcome: Outcome | null;
  /** The step in progress: a call in flight may have started its side effect. */
  inFlight: boolean;
  approval: ApprovalRecord | null;
}

const ranOf = (o: Outcome | null): boolean =>
  o !== null && ('result' in o || (typeof o.error === 'string' && !NOT_RUN.some((p) => o.error?.startsWith(p))));

/**
 * The run's calls: the history's, step by step (keys as the runtime makes them), then the step in
 * progress; and the steps the history shows (each policy answer: an assistant entry, or a
 * malformed action's tool entry alone).
 */
export function callsOf(c: Pick<AgentContext, 'runId' | 'history' | 'calls'>): {
  records: CallRecord[];
  steps: number;
  /** For each step, the history index of its answer: an assistant entry, or a malformed action's tool entry. */
  answers: number[];
} {
  const records: CallRecord[] = [];
  const answerAt: number[] = [];
  const h = c.history as readonly Record<string, unknown>[];
  let steps = 0;
  let i = 1;
  while (i < h.length) {
    const e = h[i] as Record<string, unknown>;
    i++;
    if (e.role === 'tool') {
      steps++; // a malformed action stands alone and counts a step
      answerAt.push(i - 1);
    }
    if (e.role !== 'assistant' || 'content' in e) continue; // an earlier reply is no step
    steps++;
    answerAt.push(i - 1);
    if ('final' in e) continue;
    const several = Array.isArray(e.calls);
    const calls = several
      ? (e.calls as { id: string; tool: string; args: JsonObject }[])
      : [{ id: e.id, tool: e.tool as string, args: e.args as JsonObject }];
    // The tool entries that follow answer the calls: in order, or (a cancelled step) a subsequence, by id.
    const answers = new Map<number, number>();
    let n = 0;
    while (i < h.length && h[i]?.role === 'tool' && answers.size < calls.length) {
      const index = several ? calls.findIndex((call, k) => k >= n && call.id === h[i]?.id) : 0;
      if (index < 0) break;
      answers.set(index, i);
      n = index + 1;
      i++;
    }
    for (const [k, call] of calls.entries()) {
      const entryAt = answers.get(k) ?? -1;
      const entry = entryAt >= 0 ? (h[entryAt] as Outcome) : null;
      records.push({
        key: several ? `${c.runId}:${steps}.${k + 1}` : `${c.runId}:${steps}`,
        step: steps,
        tool: call.tool,
        args: call.args,
        at: i - 1 - answers.size,
        entryAt,
        outcome: entry,
        inFlight: false,
        approval: entry?.approval ?? null,
      });
    }
  }
  // The step in progress: its assistant entry is in the history; its calls' outcomes are in the run.
  for (const call of c.calls) {
    const fields = {
      outcome: call.done,
      // A call whose outcome is unknown and that waits for a human again ran earlier under an
      // approval the run no longer records: only a call running now is held to its approval.
      inFlight: call.state === 'running',
      approval: call.done?.approval ?? call.approval,
    };
    const record = records.find((r) => r.key === call.key && r.entryAt < 0);
    if (record) Object.assign(record, fields);
    else
      records.push({
        key: call.key,
        step: call.step,
        tool: call.tool,
        args: call.args,
        at: -1,
        entryAt: -1,
        ...fields,
      });
  }
  return { records, steps, answers: answerAt };
}

const at = (r: CallRecord) => [r.at, r.entryAt].filter((i) => i >= 0);

/** Whether `approval` names this very call: its key, and the digest of its tool and model arguments. */
function names(approval: ApprovalRecord, r: CallRecord): boolean {
  const m = /^(.*)#(\d+)@[0-9a-f]+$/.exec(approval.callId);
  return m !== null && m[1] === r.key && approval.callId === callIdOf(r.key, Number(m[2]), r.tool, r.args);
}

/** The standing grants the run's record holds: approvals a human gave with `always`, by call id. */
function grantsOf(c: AgentContext, records: readonly CallRecord[]): Map<string, ApprovalRecord & { tool: string }> {
  const grants = new Map<string, ApprovalRecord & { tool: string }>();
  for (const r of records) {
    if (r.approval?.approved && r.approval.always && r.approval.standing === undefined)
      grants.set(r.approval.callId, { ...r.approval, tool: r.tool });
  }
  for (const [tool, grant] of Object.entries(c.standing)) grants.set(grant.callId, { ...grant, tool });
  return grants;
}

/** The rule's answer for the arguments that ran, asked as the runtime asks it (after the schema). */
async function ruleFor(
  tool: Tool,
  args: JsonObject,
  c: AgentContext,
  r: CallRecord,
): Promise<RuleAnswer | { invalid: string }> {
  const valid = await validateArgs(tool, args, {});
  if (!valid.ok) return { invalid: valid.error };
  return approvalRule(tool, valid.value, siteOf(c, r));
}

/** Where a rule is asked again: the run, the call's step, and the history before the call's assistant entry, as the runtime first asks it. */
const siteOf = (c: AgentContext, r: { step: number; tool: string; at: number }) => ({
  runId: c.runId,
  step: r.step,
  tool: r.tool,
  history: () => (r.at >= 0 ? c.history.slice(0, r.at) : c.history),
});

/** A run record decoded and checked (an agent's checkpoint, a checkpoint, a stored run). @throws CheckpointError */
export function decodeRun(run: RunRecord): PersistedRun {
  if (typeof run === 'string') {
    const decoded = decodeCheckpoint(run);
    if (encodeCheckpoint(decoded) !== run)
      throw new Error('the checkpoint does not round-trip: encoding it again gives other text');
    return decoded;
  }
  if ('checkpoint' in run && typeof run.checkpoint === 'function') return decodeRun(run.checkpoint());
  const stored = run as { head: string; entries: readonly string[]; base?: string | null };
  return decodeStored(stored.head, stored.entries, stored.base);
}

/** Where the history breaks its contract (its shapes, calls paired with results), or null. */
function historyFault(c: AgentContext, status: Status): Violation | null {
  const mode = status === 'cancelled' ? 'cancelled' : c.calls.length > 0 ? 'inProgress' : 'complete';
  const fault = historyProblem(c.history, mode);
  return fault ? { invariant: 'history', message: fault.message, entries: [fault.at] } : null;
}

/**
 * Whether a grant the record no longer holds was replaced the one way the runtime replaces one: the
 * call it was given for had an unknown outcome after a crash, a human was asked again (a later
 * attempt), and a later grant for the tool took its place in `standing`. The id must still name
 * that call: its key, and the digest of its tool and arguments.
 */
function replacedGrant(id: string, tool: string, records: readonly CallRecord[]): boolean {
  const key = /^(.*)#\d+@/.exec(id)?.[1];
  const r = records.find((record) => record.key === key);
  if (!r || r.tool !== tool || !names({ callId: id } as ApprovalRecord, r)) return false;
  return r.outcome?.outcome === 'unknown' || (r.approval !== null && attemptOf(r.approval.callId) > attemptOf(id));
}

/** Each approval is the call's own, each denial reached the model, and nothing ran denied. */
function approvalRecords(records: readonly CallRecord[], grants: ReturnType<typeof grantsOf>): Violation[] {
  const out: Violation[] = [];
  for (const r of records) {
    const a = r.approval;
    const error = typeof r.outcome?.error === 'string' ? r.outcome.error : null;
    if (a && !names(a, r))
      out.push({
        invariant: 'approval',
        message: `${r.tool} key ${r.key} carries an approval of another call (${a.callId})`,
        entries: at(r),
      });
    if (a?.standing !== undefined) {
      const grant = grants.get(a.standing);
      const given = grant ? grant.tool === r.tool && grant.approved : replacedGrant(a.standing, r.tool, records);
      if (!given)
        out.push({
          invariant: 'approval',
          message: `${r.tool} key ${r.key} ran under a standing approval (${a.standing}) that no human gave for ${r.tool}`,
          entries: at(r),
        });
    }
    if (a && !a.approved && (ranOf(r.outcome) || (r.inFlight && r.outcome === null)))
      out.push({
        invariant: 'approval',
        message: `${r.tool} key ${r.key} ran although a human denied it`,
        entries: at(r),
      });
    if (a && !a.approved && r.outcome && !error?.startsWith('denied by human: ') && error !== 'approval expired')
      out.push({
        invariant: 'denial',
        message: `${r.tool} key ${r.key} was denied by ${a.by}, and the model was not told (${JSON.stringify(r.outcome)})`,
        entries: at(r),
      });
    if (error?.startsWith('denied by human: ') && a?.approved !== false)
      out.push({
        invariant: 'denial',
        message: `${r.tool} key ${r.key} is recorded as denied by a human, with no human's denial`,
        entries: at(r),
      });
  }
  return out;
}

/** Each call that ran (or may have) was allowed by its tool: its rule, its approval, its edit. */
async function ruleViolations(
  c: AgentContext,
  records: readonly CallRecord[],
  options: InvariantOptions,
  tools: ReadonlyMap<string, Tool>,
): Promise<Violation[]> {
  const out: Violation[] = [];
  for (const r of records) {
    if (!ranOf(r.outcome) && !(r.inFlight && r.outcome === null)) continue;
    const a = r.approval;
    const args = a?.args ?? r.args;
    const reason = options.forbidden?.({ tool: r.tool, args });
    if (reason)
      out.push({
        invariant: 'forbidden',
        message: `${r.tool} ran with ${JSON.stringify(args)}: ${reason}`,
        entries: at(r),
      });
    if (!options.tools) continue;
    const tool = tools.get(r.tool);
    if (!tool) {
      out.push({ invariant: 'approval', message: `${r.tool} ran, and it is none of the tools`, entries: at(r) });
      continue;
    }
    if (a?.args !== undefined && tool.allowEdit === false)
      out.push({
        invariant: 'approval',
        message: `${r.tool} key ${r.key} ran with an approver's edit, and the tool allows none`,
        entries: at(r),
      });
    const answer = await ruleFor(tool, args, c, r);
    if ('invalid' in answer)
      out.push({ invariant: 'approval', message: `${r.tool} key ${r.key} ran with ${answer.invalid}`, entries: at(r) });
    else if (answer.kind === 'deny')
      out.push({
        invariant: 'approval',
        message: `${r.tool} key ${r.key} ran with ${JSON.stringify(args)}, which its rule denies (${answer.reason})`,
        entries: at(r),
      });
    else if (answer.kind === 'ask' && !a?.approved)
      out.push({
        invariant: 'approval',
        message: `${r.tool} key ${r.key} ran without a human's approval, which its rule asks for`,
        entries: at(r),
      });
  }
  return out;
}

/** The recorded tool calls: each of a call the run made, under its approval, and at most once where it must be. */
async function effectViolations(
  c: AgentContext,
  records: readonly CallRecord[],
  options: InvariantOptions,
  tools: ReadonlyMap<string, Tool>,
): Promise<Violation[]> {
  const out: Violation[] = [];
  const byKey = new Map(records.map((r) => [r.key, r]));
  const starts = new Map<string, number>();
  for (const effect of options.effects ?? []) {
    if (effect.runId !== c.runId) continue;
    const r = byKey.get(effect.key);
    if (!r || r.tool !== effect.tool) {
      out.push({
        invariant: 'approval',
        message: `${effect.tool} was called with key ${effect.key}, which is no call of ${effect.tool} in the run`,
        entries: [],
      });
      continue;
    }
    const a = r.approval;
    const id = effect.approvedCallId;
    // Counted per approval: a call whose outcome a crash left unknown runs again only under a new
    // approval, given by a human told so (attempt 2).
    const start = JSON.stringify([effect.key, id]);
    starts.set(start, (starts.get(start) ?? 0) + 1);
    if (id !== null && !id.startsWith(`${effect.key}#`))
      out.push({
        invariant: 'approval',
        message: `${effect.tool} key ${effect.key} ran under the approval of another call (${id})`,
        entries: at(r),
      });
    // The run records a call's latest approval: a call asked again after a crash (attempt 2) ran
    // earlier under attempt 1, which the record no longer holds.
    const replaced = id !== null && a !== null && a.callId !== id && attemptOf(a.callId) > attemptOf(id);
    if (id !== null && !replaced && (a?.callId !== id || !a.approved))
      out.push({
        invariant: 'approval',
        message: `${effect.tool} key ${effect.key} ran under ${id}, which the run does not record as approved`,
        entries: at(r),
      });
    // The rule asked of what `fn` got (the schema's output, as the rule is given it).
    const tool = tools.get(effect.tool);
    const answer = tool && id === null ? await approvalRule(tool, effect.args, siteOf(c, r)) : null;
    if (answer?.kind === 'ask')
      out.push({
        invariant: 'approval',
        message: `${effect.tool} key ${effect.key} ran without an approval, and its tool needs one`,
        entries: at(r),
      });
  }
  for (const [start, count] of starts) {
    const [key, id] = JSON.parse(start) as [string, string | null];
    const r = byKey.get(key) as CallRecord;
    const tool = tools.get(r.tool);
    if (count > 1 && tool?.sideEffect && !tool.idempotent && !tool.verify)
      out.push({
        invariant: 'once',
        message: `${r.tool} key ${key} was started ${count} times${id === null ? '' : ` under one approval (${id})`}; it is a side effect, not idempotent`,
        entries: at(r),
      });
  }
  const landed = new Map<string, number>();
  for (const key of options.applied ?? []) landed.set(key, (landed.get(key) ?? 0) + 1);
  for (const [key, count] of landed) {
    if (count > 1) {
      const r = byKey.get(key);
      out.push({
        invariant: 'once',
        message: `the call with key ${key}${r ? ` (${r.tool})` : ''} took effect ${count} times`,
        entries: r ? at(r) : [],
      });
    }
  }
  return out;
}

const attemptOf = (callId: string): number => Number(/#(\d+)@/.exec(callId)?.[1] ?? 0);

/** Steps, tokens and dollars within the budgets. */
function budgetViolations(c: AgentContext, limits: Partial<Limits> | undefined): Violation[] {
  const l = { ...c.limits, ...limits };
  const out: Violation[] = [];
  const over = (what: string, spent: number, max: number) =>
    out.push({
      invariant: 'budget',
      message: `the run spent ${spent} ${what}, more than its budget of ${max}`,
      entries: [],
    });
  if (c.steps > l.maxSteps) over('steps', c.steps, l.maxSteps);
  const tokens = c.usage.inputTokens + c.usage.outputTokens;
  if (l.maxTokens !== null && tokens > l.maxTokens) over('tokens', tokens, l.maxTokens);
  if (l.maxCostUsd !== null && Math.round(c.usage.costUsd * 1e6) > Math.round(l.maxCostUsd * 1e6))
    over('US dollars', c.usage.costUsd, l.maxCostUsd);
  return out;
}

/**
 * Checks a run against Tollgate's invariants and returns every violation, with the history
 * entries that show it (an empty array: the run kept them all). Never throws for a bad run: a
 * checkpoint that cannot be read is itself a violation.
 *
 * - `checkpoint`: the checkpoint reads, and writes back to the same text;
 * - `history`: every entry has one of the contract's shapes, calls and results pair up, and the
 *   run counts the steps its history shows;
 * - `approval`: every approval names its own call (key, tool and arguments), every standing
 *   approval a human's grant; nothing ran that a human denied; with `tools`: every call that ran
 *   (or was in flight) was approved where its rule asks for it, is not denied by its rule with the
 *   arguments that ran, and carries no edit its tool forbids; with `effects`: every recorded tool
 *   call is a call of the run, under an approval the run records;
 * - `denial`: every denial reached the model as an observation, and only real denials;
 * - `once`: with `effects` and `tools`, no side effect that is not idempotent (and has no `verify`)
 *   was started twice for a key under one approval (a pure tool is run again after a crash; a call
 *   whose outcome a crash left unknown runs again only under a new approval, attempt 2); with
 *   `applied`, no key landed twice;
 * - `budget`: steps, tokens and dollars within `limits` (default: the run's own);
 * - `forbidden`: no call your `forbidden` names ran.
 *
 * @example
 * const recorded = recordEffects(tools);
 * const agent = new Agent({ policy, tools: recorded.tools });
 * await agent.start('refund order A-1');
 * expect(await checkInvariants(agent, recorded)).toEqual([]);
 */
export async function checkInvariants(run: RunRecord, options: InvariantOptions = {}): Promise<Violation[]> {
  let persisted: PersistedRun;
  try {
    persisted = decodeRun(run);
  } catch (error) {
    return [{ invariant: 'checkpoint', message: `the run cannot be read: ${describeError(error)}`, entries: [] }];
  }
  const c = persisted.context;
  const fault = historyFault(c, statusOfValue(persisted.value));
  if (fault) return [fault]; // the entries do not pair: nothing more can be read from them
  const { records, steps } = callsOf(c);
  const tools = new Map((options.tools ?? []).map((t) => [t.name, t]));
  const counted: Violation[] =
    steps === c.steps
      ? []
      : [
          {
            invariant: 'history',
            message: `the history holds ${steps} policy answers, the run counts ${c.steps} steps`,
            entries: [],
          },
        ];
  return [
    ...counted,
    ...approvalRecords(records, grantsOf(c, records)),
    ...(await ruleViolations(c, records, options, tools)),
    ...(await effectViolations(c, records, options, tools)),
    ...budgetViolations(c, options.limits),
  ];
}
