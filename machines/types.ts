/**
 * The run's data model: plain JSON types shared by the machine and the runtime.
 * Nothing here does I/O; every value is JSON so the whole run can be persisted.
 */

/** A JSON value: what a run may hold in its history and checkpoint. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object, the shape of tool arguments. */
export type JsonObject = { [key: string]: Json };

/**
 * What a policy reports with an action: the tokens its model call used and, for the cost
 * budget, either the model's name (priced by the agent's `price` option) or the cost itself.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** The part of `inputTokens` read from the provider's prompt cache (priced at the cached rate). */
  cachedInputTokens?: number;
  /** The model that answered, as the API names it: the key looked up in a `price` table. */
  model?: string;
  /** What the call cost in US dollars, when the policy knows it: taken as is, `price` is not asked. */
  costUsd?: number;
}

/** The token counts of one policy call, as the runtime checked them. */
export interface TokenCount {
  inputTokens: number;
  outputTokens: number;
}

/** What a run has spent so far: tokens, and US dollars kept to the micro-dollar (see `addUsd`). */
export interface RunUsage extends TokenCount {
  /** Dollars spent on policy calls, a whole number of micro-dollars (6 decimal places). */
  costUsd: number;
  /**
   * Of the tokens counted, those estimated because a call's usage was missing or could not be
   * read (counted all the same: a budget never counts such a call as free). Absent when none.
   */
  estimatedTokens?: number;
}

/**
 * What one policy call cost, as the runtime worked it out: `usd` (rounded up to the micro-dollar),
 * or `unknown` with the reason (no price for its model, a price function that threw, a usage
 * that could not be read). An unknown cost under a cost budget fails closed (see budget.ts).
 */
export type CallCost = { usd: number } | { unknown: string };

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
  /** The arguments the approver edited the call to: it ran with these, not the model's. */
  args?: JsonObject;
  /** A standing approval: every later call of this tool in this run runs without asking. */
  always?: boolean;
  /**
   * This call ran under a standing approval given earlier: the id of the call that granted it
   * (`by`, `note` and `at` are that grant's).
   */
  standing?: string;
}

/** One call of a step with several calls, as its assistant entry lists it. */
export interface AssistantCall {
  /** Pairs the call with its tool entry: the model's own tool-call id, or the call's key. */
  id: string;
  tool: string;
  args: JsonObject;
}

/**
 * One history entry. A step with one call records the seed's two entries (an assistant entry
 * with `tool` and `args`, then a tool entry); a step with several records one assistant entry
 * holding `calls`, then one tool entry per call, in call order, each with the call's `id`.
 * Extra fields: `id` (the model's tool-call id) and `text` (what the model said beside its
 * calls) on assistant entries, `id`, `approval` and `outcome` on tool entries. A run started from
 * messages holds them as they were given: `system` entries (its instructions) first, before any
 * other entry and only there, then `user` entries and assistant `content` entries (earlier replies).
 */
export type HistoryEntry =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; tool: string; args: JsonObject; id?: string; text?: string }
  | { role: 'assistant'; calls: AssistantCall[]; text?: string }
  | { role: 'assistant'; final: Json }
  /** A reply of an earlier turn, given with the messages a run started from: no policy made it. */
  | { role: 'assistant'; content: string }
  | { role: 'tool'; tool: string; result: Json; id?: string; approval?: ApprovalRecord; verified?: true }
  | { role: 'tool'; tool: string; error: string; id?: string; approval?: ApprovalRecord; outcome?: 'unknown' }
  | SummaryEntry;

/**
 * One message of the conversation a run starts from (`agent.start(messages)`): the system's
 * instructions first, then earlier turns, the last a user message (the run acts on it).
 */
export type Message = Extract<HistoryEntry, { content: string }>;

/**
 * A summary of earlier turns (compaction): `text` stands for the journal entries `covers.from` to
 * `covers.to` (indices into the history, both included) in the model's view. Summaries fold: each
 * covers from the first entry after the run's head (its system entries and first message, always
 * in view: `headLength`), earlier summaries included. The entries it
 * covers stay in the history; only the view leaves them out (machines/compaction.ts).
 */
export interface SummaryEntry {
  role: 'summary';
  text: string;
  covers: { from: number; to: number };
}

/** Where a run's compaction stands: what made the last summary fail, and when it may be tried again. */
export interface CompactionState {
  /** Failed summaries in a row; at `MAX_SUMMARY_FAILURES` the run summarises no more. A success resets it. */
  failures: number;
  /** The last summary's failure as `'<ErrorName>: <message>'`; null once a summary succeeds (or none failed). */
  error: string | null;
  /** After a failure: no summary is tried again until the history has at least this many entries. */
  retryAt: number;
}

/** Where a call of the current step stands. */
export type CallState =
  /** Needs no approval (or has one): runs when its turn comes, in call order. */
  | 'queued'
  /** Waits for a human's decision. */
  | 'pending'
  /** The tool is running: the write-ahead record says so. */
  | 'running'
  /** Has its outcome: `entry` is the tool entry the history will get. */
  | 'done';

