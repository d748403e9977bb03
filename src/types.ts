/** The public types of the Agent API. */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type {
  ApprovalRecord,
  AssistantCall,
  BudgetKind,
  HistoryEntry,
  Json,
  JsonObject,
  Limits,
  PendingCall,
  Status,
  Usage,
} from '../machines/types.js';
import type { Clock } from './clock.js';
import type { CheckpointStore } from './store.js';

/** What a tool's `fn` receives beside its arguments. */
export interface ToolContext {
  /** Aborted when the call times out (`timeoutMs`, the active-time budget) or the run is cancelled. */
  signal: AbortSignal;
  runId: string;
  /** The policy call that produced this tool call. */
  step: number;
  /** The idempotency key: `${runId}:${step}`, or `${runId}:${step}.${i}` in a step of several calls. */
  key: string;
  /** The pending-call id the human approved, or null for a call that needed no approval. */
  approvedCallId: string | null;
}

/** What an approval rule is told beside the arguments. */
export interface ApprovalContext {
  runId: string;
  /** The step the call belongs to. */
  step: number;
  tool: string;
  /** The run's history so far (frozen entries), the call's own assistant entry not yet in it. */
  history: readonly HistoryEntry[];
}

/**
 * Whether a call needs a human: `true`, `false`, or `{ deny: reason }` (an automatic denial:
 * nobody is asked, nothing runs, the model sees `denied by rule: <reason>`). A rule that throws
 * means `true`: the gate fails closed.
 */
export type ApprovalRule<Args = any> = (
  args: Args,
  ctx: ApprovalContext,
) => boolean | { deny: string } | Promise<boolean | { deny: string }>;

/**
 * A tool the policy may call.
 *
 * @example
 * const sendEmail: Tool = {
 *   name: 'send_email',
 *   description: 'Send an email to one address',
 *   input: z.object({ to: z.email(), body: z.string() }), // any Standard Schema v1 value
 *   sideEffect: true,   // needs a human's approval (needsApproval defaults to sideEffect)
 *   idempotent: true,   // honours `key`: safe to call again after a crash
 *   fn: async ({ to, body }, key) => mailer.send({ to, body, idempotencyKey: key }),
 * };
 */
export interface Tool<Args = any> {
  name: string;
  /** What the tool does, for the model (tool declarations). */
  description?: string;
  /**
   * The arguments' schema: any Standard Schema v1 value (zod 4, valibot, arktype). Arguments are
   * validated before approval is asked and before the call runs; invalid ones are an error
   * observation (`invalid arguments: <issues>`) and nothing runs. The tool, and the approval
   * rule, get the schema's output. @default none: any JSON object
   */
  input?: StandardSchemaV1<unknown, Args>;
  /** Returns a JSON value (anything else becomes an error observation). */
  fn(args: Args, key: string, ctx: ToolContext): unknown;
  /** The tool changes the world. @default false */
  sideEffect?: boolean;
  /** A human must approve each call first. @default sideEffect */
  needsApproval?: boolean | ApprovalRule<Args>;
  /** The tool deduplicates by `key`: after a crash mid-call it is simply called again. @default false */
  idempotent?: boolean;
  /**
   * An approver may replace the arguments when approving. The assistant entry keeps the model's
   * arguments; the tool entry's `approval.args` says what ran. @default true
   */
  allowEdit?: boolean;
  /**
   * Abort the call's signal and record a timeout error after this many ms (at most 2^31−1). With
   * `maxActiveMs`, the active time left is a deadline too, whichever comes first. @default none
   */
  timeoutMs?: number;
}

/** Token usage a policy may report with its action. */
export type { Usage };

/** One tool call a policy asks for. */
export interface CallRequest {
  tool: string;
  args?: Record<string, unknown>;
  /** The model's own id for the call (a tool-call id), kept in the history to pair the result. */
  id?: string;
}

/**
 * What a policy returns: call a tool (`{ tool, args? }`), call several in one step
 * (`{ calls, text? }`: `text` is what the model said beside them), or answer (`{ final }`).
 * One policy call is one step, whatever it returns.
 */
export type Action =
  | (CallRequest & { text?: string; usage?: Usage })
  | { calls: CallRequest[]; text?: string; usage?: Usage }
  | { final: Json; usage?: Usage };

/** What a policy receives beside the history. */
export interface PolicyContext {
  runId: string;
  /** The step this call will count as, 1-based. */
  step: number;
  /** 0 on the first try, then 1, 2, … when the policy threw and is retried. */
  attempt: number;
  /**
   * Aborted when the run is cancelled, when `policyTimeoutMs` passes, and when the run's
   * active-time budget runs out during the call.
   */
  signal: AbortSignal;
  /**
   * What the run's budgets leave, this call included; null where a budget is unlimited. A model
   * adapter caps its output tokens to `remaining.tokens`, so the token budget is not overshot by
   * a whole call.
   */
  remaining: { steps: number; tokens: number | null; activeMs: number | null };
}

