/**
 * Check before a deploy: would a new agent definition still resume the stored runs that have not
 * ended? The calls of each run's step in progress are judged as the runtime would judge them when
 * resumed (the tool, its schema, its approval rule), with nothing run and nothing saved.
 */

import { describeError } from '../../machines/describe-error.js';
import type { CallState, Status, StepCall } from '../../machines/types.js';
import { StoreUnavailableError } from '../errors.js';
import { approvalRule, historyBeforeStep } from '../runtime/approval.js';
import type { CheckpointStore } from '../store/contract.js';
import { validateArgs } from '../tool-schema.js';
import type { Tool } from '../types.js';
import { decodeRun } from './invariants.js';

/** What would go otherwise in a stored run resumed under the new definition. */
export type ResumeProblemKind =
  /** The run cannot be read by this build (damaged, or a checkpoint version it does not know). */
  | 'checkpoint'
  /** A call's tool is gone: the call would end as an error (`unknown tool …`), the tool never run. */
  | 'tool-missing'
  /** The tool's schema now rejects the call's arguments (an approver's edit, if any): it would end as an error. */
  | 'args-rejected'
  /** A call that needed no approval when it was taken needs one now: it would be refused, not run. */
  | 'needs-approval'
  /** A call approved, or awaiting a human, that the tool's rule now denies: an approval still runs it. */
  | 'rule-denies';

export interface ResumeProblem {
  runId: string;
  /** The run's status as stored; null when it cannot be read. */
  status: Status | null;
  kind: ResumeProblemKind;
  /** The call at issue, or null for the run as a whole. */
  call: { key: string; tool: string; state: CallState } | null;
  message: string;
}

export interface ResumeCheck {
  /** The runs checked: those of the definition's agent (all runs without a name) that have not ended. */
  checked: number;
  problems: ResumeProblem[];
}

const ENDED: ReadonlySet<Status> = new Set(['done', 'cancelled']);

/**
 * Checks every stored run of `definition.name` (every run, when it has none) that has not ended
 * against the definition's tools: a call of a run's step in progress whose tool is gone, whose
 * arguments its schema now rejects, that needed no approval and now needs one, or that is approved
 * (or waits for a human) while the tool's rule now denies it; and a run this build cannot read.
 * Nothing runs, nothing is saved. An empty `problems` means each run resumes as it stands.
 * Problems come by run id, and in call order within a run.
 *
 * @throws StoreUnavailableError when the store cannot be read.
 *
 * @example
 * const { problems } = await checkResumable(store, supportV2);
 * if (problems.length > 0) throw new Error(`the deploy would break ${problems.length} calls`);
 */
export async function checkResumable(
  store: CheckpointStore,
  definition: { name?: string; tools: readonly Tool[] },
): Promise<ResumeCheck> {
  const summaries = await store.list(definition.name === undefined ? {} : { agent: definition.name });
  const tools = new Map(definition.tools.map((t) => [t.name, t]));
  const problems: ResumeProblem[] = [];
  let checked = 0;
  // By run id, each run's calls in call order: the same report from every store.
  for (const summary of summaries.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0))) {
    if (ENDED.has(summary.status)) continue;
    checked++;
    const { runId } = summary;
    let context: ReturnType<typeof decodeRun>['context'];
    try {
      const stored = await store.load(runId);
      if (!stored) continue; // deleted since it was listed
      context = decodeRun(stored).context;
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      problems.push({
        runId,
        status: null,
        kind: 'checkpoint',
        call: null,
        message: `this build cannot read the run: ${describeError(error)}`,
      });
      continue;
    }
    for (const call of context.calls) {
      if (call.state === 'done') continue;
      const found = await judged(call, tools.get(call.tool), historyBeforeStep(context.history), runId);
      if (found) {
        problems.push({
          runId,
          status: summary.status,
          call: { key: call.key, tool: call.tool, state: call.state },
          ...found,
        });
      }
    }
  }
  return { checked, problems };
}

/** What the runtime, resumed with `tool`, would do otherwise with `call`; null when nothing. */
async function judged(
  call: StepCall,
  tool: Tool | undefined,
  history: ReturnType<typeof historyBeforeStep>,
  runId: string,
): Promise<{ kind: ResumeProblemKind; message: string } | null> {
  if (!tool) {
    return {
      kind: 'tool-missing',
      message: `the definition has no tool ${call.tool}: the call would end as the error "unknown tool ${call.tool}"`,
    };
  }
  const edited = call.approval?.args !== undefined;
  const valid = await validateArgs(tool, call.approval?.args ?? call.args);
  if (!valid.ok) {
    return {
      kind: 'args-rejected',
      message: `the tool's schema rejects the call's ${edited ? 'edited ' : ''}arguments: ${valid.error}`,
    };
  }
  const rule = await approvalRule(tool, valid.value, {
    runId,
    step: call.step,
    tool: call.tool,
    history: () => history,
  });
  if (call.approval === null && call.state !== 'pending' && rule.kind !== 'run') {
    return {
      kind: 'needs-approval',
      message: `it needed no approval when it was taken; the tool's rule now ${rule.kind === 'deny' ? `denies it (${rule.reason})` : 'asks for one'}: it would be refused, not run`,
    };
  }
  if (rule.kind === 'deny' && (call.state === 'pending' || call.approval?.approved === true)) {
    return {
      kind: 'rule-denies',
      message: `the tool's rule now denies it (${rule.reason}), yet it is ${call.state === 'pending' ? 'awaiting a human: an approval would still run it' : 'approved: it would still run'}`,
    };
  }
  return null;
}
