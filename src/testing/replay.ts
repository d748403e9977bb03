/**
 * Record and replay: a stored run as a regression test. `recordedPolicy` answers a run's policy
 * calls from its journal; `replayRun` runs the run again under an agent definition — the policy
 * from the journal, each tool's result from the journal (no tool runs, no model is called), each
 * recorded decision given again — and reports the first place where the new definition does
 * otherwise: another action, another verdict of a rule, another outcome.
 */

import { canonicalJson } from '../../machines/canonical.js';
import type { HistoryEntry, Json, Message } from '../../machines/types.js';
import { Agent } from '../agent.js';
import type { Action, AgentOptions, ApprovalRecord, CallDecisionInput, Policy, Status, Tool } from '../types.js';
import { withFn } from './effects.js';
import { callsOf, decodeRun, type RunRecord } from './invariants.js';
import { ManualClock } from './manual-clock.js';

type Entry = HistoryEntry & Record<string, unknown>;

/** The action each step of a history answered, in order (a malformed action as an empty one). */
function recordedActions(history: readonly HistoryEntry[], answers: readonly number[]): Action[] {
  return answers.map((at) => {
    const e = history[at] as Entry;
    if (e.role === 'tool') return {} as Action;
    const text = typeof e.text === 'string' ? { text: e.text } : {};
    if ('final' in e) return { final: e.final as Json };
    if (Array.isArray(e.calls)) return { calls: e.calls, ...text } as Action;
    return { tool: e.tool, args: e.args, ...(typeof e.id === 'string' ? { id: e.id } : {}), ...text } as Action;
  });
}

/**
 * A policy that answers the policy calls of a recorded run in order, from its journal: the n-th
 * step gets the action the run recorded for its n-th step (a malformed action as `{}`). Past the
 * end it throws: the replay asked for a step the recording never took.
 *
 * @example
 * const agent = new Agent({ tools, policy: recordedPolicy(await store.load('order-7')) });
 */
export function recordedPolicy(run: RunRecord): Policy {
  const { history, runId } = decodeRun(run).context;
  return answering(recordedActions(history, callsOf({ runId, history, calls: [] }).answers));
}

/** The policy that answers the n-th step with the n-th action, and throws past the end. */
function answering(actions: readonly Action[]): Policy {
  return (history, ctx) => {
    const step = ctx?.step ?? history.filter((e) => e.role === 'assistant' && !('content' in e)).length + 1;
    const action = actions[step - 1];
    if (action === undefined)
      throw new Error(`the recording ends after step ${actions.length}; step ${step} was asked for`);
    return structuredClone(action);
  };
}

/** Where a replay first differs from the recording. */
export interface Divergence {
  /** The history index where they differ (the replay's), or null when only the status differs. */
  at: number | null;
  recorded: HistoryEntry | null;
  replayed: HistoryEntry | null;
  /** What differs, in a sentence. */
  why: string;
}

/** What `replayRun` found: the replayed agent, and the first divergence (null: the same run). */
export interface ReplayReport {
  agent: Agent;
  status: Status;
  divergence: Divergence | null;
}

/** An entry as compared: decision times and a standing grant's time are when the replay ran, not what it did. */
function comparable(entry: HistoryEntry | undefined): string {
  if (entry === undefined) return '';
  const e = entry as Entry;
  if (e.role !== 'tool' || e.approval === undefined) return canonicalJson(e) ?? '';
  const { at: _at, ...approval } = e.approval as ApprovalRecord;
  return canonicalJson({ ...e, approval } as never) ?? '';
}

/**
 * What the recorded run started from: its goal, or the messages it was given (its entries up to
 * the first one a policy made). A conversation's later messages (`send`) are not replayed.
 */
function openingOf(history: readonly HistoryEntry[]): string | Message[] {
  const made = history.findIndex((e) => !('content' in e));
  const opening = (made < 0 ? history : history.slice(0, made)) as Message[];
  const only = opening.length === 1 ? opening[0] : undefined;
  return only?.role === 'user' ? only.content : opening.map((m) => ({ ...m }));
}