/** What a finished call adds to the history (without its `role`, `tool` and `id`). */
export type CallOutcome =
  /** `verified`: the call was in flight at a crash (or timed out) and its tool's `verify` found it done: this is its result. */
  | { result: Json; approval?: ApprovalRecord; verified?: true }
  | { error: string; approval?: ApprovalRecord; outcome?: 'unknown' };

/**
 * One tool call of the current step: the unit of approval, idempotency and the crash rules.
 * The step's calls live in `context.calls` until every one has an outcome; then their tool
 * entries are appended to the history in call order and the list is emptied.
 */
export interface StepCall {
  /** This approval request: `${key}#${attempt}@${digest of tool and args}` (see `callIdOf`). */
  id: string;
  /** Idempotency key: `${runId}:${step}` for a step's only call, `${runId}:${step}.${index}` for several. */
  key: string;
  /** The policy call (1-based) that produced this call. */
  step: number;
  /** 1-based position in its step. */
  index: number;
  /** Pairs the call with its result in the history: the model's tool-call id, or the key. */
  toolCallId: string;
  /** Whether the model gave `toolCallId` (a one-call step then records it as the entries' `id`). */
  modelId: boolean;
  tool: string;
  /** The model's arguments (an approval may edit what runs: `approval.args`). */
  args: JsonObject;
  /** How many times a human has been asked about this key (1 on first request). */
  attempt: number;
  state: CallState;
  /** ISO-8601 time the approval was requested (while pending). */
  requestedAt: string | null;
  /** ISO-8601 time after which deciding runs nothing; null without a TTL (or not pending). */
  expiresAt: string | null;
  /** `'unknown'`: in flight at a crash and not idempotent; it may or may not have taken effect. */
  outcome: 'unknown' | null;
  /** The decision that lets it run (or denied it); null for a call that needs none. */
  approval: ApprovalRecord | null;
  /** The tool entry's body, once done. */
  done: CallOutcome | null;
  /**
   * May run alongside the step's other such calls: a call of a tool that is not side-effecting,
   * needing no approval, taken while the Agent's `concurrency` was above 1. Absent: one at a time.
   */
  concurrent?: true;
}

