/**
 * The run's data model: plain JSON types shared by the machine and the runtime.
 * Nothing here does I/O; every value is JSON so the whole run can be persisted.
 */

/** A JSON value: what a run may hold in its history and checkpoint. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object, the shape of tool arguments. */
export type JsonObject = { [key: string]: Json };

/** Token usage that a policy reports with an action. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** A human's approval decision, kept on the call it decided. */
export interface ApprovalRecord {
  approved: boolean;
  /** Who decided (free text: a user name, an email, a service). */
  by: string;
  note: string;
  /** ISO-8601 time of the decision. */
  at: string;
  /** The pending call id that was decided. */
  callId: string;
}

/**
 * One history entry. The five shapes are fixed by the public contract; extra fields
 * (`approval`, `outcome`) may appear on tool observations.
 */
export type HistoryEntry =
  | { role: 'user'; content: string }
  | { role: 'assistant'; tool: string; args: JsonObject }
  | { role: 'assistant'; final: Json }
  | { role: 'tool'; tool: string; result: Json; approval?: ApprovalRecord }
  | { role: 'tool'; tool: string; error: string; approval?: ApprovalRecord; outcome?: 'unknown' };

/** A tool call the machine knows about: the unit of approval and of idempotency. */
export interface ToolCall {
  /** Unique id of this approval request (changes when the same key is asked again). */
  id: string;
  /** Idempotency key `${runId}:${step}`. */
  key: string;
  /** The policy call (1-based) that produced this call. */
  step: number;
  tool: string;
  args: JsonObject;
  /** How many times a human has been asked about this key (1 on first request). */
  attempt: number;
}

/** A call waiting for a human's decision: `state.pending`. */
export interface PendingCall extends ToolCall {
  /** ISO-8601 time the approval was requested. */
  requestedAt: string;
  /** ISO-8601 time after which deciding executes nothing; null without `approvalTtlMs`. */
  expiresAt: string | null;
  /**
   * `'unknown'` when the call was in flight at a crash and the tool is not idempotent:
   * it may or may not have taken effect, and approving runs it again.
   */
  outcome?: 'unknown';
}

/** A call being executed; `approval` is set when a human approved it (write-ahead record). */
export interface InflightCall extends ToolCall {
  approval: ApprovalRecord | null;
}

/** Budget limits. `null` means unlimited. */
export interface Limits {
  maxSteps: number;
  maxTokens: number | null;
  maxActiveMs: number | null;
}

/** Which budget stopped the run. */
export type BudgetKind = 'steps' | 'tokens' | 'time';

/** The machine's context: the whole run state, plain JSON. */
export interface AgentContext {
  runId: string;
  history: HistoryEntry[];
  /** Policy calls that produced an action (malformed ones included). */
  steps: number;
  usage: Usage;
  /** Milliseconds spent running policy and tool calls; time paused for a human is not counted. */
  activeMs: number;
  limits: Limits;
  approvalTtlMs: number | null;
  pending: PendingCall | null;
  inflight: InflightCall | null;
  /** The final answer, once `done`. */
  answer: Json | null;
  /** The budget that stopped the run, while `budget_exhausted`. */
  stoppedBy: BudgetKind | null;
  /** The last policy failure (`failed`), as `'<ErrorName>: <message>'`. */
  error: string | null;
  cancelReason: string | null;
}

/** What the machine is given when a run is created. */
export interface AgentInput {
  runId: string;
  limits: Limits;
  approvalTtlMs: number | null;
}

/** Fields every policy outcome carries: what it cost and when it ended. */
interface DecisionCost {
  usage: Usage | null;
  elapsedMs: number;
  /** ISO-8601 time the decision was made. */
  at: string;
}

/**
 * The policy actor's output: the policy's action, already validated and classified by the
 * runtime, so that the machine stays pure (it never sees a tool object).
 */
export type Decision = DecisionCost &
  (
    | { type: 'final'; final: Json }
    | { type: 'call'; tool: string; args: JsonObject; needsApproval: boolean }
    | { type: 'unknown_tool'; tool: string; args: JsonObject }
    | { type: 'malformed'; tool: string; error: string }
  );

/** The tool actor's output. */
export type ToolOutcome =
  | { type: 'result'; result: Json; elapsedMs: number; at: string }
  | { type: 'error'; error: string; elapsedMs: number; at: string }
  /** Resumed with a non-idempotent side effect in flight: nothing was called. */
  | { type: 'outcome_unknown'; at: string };

/** Events a user (through the Agent facade) sends. */
export type AgentEvent =
  | { type: 'START'; goal: string }
  | { type: 'APPROVE'; callId: string; by: string; note: string; at: string }
  | { type: 'DENY'; callId: string; by: string; note: string; at: string }
  | { type: 'EXPIRE'; at: string }
  | { type: 'CANCEL'; reason: string }
  | { type: 'EXTEND_BUDGET'; limits: Partial<Limits> }
  | { type: 'RUN' };

/** The run's status: the machine's top-level state name. */
export type Status = 'idle' | 'running' | 'awaiting_approval' | 'budget_exhausted' | 'done' | 'failed' | 'cancelled';

export const STATUSES: readonly Status[] = [
  'idle',
  'running',
  'awaiting_approval',
  'budget_exhausted',
  'done',
  'failed',
  'cancelled',
];