/** Throws what a tool threw, as the history recorded it (`<Name>: <message>`). */
function rethrow(error: string): never {
  const colon = error.indexOf(': ');
  const thrown = new Error(colon < 0 ? error : error.slice(colon + 2));
  thrown.name = colon < 0 ? 'Error' : error.slice(0, colon);
  throw thrown;
}

/**
 * Runs a recorded run again under `definition` (its tools, rules, budgets): the policy answers
 * from the journal (`recordedPolicy`), each tool call returns the result (or throws the error)
 * the journal recorded for its key — no tool's `fn` runs — and each decision a human recorded is
 * given again. Resolves with the first divergence from the recording, or null: another action
 * (the history differs), another verdict of a rule (a call asks a human, or runs, where it did not),
 * another outcome (the run ends otherwise).
 *
 * @example
 * const { divergence } = await replayRun(await store.load('order-7'), refundAgent);
 * expect(divergence).toBeNull();
 */
export async function replayRun(
  run: RunRecord,
  definition: Pick<AgentOptions, 'tools'> & Partial<Omit<AgentOptions, 'tools' | 'policy' | 'store' | 'clock'>>,
): Promise<ReplayReport> {
  const recorded = decodeRun(run);
  const { history, runId } = recorded.context;
  const { records, answers } = callsOf({ runId, history, calls: [] });
  // The recorded outcome of each call, by idempotency key (calls paired with results by id).
  const outcomes = new Map<string, Entry>();
  for (const r of records) if (r.outcome) outcomes.set(r.key, r.outcome as unknown as Entry);
  const replayTool = (tool: Tool): Tool =>
    withFn(tool, (_args, key) => {
      const entry = outcomes.get(key);
      if (!entry) throw new Error(`replay: the recording has no outcome for ${key}`);
      if ('result' in entry) return structuredClone(entry.result);
      return rethrow(String(entry.error));
    });
  const { name: _n, description: _d, ...options } = definition as Record<string, unknown>;
  const agent = new Agent({
    ...(options as Partial<AgentOptions>),
    runId,
    tools: definition.tools.map(replayTool),
    policy: answering(recordedActions(history, answers)),
    clock: new ManualClock(Date.parse('2026-01-01T00:00:00Z')),
    policyRetries: 0,
  } as AgentOptions);
  let status = await agent.start(openingOf(history)).catch(() => agent.status);
  // Each recorded decision, given again when the replay asks for it (by the call's key).
  const decisions = new Map<string, ApprovalRecord>();
  for (const [key, entry] of outcomes) {
    const approval = entry.approval as ApprovalRecord | undefined;
    if (approval && approval.standing === undefined) decisions.set(key, approval);
  }
  for (let guard = 0; status === 'awaiting_approval' && guard < 10_000; guard++) {
    const pending = agent.state.pendingCalls;
    // One approver's decisions at a time, so each is recorded with its own `by`.
    const by = pending.map((call) => decisions.get(call.key)?.by).find((who) => who !== undefined) ?? 'human';
    const given: Record<string, CallDecisionInput> = {};
    for (const call of pending) {
      const d = decisions.get(call.key);
      if (!d || d.by !== by) continue;
      given[call.id] = d.approved
        ? { approve: true, note: d.note, ...(d.args ? { args: d.args } : {}), ...(d.always ? { always: true } : {}) }
        : { approve: false, note: d.note };
    }
    if (Object.keys(given).length === 0) break;
    status = await agent.decide(given, { by }).catch(() => agent.status);
  }
  const replayed = agent.state.history;
  for (let i = 0; i < Math.max(history.length, replayed.length); i++) {
    if (comparable(history[i]) === comparable(replayed[i])) continue;
    const why =
      replayed[i] === undefined
        ? `the replay stopped at ${replayed.length} entries (${status}); the recording went on`
        : history[i] === undefined
          ? 'the replay went on past the recording'
          : `history[${i}] differs`;
    return { agent, status, divergence: { at: i, recorded: history[i] ?? null, replayed: replayed[i] ?? null, why } };
  }
  const was = statusOf(recorded.value);
  if (status !== was)
    return {
      agent,
      status,
      divergence: { at: null, recorded: null, replayed: null, why: `the recording ended ${was}, the replay ${status}` },
    };
  return { agent, status, divergence: null };
}

const statusOf = (value: unknown): Status => (typeof value === 'string' ? (value as Status) : 'running');
