/**
 * Time travel: `forkRun` stores a new run whose history is a stored run's up to a step, ready to
 * take another path from there. The original is only read.
 */
import { randomUUID } from 'node:crypto';
import { callIdOf } from '../../machines/calls.js';
import type { AgentContext, ApprovalRecord, HistoryEntry, JsonObject } from '../../machines/types.js';
import { ConflictError, OptionsError, RunNotFoundError } from '../errors.js';
import { checkOptions, count } from '../option-schema.js';
import { DEFAULT_LEASE_MS, runIdSchema } from '../options.js';
import { type RunView, storeNewRun } from '../runtime/saver.js';
import { type CheckpointStore, groupBudgetsOf } from '../store/contract.js';
import { callsOf, decodeRun } from './invariants.js';

/** Where to fork a run, and the new run's id. */
export interface ForkOptions {
  /** The fork keeps the history of steps 1 to `atStep` and asks the policy for step `atStep + 1`. 0: the goal alone. */
  atStep: number;
  /** The new run's id. @default a fresh UUID */
  runId?: string;
}

/** The fork as stored. */
export interface Fork {
  runId: string;
  /** The steps it kept. */
  steps: number;
  /** The history entries it kept (summaries included). */
  entries: number;
}

const forkShape = { atStep: count, runId: runIdSchema.optional() };

type Entry = HistoryEntry & Record<string, unknown>;

/**
 * Stores a new run (`options.runId`, or a fresh UUID) whose history is run `runId`'s up to the end
 * of step `options.atStep`, at the point where the policy is asked for the next step: a `Worker`
 * of the original's agent takes it up, or `Agent.load` it and `run()`. The original is only read.
 *
 * What the fork keeps: the history of those steps, with each call's approval as it was given
 * (its key and approval ids renamed to the fork's, so the fork's invariants hold); the standing
 * approvals granted in those steps, none granted later; the original's limits, approval lifetime,
 * agent name and budget group. Its step count is `atStep`; its tokens, cost and active time are
 * what the original had spent when forked (the journal does not keep them per step, and a fork
 * must not be a way round a budget: `extendBudget` gives it more).
 *
 * @returns the fork's id, steps and entries.
 * @throws RunNotFoundError when the store has no run `runId`.
 * @throws OptionsError on a bad option, or a step the run has not finished.
 * @throws ConflictError when the store already has a run with the fork's id.
 * @throws CheckpointError when the stored run is damaged.
 *
 * @example
 * const { runId } = await forkRun(store, 'ticket-42', { atStep: 3, runId: 'ticket-42-retry' });
 * const agent = await Agent.load(store, runId, { policy, tools });
 * await agent.run();
 */
export async function forkRun(store: CheckpointStore, runId: string, options: ForkOptions): Promise<Fork> {
  const call = 'forkRun';
  checkOptions(call, options, forkShape);
  const stored = await store.load(runId);
  if (!stored) throw new RunNotFoundError(`${call}: no run ${JSON.stringify(runId)} in the store`, { runId });
  const { context } = decodeRun(stored);
  const { atStep } = options;
  const cut = cutAt(context, atStep);
  if (cut === null) {
    throw new OptionsError(
      `${call}: run ${JSON.stringify(runId)} has no finished step ${atStep} to fork at (it finished ${finishedSteps(context)})`,
      { runId },
    );
  }
  const forkId = options.runId ?? randomUUID();
  if (await store.load(forkId)) {
    throw new ConflictError(`${call}: the store already has a run ${JSON.stringify(forkId)}`, 0, null, {
      runId: forkId,
    });
  }
  const { history, standing } = renamed({ ...context, history: context.history.slice(0, cut), calls: [] }, forkId);
  const forked: AgentContext = {
    ...context,
    runId: forkId,
    history,
    steps: atStep,
    calls: [],
    standing,
    answer: null,
    stoppedBy: null,
    error: null,
    cancelReason: null,
    compaction: { failures: 0, error: null, retryAt: 0 },
  };
  // The write-ahead point of the policy call for the next step, as a submitted run's first one.
  const view: RunView = {
    run: { status: 'active', value: { running: 'deciding' }, historyValue: {}, context: forked },
    status: 'running',
    pendingCalls: [],
    history,
  };
  await storeNewRun(store, {
    runId: forkId,
    view,
    agent: stored.agent ?? null,
    group: (await groupBudgetsOf(store)?.groupOf(runId)) ?? null,
    lease: { owner: `fork-${randomUUID()}`, leaseMs: DEFAULT_LEASE_MS, waitMs: 0 },
  });
  return { runId: forkId, steps: atStep, entries: history.length };
}

/** The steps of the run whose history is complete (a fork may keep any number of them, up to these). */
function finishedSteps(c: AgentContext): number {
  const { answers } = callsOf(c);
  const last = answers.at(-1);
  const open = c.calls.length > 0 || (last !== undefined && 'final' in (c.history[last] as Entry));
  return open ? Math.max(0, answers.length - 1) : answers.length;
}

/** The history length that keeps steps 1 to `step`, or null when the run did not finish that step. */
function cutAt(c: AgentContext, step: number): number | null {
  if (!Number.isSafeInteger(step) || step < 0 || step > finishedSteps(c)) return null;
  const { answers } = callsOf(c);
  return answers[step] ?? c.history.length;
}

/**
 * The kept history with its calls' keys renamed to the fork's (`${forkId}:${step}…`): the ids a
 * step's calls pair with their tool entries by, and the ids of their approvals and standing
 * grants. And the standing approvals those steps granted, the last grant of each tool winning.
 */
function renamed(c: AgentContext, forkId: string): { history: HistoryEntry[]; standing: AgentContext['standing'] } {
  const { records } = callsOf(c);
  const history = c.history.map((e) => structuredClone(e) as Entry);
  const ids = new Map<string, string>();
  const keys = new Map<string, string>();
  for (const r of records) {
    const key = r.key.replace(c.runId, forkId);
    keys.set(r.key, key);
    if (r.approval === null) continue;
    const attempt = Number(/#(\d+)@/.exec(r.approval.callId)?.[1] ?? 1);
    ids.set(r.approval.callId, callIdOf(key, attempt, r.tool, r.args as JsonObject));
  }
  const standing: AgentContext['standing'] = {};
  for (const e of history) {
    if (e.role === 'assistant' && Array.isArray(e.calls)) {
      for (const a of e.calls) a.id = keys.get(a.id) ?? a.id;
    } else if (typeof e.id === 'string') {
      e.id = keys.get(e.id) ?? e.id;
    }
    if (e.role !== 'tool' || !e.approval) continue;
    const approval = e.approval as ApprovalRecord;
    approval.callId = ids.get(approval.callId) ?? approval.callId;
    if (approval.standing !== undefined) approval.standing = ids.get(approval.standing) ?? approval.standing;
    else if (approval.always && approval.approved) standing[e.tool as string] = { ...approval };
  }
  return { history, standing };
}
