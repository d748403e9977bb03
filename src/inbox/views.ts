/**
 * What the inbox's API shows of a run: plain JSON made from the stored run, the same for the
 * page and for any other client. Nothing here changes the store.
 */
import type { HistoryEntry, Json, JsonObject, Status, StepCall } from '../../machines/types.js';
import { decodeStored, statusOfValue } from '../checkpoint/index.js';
import type { AgentDefinition } from '../define.js';
import { CheckpointError } from '../errors.js';
import type { RecordedDecision, StoredRun } from '../store/contract.js';
import { toolDeclarations } from '../tool-declarations.js';

/** A call awaiting a decision, as the API shows it. */
export interface CallView {
  id: string;
  key: string;
  step: number;
  tool: string;
  args: JsonObject;
  attempt: number;
  /** ISO-8601 time the approval was requested. */
  requestedAt: string | null;
  /** ISO-8601 time after which approving runs nothing; null: never expires. */
  expiresAt: string | null;
  /** True when `expiresAt` is at or before the server's now. */
  expired: boolean;
  /** `'unknown'`: the call was in flight at a crash; approving runs it again. */
  outcome: 'unknown' | null;
}

/** A run as `GET /api/runs` lists it. */
export interface RunView {
  runId: string;
  agent: string | null;
  status: Status;
  version: number;
  updatedAt: string;
  /** The run's goal: its first user message. */
  goal: string | null;
  steps: number;
  /** The calls awaiting a decision, in call order. */
  pendingCalls: CallView[];
  /** A decision recorded and not yet applied by a worker (the calls are decided), or null. */
  decision: RecordedDecision | null;
  /** The final answer (`done`), the policy's error (`failed`), the budget (`budget_exhausted`) or the cancel reason. */
  outcome: Json;
}

/** A tool as the page shows it, for editing a call's arguments. */
export interface ToolView {
  description: string | null;
  /** The JSON Schema of the arguments, when the tool's schema converts to one. */
  parameters: JsonObject | null;
  /** False when the tool refuses edits (`allowEdit: false`). */
  editable: boolean;
}

/** A run as `GET /api/runs/:runId` shows it. */
export interface RunDetail extends RunView {
  history: HistoryEntry[];
  /**
   * The run's tools, by name, when the inbox was given the run's agent definition; null
   * otherwise (edits are then refused: the server cannot check them).
   */
  tools: Record<string, ToolView> | null;
}

/** The decoded state of a stored run. */
export function decodeRun(record: StoredRun) {
  try {
    const run = decodeStored(record.head, record.entries, record.base);
    return { context: run.context, status: statusOfValue(run.value) };
  } catch (error) {
    if (!(error instanceof CheckpointError)) throw error;
    throw new CheckpointError(`run ${JSON.stringify(record.runId)}: ${error.message}`, error.path, {
      runId: record.runId,
      cause: error,
    });
  }
}

function callView(call: StepCall, now: number): CallView {
  return {
    id: call.id,
    key: call.key,
    step: call.step,
    tool: call.tool,
    args: call.args,
    attempt: call.attempt,
    requestedAt: call.requestedAt,
    expiresAt: call.expiresAt,
    expired: call.expiresAt !== null && Date.parse(call.expiresAt) <= now,
    outcome: call.outcome,
  };
}

/** The run's view; `now` (ms) says which calls have expired. */
export function runView(record: StoredRun, now: number): RunView {
  const { context, status } = decodeRun(record);
  const first = context.history.find((e) => e.role === 'user');
  const outcome: Json =
    status === 'done'
      ? context.answer
      : status === 'failed'
        ? context.error
        : status === 'budget_exhausted'
          ? context.stoppedBy
          : status === 'cancelled'
            ? context.cancelReason
            : null;
  return {
    runId: record.runId,
    agent: record.agent,
    status,
    version: record.version,
    updatedAt: record.updatedAt,
    goal: first && 'content' in first ? first.content : null,
    steps: context.steps,
    pendingCalls: context.calls.filter((c) => c.state === 'pending').map((c) => callView(c, now)),
    decision: record.decision,
    outcome,
  };
}

/** The run's view with its history and its tools (when its definition is known). */
export function runDetail(record: StoredRun, now: number, definition: AgentDefinition<any> | undefined): RunDetail {
  const { context } = decodeRun(record);
  return { ...runView(record, now), history: context.history, tools: definition ? toolsOf(definition) : null };
}

function toolsOf(definition: AgentDefinition<any>): Record<string, ToolView> {
  // No prototype: a tool may be called `__proto__`, and it is a tool like any other here.
  const tools: Record<string, ToolView> = Object.create(null);
  for (const tool of definition.tools) {
    let parameters: JsonObject | null = null;
    try {
      parameters = toolDeclarations([tool])[0]?.parameters ?? null;
    } catch {
      // A schema with no JSON Schema form: the server still checks edits with the schema itself.
    }
    tools[tool.name] = {
      description: typeof tool.description === 'string' ? tool.description : null,
      parameters,
      editable: tool.allowEdit !== false,
    };
  }
  return tools;
}

/** When a run started waiting: its oldest pending request, else its last update (ms). */
export function waitingSince(view: RunView): number {
  const times = view.pendingCalls.map((c) => (c.requestedAt ? Date.parse(c.requestedAt) : Number.NaN));
  const known = times.filter((t) => Number.isFinite(t));
  return known.length > 0 ? Math.min(...known) : Date.parse(view.updatedAt);
}