/** A call waiting for a human's decision, as `state.pendingCalls` and the stores show it. */
export interface PendingCall {
  /** Unique id of this approval request (changes when the same key is asked again). */
  id: string;
  /** Idempotency key: `${runId}:${step}`, or `${runId}:${step}.${i}` for the i-th of several calls. */
  key: string;
  step: number;
  tool: string;
  args: JsonObject;
  /** How many times a human has been asked about this key (1 on first request). */
  attempt: number;
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

/** Budget limits. `null` means unlimited. */
export interface Limits {
  maxSteps: number;
  maxTokens: number | null;
  maxActiveMs: number | null;
  /** US dollars the policy calls may spend (from their usage and the agent's `price`). */
  maxCostUsd: number | null;
  /**
   * Limits on each turn of a conversation (from the goal, or a message `send` gave, to the
   * next): they count again from zero at each new message. Absent or null: none.
   */
  perTurn?: TurnLimits | null;
}

/** A conversation's limits on each turn; an absent field limits nothing. */
export interface TurnLimits {
  maxSteps?: number;
  maxTokens?: number;
  maxCostUsd?: number;
}

/** What the run had spent when its current turn began (its first turn: nothing). */
export interface TurnStart {
  steps: number;
  /** Input and output tokens. */
  tokens: number;
  costUsd: number;
}

/**
 * Which budget stopped the run; `'group'`: the budget of the run's group, kept in the store;
 * `'turn'`: a limit on the current turn (`limits.perTurn`).
 */
export type BudgetKind = 'steps' | 'tokens' | 'cost' | 'time' | 'group' | 'turn';

/** The machine's context: the whole run state, plain JSON. */
export interface AgentContext {
  runId: string;
  history: HistoryEntry[];
  /** Policy calls that produced an action (malformed ones included). */
  steps: number;
  usage: RunUsage;
  /** Milliseconds spent running policy and tool calls; time paused for a human is not counted. */
  activeMs: number;
  limits: Limits;
  approvalTtlMs: number | null;
  /** The calls of the step in progress, in call order; empty between steps. */
  calls: StepCall[];
  /** Standing approvals given in this run, by tool name. */
  standing: Record<string, ApprovalRecord>;
  /** The final answer, once `done` (the latest turn's; null while a turn is under way). */
  answer: Json | null;
  /** The budget that stopped the run, while `budget_exhausted`. */
  stoppedBy: BudgetKind | null;
  /**
   * The last policy failure (`failed`), as `'<ErrorName>: <message>'`; or, under a cost budget,
   * why the cost of the last policy call could not be known (the budget then counts it as spent).
   */
  error: string | null;
  cancelReason: string | null;
  /** Compaction's own record: its failures (a failed summary never fails the run). */
  compaction: CompactionState;
  /** What the run had spent when the current turn began; absent in the first turn (nothing). */
  turn?: TurnStart;
}

/** What the machine is given when a run is created. */
export interface AgentInput {
  runId: string;
  limits: Limits;
  approvalTtlMs: number | null;
}

/** Fields every policy outcome carries: what it cost and when it ended. */
interface DecisionCost {
  usage: TokenCount | null;
  /** The token counts of `usage` are the runtime's estimate (the call reported none it could read). */
  estimated?: true;
  /** Why the charge is not the usage as reported (unreadable, or more than the call could spend): kept in the run's `error`. */
  note?: string;
  /** What the call cost; absent: nothing is added (a decision made without the runtime's pricing). */
  cost?: CallCost;
  elapsedMs: number;
  /** ISO-8601 time the decision was made. */
  at: string;
}

/** What the runtime says of one call the policy asked for, before the machine takes it. */
export type Verdict =
  /**
   * Runs without asking (a pure tool, or a rule that said no approval is needed); `concurrent`:
   * alongside the step's other such calls (a tool that is not side-effecting, `concurrency` > 1).
   */
  | { kind: 'run'; concurrent?: true }
  /** A human must approve it first (unless a standing approval covers its tool). */
  | { kind: 'ask' }
  /** Decided without running: an unknown tool, invalid arguments, a rule's automatic denial. */
  | { kind: 'refuse'; error: string };

/** A call the policy asked for, checked and copied by the runtime. */
export interface ClassifiedCall {
  tool: string;
  args: JsonObject;
  /** The model's own id for the call, when it gave one. */
  toolCallId: string | null;
  verdict: Verdict;
}

/**
 * The policy actor's output: the policy's action, already validated and classified by the
 * runtime, so that the machine stays pure (it never sees a tool object).
 */
export type Decision = DecisionCost &
  (
    | { type: 'final'; final: Json }
    | { type: 'calls'; calls: ClassifiedCall[]; text: string | null }
    | { type: 'malformed'; tool: string; error: string }
    /**
     * The runtime found that the call does not fit a budget — the run's own (its estimated request
     * and least output are more than is left), or its group's (in the store) — and did not call
     * the policy: no step is counted, and the run stops `budget_exhausted`, `why` in its `error`.
     */
    | { type: 'exhausted'; budget: 'tokens' | 'cost' | 'group'; why?: string }
  );

/**
 * The summariser actor's output. `failed`: the summary could not be had (it threw, timed out or
 * returned something unusable); the run goes on with the uncompacted view. `skipped`: nothing to
 * summarise (a run resumed without its `compaction` option). `exhausted`: the run's group is out
 * of budget (the runtime checked the store): no summary was paid for, and the run stops
 * `budget_exhausted`, as the policy call after it would have.
 */
export type SummaryOutcome =
  | (DecisionCost & { type: 'summary'; text: string; covers: { from: number; to: number } })
  | (DecisionCost & { type: 'failed'; error: string })
  | { type: 'skipped' }
  | { type: 'exhausted'; budget: 'tokens' | 'cost' | 'group'; why?: string };

/** The tool actor's output. */
export type ToolOutcome =
  /** `verified`: the result came from the tool's `verify` (the call was not run again). */
  | { type: 'result'; result: Json; elapsedMs: number; at: string; verified?: true }
  | { type: 'error'; error: string; elapsedMs: number; at: string }
  /**
   * A non-idempotent side effect whose outcome is not known (in flight at a crash, or it timed
   * out) and that is not run again: a human is asked again. `notDone`: its tool's `verify` said it
   * did not happen, but its approval is too old to run it again under (the outcome is known).
   * `elapsedMs`: the active time the call took before it timed out (none is known after a crash).
   */
  | { type: 'outcome_unknown'; at: string; notDone?: true; elapsedMs?: number };

/** One decision about one pending call. */
export interface CallDecision {
  /** The pending call's id (`PendingCall.id`): a decision about another request is refused. */
  callId: string;
  approve: boolean;
  note: string;
  /** Approved with these arguments instead of the model's. */
  args?: JsonObject;
  /** Approve every later call of this tool in this run too. */
  always?: boolean;
}

/** Events a user (through the Agent facade) sends. */
export type AgentEvent =
  | { type: 'START'; goal: string }
  /** Starts from a conversation: messages the runtime checked first (system first, the last a user message). */
  | { type: 'START'; messages: readonly Message[] }
  /** A new user message: a run that answered (or stopped for a budget) goes on, a new turn. */
  | { type: 'SEND'; message: string }
  /** Decides some of the pending calls, atomically; the others stay pending. */
  | { type: 'DECIDE'; decisions: CallDecision[]; by: string; at: string }
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