/** The model: maps a copy of the history to the next action. */
export type Policy = (history: HistoryEntry[], ctx: PolicyContext) => Action | Promise<Action>;

/** Options shared by `new Agent` and `Agent.resume`. */
export interface RuntimeOptions {
  policy: Policy;
  tools: readonly Tool[];
  /** Time source for budgets, expiry, retries and timeouts. @default systemClock */
  clock?: Clock;
  /** How many times a throwing policy is retried before the run fails. @default 2 */
  policyRetries?: number;
  /** First retry delay; doubles each retry, capped at 30 s. @default 250 */
  retryDelayMs?: number;
  /**
   * Abort a policy call (its `ctx.signal`) that takes longer than this: the attempt counts as a
   * failed try, so `policyRetries` apply, then the run is `failed` with a `TimeoutError`. At most
   * 2^31−1 ms. Independently, `maxActiveMs` bounds every call in flight by the active time left.
   * @default null (no per-call limit)
   */
  policyTimeoutMs?: number | null;
  /**
   * With a store: how long this agent's lease on the run lasts unless renewed (it is renewed every
   * third of it while the run works, and released when the run settles). Another process can take
   * the run over once a dead owner's lease lapses. At most 2^31−1 ms. @default 30_000
   */
  leaseMs?: number;
  /** With a store: wait this long for another owner's lease to end before `RunBusyError`. @default 0 */
  leaseWaitMs?: number;
  /** With a store: this agent's owner id on its leases, unique per holder. @default host:pid:random */
  owner?: string;
}

/** Options of `new Agent`. */
export interface AgentOptions extends RuntimeOptions {
  /** Policy calls allowed. @default 8 */
  maxSteps?: number;
  /** Input + output tokens allowed (from the policy's `usage`). @default unlimited */
  maxTokens?: number | null;
  /** Active milliseconds allowed (time running, not time paused for a human). @default unlimited */
  maxActiveMs?: number | null;
  /** Approvals expire this long after they are requested. @default never */
  approvalTtlMs?: number | null;
  /** The run's id, used in idempotency keys. @default a fresh UUID */
  runId?: string;
  /** Save the run here after every change, ahead of every side effect. @default none */
  store?: CheckpointStore;
}

/** Options of `Agent.resume`: limits given here replace the checkpoint's. */
export interface ResumeOptions extends RuntimeOptions {
  maxSteps?: number;
  maxTokens?: number | null;
  maxActiveMs?: number | null;
}

/** Options of `decide(approved, note, options)`. */
export interface DecideOptions {
  /** The pending call's id the human saw; a different id throws `StaleApprovalError`. Needed when several calls are pending. */
  callId?: string | undefined;
  /** Who decided. @default 'human' */
  by?: string | undefined;
}

/** A decision about one pending call, in `decide({ [callId]: decision })`. */
export type CallDecisionInput =
  | {
      approve: true;
      note?: string;
      /** Run with these arguments instead of the model's (the tool must allow edits). */
      args?: Record<string, unknown>;
      /** Approve every later call of this tool in this run too (a standing approval). */
      always?: boolean;
    }
  | { approve: false; note?: string };

/** Decisions about pending calls, by call id: `decide(decisions, { by })` applies them at once. */
export type Decisions = Record<string, CallDecisionInput>;

/** Options of `decide(decisions, options)`. */
export interface DecideManyOptions {
  /** Who decided. @default 'human' */
  by?: string | undefined;
}

/** What `agent.observe` reports as a run progresses. */
export type RunEvent =
  | { type: 'entry'; index: number; entry: HistoryEntry }
  | { type: 'deciding'; step: number }
  | { type: 'executing'; call: { key: string; tool: string; args: JsonObject; step: number } }
  | { type: 'status'; status: Status };

/** `agent.state`: the whole run, plain JSON (a copy). */
export interface RunState {
  runId: string;
  status: Status;
  history: HistoryEntry[];
  steps: number;
  usage: Usage;
  activeMs: number;
  limits: Limits;
  /** The oldest undecided call (the first in call order), or null. */
  pending: PendingCall | null;
  /** Every undecided call of the step, in call order. */
  pendingCalls: PendingCall[];
  /** Standing approvals given in this run, by tool name. */
  standing: Record<string, ApprovalRecord>;
  answer: Json | null;
  /** The budget that stopped the run, while `budget_exhausted`. */
  stoppedBy: BudgetKind | null;
  /** The policy's last error, while `failed`. */
  error: string | null;
  cancelReason: string | null;
  /** The call being executed, while `running` a tool. */
  inflight: { key: string; tool: string; step: number } | null;
}

export type { ApprovalRecord, AssistantCall, BudgetKind, HistoryEntry, Json, JsonObject, Limits, PendingCall, Status };
