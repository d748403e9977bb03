/** The public types of the Agent API. */
import type {
  ApprovalRecord,
  AssistantCall,
  BudgetKind,
  CompactionState,
  HistoryEntry,
  Json,
  JsonObject,
  Limits,
  PendingCall,
  RunUsage,
  Status,
  TurnLimits,
  Usage,
} from '../machines/types.js';
import type { Clock } from './clock.js';
import type { CompactionOptions } from './compaction.js';
import type { Price } from './price.js';
import type { CheckpointStore, Lease } from './store/contract.js';
import type { ActionOf, Tool } from './tool-types.js';
import type { TracerLike } from './tracer.js';

export type {
  Action,
  ActionOf,
  ApprovalContext,
  ApprovalRule,
  CallOf,
  CallRequest,
  Tool,
  ToolArgs,
  ToolContext,
  ToolInput,
  ToolName,
  VerifyAnswer,
  VerifyContext,
} from './tool-types.js';

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
   * What the run's budgets (and the current turn's limits, `perTurn`) leave, this call included;
   * null where a budget is unlimited. A model
   * adapter caps its output tokens to `remaining.tokens`, so the token budget is not overshot by
   * a whole call. `costUsd`: US dollars, to the micro-dollar (always given by the runtime; optional
   * in the type so that a context made by hand, in a test, need not name it).
   */
  remaining: { steps: number; tokens: number | null; activeMs: number | null; costUsd?: number | null };
  /**
   * The most output tokens this call may produce: what the budgets (run and group) leave after
   * the request's estimated input, and the adapter's own limit. A model adapter passes it as the
   * API's output limit (`max_tokens`, `maxOutputTokens`), so that the call cannot spend more than
   * was reserved for it. null: no budget limits it. (Optional in the type, as `costUsd` is.)
   */
  maxOutputTokens?: number | null;
  /**
   * Reports what a streaming model has produced so far (text, tool-call pieces): observers see it
   * as `{ type: 'delta' }` events as it arrives. The history still records only the final action.
   * Never throws; calls after the policy call ended are ignored.
   */
  stream(delta: PolicyDelta): void;
}

/** A piece of a streaming model's answer, as it arrives. */
export type PolicyDelta =
  | { kind: 'text'; text: string }
  /**
   * A piece of the model's reasoning, as far as its API streams it (a summary, for most): shown,
   * never recorded in the history nor sent back to the model.
   */
  | { kind: 'reasoning'; text: string }
  /** A piece of the `index`-th tool call: its id and name when first seen, then argument text. */
  | { kind: 'call'; index: number; id?: string; tool?: string; argsText?: string };

/**
 * The model: maps a copy of the history to the next action.
 *
 * `Policy` (untyped) may name any tool; `Policy<typeof tools>` may only name those tools, with
 * their arguments' types (a misspelt name or a wrong argument is a compile error; see `ActionOf`).
 * `Policy<any>` is a policy of any tools: an adapter that is not generic over its tools can return
 * it, and it fits every typed agent (the runtime still checks every action it gets).
 *
 * @example
 * const tools = [search, sendEmail];
 * const policy: Policy<typeof tools> = (history) =>
 *   history.length === 1 ? { tool: 'search', args: { q: 'refund policy' } } : { final: 'done' };
 */
export type Policy<Tools extends readonly Tool[] = readonly Tool[]> = ((
  history: HistoryEntry[],
  ctx: PolicyContext,
) => ActionOf<Tools> | Promise<ActionOf<Tools>>) &
  ComparedByStructure<Tools>;

/**
 * `{}`, there so that TypeScript compares two `Policy` types by their structure. Otherwise it
 * compares their `Tools` by the variance it measures for `Policy`, which comes out invariant
 * (`ActionOf` is made of conditional types): a `Policy<typeof tools>` would not be a `Policy`, nor
 * a policy of some tools one of more tools, although their actions are. A mapped type with every
 * key filtered out is `{}`, and comparing two of them marks the variance unmeasurable, so the
 * structure decides. test/types/typed-tools.test.ts pins this down.
 */
type ComparedByStructure<T> = { readonly [K in keyof T as never]?: never };

/**
 * An event of XState's inspection API (xstate's `InspectionEvent`, which is assignable to it), as
 * far as an inspector reads it. Written out here so that Tollgate's declarations do not load
 * XState's, which fail `exactOptionalPropertyTypes` under `skipLibCheck: false`.
 */
export type InspectEvent = { rootId: string; actorRef: unknown } & (
  | {
      type: '@xstate.snapshot' | '@xstate.transition' | '@xstate.microstep';
      event: { type: string };
      snapshot: unknown;
    }
  | { type: '@xstate.event'; event: { type: string }; sourceRef: unknown }
  | { type: '@xstate.action'; action: { type: string; params: unknown } }
  | { type: '@xstate.actor' }
);

/**
 * An inspector of a run's live machine: a function or an observer of XState inspection events —
 * `inspector.inspect` of `@statelyai/inspect`, or a function of xstate's `InspectionEvent` (both
 * are accepted: the parameter is compared both ways).
 */
export type InspectOption =
  | { bivariant(event: InspectEvent): void }['bivariant']
  | { next?(event: InspectEvent): void; error?(error: unknown): void; complete?(): void };

/**
 * Options shared by `new Agent` and `Agent.resume`. `Tools` is inferred from `tools`, never from
 * `policy`, which is then checked against it.
 */
export interface RuntimeOptions<Tools extends readonly Tool[] = readonly Tool[]> {
  policy: Policy<Tools>;
  tools: Tools;
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
  /**
   * With a store: wait this long for another live owner's lease to end before `RunBusyError` (a
   * holder provably dead on this machine is released at once, without waiting). @default 0 for
   * `new Agent` (a new run id held by someone else is a mistake to hear of at once); 1_000 for
   * `Agent.load`, which outlasts another process's brief claim of a run at rest and still refuses
   * a live owner at work within a second.
   */
  leaseWaitMs?: number;
  /**
   * With a store: which saves must be on stable storage before the run goes on.
   * - `'full'`: every save (each is fsynced on SQLite, committed synchronously on Postgres).
   * - `'points'`: only the saves that guard an effect — the record of a side effect (or an
   *   approved call) before it is made, a pause for approval, a budget stop, the end of a run.
   *   The others (before each policy call) are written to survive a crash of this process but
   *   not a power cut: after one, the run resumes from the last point, so the pure steps since
   *   are worked again and their policy calls are made (and paid for) again. Side effects and
   *   approvals are never repeated by it. The memory and file stores make every save durable.
   * @default 'full'
   */
  durability?: 'full' | 'points';
  /**
   * How many calls of one step may run at once: the calls of tools that are not side-effecting
   * and need no approval run side by side, this many at a time; their results go into the
   * history in the calls' order, whatever order they end in. Side effects (and any call that
   * needs a human) still run one at a time, in order. 1: every call runs alone, in order.
   * @default 4
   */
  concurrency?: number;
  /** With a store: this agent's owner id on its leases, unique per holder. @default host:pid:random */
  owner?: string;
  /**
   * With a store: the name of the agent definition the run belongs to, saved with the run
   * (`StoredRun.agent`) so that a `Worker` given that definition can take the run up.
   * `agentOptionsOf` and `resumeOptionsOf` set it to the definition's `name`. A run keeps one
   * agent for life: saving it under another name is refused. @default none
   */
  agent?: string;
  /**
   * Passed to XState's `createActor`: an inspector (`@statelyai/inspect`'s `inspector.inspect`,
   * or any function or observer of inspection events) sees the live machine of this run.
   */
  inspect?: InspectOption;
  /**
   * An OpenTelemetry tracer (`trace.getTracer('my-service')` of `@opentelemetry/api`): each drive
   * of the run (`start`, `run`, `decide`, …, until it settles), each policy call and each tool call
   * becomes a span, with the GenAI semantic conventions' attributes (docs/observability.md).
   * Tracing never changes the run: a tracer that throws costs the trace only. @default none
   */
  tracer?: TracerLike;
  /**
   * What a policy call costs, for `maxCostUsd` and `state.usage.costUsd`: a table of US dollars
   * per million tokens by model name (the model the usage names: the adapters report the one
   * that answered), or a function of the usage returning dollars. A usage that reports `costUsd`
   * itself is taken as it is. Not persisted: give it again to `Agent.resume` and `Agent.load`.
   * A call whose cost cannot be known (no price for its model, a function that throws) stops a
   * run with a cost budget (docs/long-runs.md).
   * @example
   * price: { 'gpt-4.1': { inputUsdPerMTok: 2, cachedInputUsdPerMTok: 0.5, outputUsdPerMTok: 8 } }
   * @default none
   */
  price?: Price;
  /**
   * Summarise older turns when the model's view grows over a threshold: the policy then gets the
   * goal, the latest summary and the recent turns (`agent.view()`); `state.history` keeps every
   * entry. A summary's tokens and cost count against the budgets; a failed one leaves the view
   * uncompacted and the run going. Not persisted (it holds a function): give it again to
   * `Agent.resume` and `Agent.load` (docs/long-runs.md, "Compaction").
   * @example
   * compaction: { when: { entries: 40 }, keep: 4, summarize: (entries) => mySummary(entries) }
   * @default none (the view is the whole history)
   */
  compaction?: CompactionOptions;
}

/** Options of `new Agent`. */
export interface AgentOptions<Tools extends readonly Tool[] = readonly Tool[]> extends RuntimeOptions<Tools> {
  /** Policy calls allowed. @default 8 */
  maxSteps?: number;
  /** Input + output tokens allowed (from the policy's `usage`). @default unlimited */
  maxTokens?: number | null;
  /** Active milliseconds allowed (time running, not time paused for a human). @default unlimited */
  maxActiveMs?: number | null;
  /**
   * US dollars the policy calls may spend (priced from their usage with `price`, or their
   * reported `costUsd`), counted to the micro-dollar. Checked before every policy call: the call
   * that crosses it is the last. @default unlimited
   */
  maxCostUsd?: number | null;
  /**
   * Limits on each turn of a conversation (the goal's, then each message's `send`): steps, tokens
   * and dollars, counted from zero at each message, beside the run's budgets (which count every
   * turn). A turn that reaches one stops `budget_exhausted`, `stoppedBy: 'turn'`; the next message
   * goes on. @default none
   */
  perTurn?: TurnLimits | null;
  /** Approvals expire this long after they are requested. @default never */
  approvalTtlMs?: number | null;
  /** The run's id, used in idempotency keys. @default a fresh UUID */
  runId?: string;
  /** Save the run here after every change, ahead of every side effect. @default none */
  store?: CheckpointStore;
  /**
   * The group (a tenant, a user) whose budget in `store` this run spends from: checked before
   * every policy call, charged after it; the run stops `budget_exhausted` with `stoppedBy:
   * 'group'` once the group's budget is spent. Kept in the store with the run, so `Agent.load`
   * keeps it. Needs a store with group budgets (docs/group-budgets.md). @default none
   */
  budgetGroup?: string;
}

/** Options of `Agent.resume`: limits given here replace the checkpoint's. */
export interface ResumeOptions<Tools extends readonly Tool[] = readonly Tool[]> extends RuntimeOptions<Tools> {
  maxSteps?: number;
  maxTokens?: number | null;
  maxActiveMs?: number | null;
  maxCostUsd?: number | null;
  perTurn?: TurnLimits | null;
}

/** Options of `Agent.load`: those of `Agent.resume`, and a lease already held. */
export interface LoadOptions<Tools extends readonly Tool[] = readonly Tool[]> extends ResumeOptions<Tools> {
  /**
   * A lease on this run that the caller already holds (from `store.claim` or `store.claimNext`):
   * `Agent.load` takes it over (renews it, saves with it, releases it when the run settles)
   * instead of claiming the run. A run it finds with nothing to do is given up at once; one with
   * work (running, a recorded decision, an expired approval) stays claimed for `run()`. If
   * loading fails, the lease is left to the caller.
   * @default none: `Agent.load` claims the run itself
   */
  lease?: Lease;
  /**
   * Aborting it stops the load: it rejects with the signal's reason, and a lease it claimed
   * meanwhile is given up. The stored run is as it was. @default none
   */
  signal?: AbortSignal;
}

/** Options of `agent.start(goal, options)` and `agent.run(options)`; `decide` takes them with its own. */
export interface RunOptions {
  /**
   * Aborting it stops the run in this process exactly as a crash at that moment would: the
   * policy's and tools' own signals abort, nothing more is saved, the lease is given up, and the
   * call rejects with the signal's reason. The stored run stays resumable, under the crash rules
   * (nothing runs twice). An already aborted signal rejects at once, changing nothing.
   */
  signal?: AbortSignal;
}

/** Options of `decide(approved, note, options)`. */
export interface DecideOptions extends RunOptions {
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
export interface DecideManyOptions extends RunOptions {
  /** Who decided. @default 'human' */
  by?: string | undefined;
}

/** A system entry of a run started from messages (its instructions): `{ role: 'system', content }`. */
export type SystemEntry = Extract<HistoryEntry, { role: 'system' }>;

/** A history entry with the goal (or a user's message): `{ role: 'user', content }`. */
export type UserEntry = Extract<HistoryEntry, { role: 'user' }>;

/** An assistant entry of a step with one call: `{ role: 'assistant', tool, args, id?, text? }`. */
export type CallEntry = Extract<HistoryEntry, { role: 'assistant'; tool: string }>;

/** An assistant entry of a step with several calls: `{ role: 'assistant', calls, text? }`. */
export type CallsEntry = Extract<HistoryEntry, { role: 'assistant'; calls: AssistantCall[] }>;

/**
 * A reply of an earlier turn, given with the messages a run started from (no policy made it):
 * `{ role: 'assistant', content }`.
 */
export type ReplyEntry = Extract<HistoryEntry, { role: 'assistant'; content: string }>;

/** The assistant entry of the final answer: `{ role: 'assistant', final }`. */
export type FinalEntry = Extract<HistoryEntry, { role: 'assistant'; final: Json }>;

/** A tool entry: the outcome of one call, a result or an error. */
export type ToolEntry = Extract<HistoryEntry, { role: 'tool' }>;

/**
 * `Message`: one message of the conversation a run starts from (`agent.start([{ role: 'system',
 * content }, …])`). `SummaryEntry`: a summary of earlier turns made by compaction, `{ role:
 * 'summary', text, covers: { from, to } }`, `covers` the journal indices (both included) it stands
 * for in the model's view.
 */
export type { Message, SummaryEntry } from '../machines/types.js';

/** A tool entry with the tool's result: `{ role: 'tool', tool, result, id?, approval? }`. */
export type ResultEntry = Extract<ToolEntry, { result: Json }>;

/**
 * A tool entry with an error: the tool threw, the tool is unknown, the arguments were invalid,
 * a human or a rule denied the call, or its outcome is unknown after a crash (`outcome`).
 */
export type ErrorEntry = Extract<ToolEntry, { error: string }>;

/**
 * One call of an assistant entry, whichever of the two shapes holds it (see `callsOf`). `id` is
 * the call's id as the history has it: always there in a step of several calls; in a step of one
 * call only when the model gave one, and `undefined` otherwise (the call's tool entry is then the
 * next tool entry, without an id either).
 */
export interface HistoryCall {
  id: string | undefined;
  tool: string;
  args: JsonObject;
}

/** What `agent.observe` reports as a run progresses. */
export type RunEvent =
  | { type: 'entry'; index: number; entry: HistoryEntry }
  | { type: 'deciding'; step: number }
  | { type: 'executing'; call: { key: string; tool: string; args: JsonObject; step: number } }
  | { type: 'status'; status: Status }
  /** A streaming policy's progress on the step it is deciding (not recorded in the history). */
  | { type: 'delta'; step: number; delta: PolicyDelta }
  /**
   * Compaction's record changed (`state.compaction`): a summary failed (its `error`), or one
   * succeeded after failures. A summary that succeeds is an `entry` event.
   */
  | { type: 'compaction'; compaction: CompactionState };

/** `agent.state`: the whole run, plain JSON (a copy). */
export interface RunState {
  runId: string;
  status: Status;
  history: HistoryEntry[];
  steps: number;
  /** Tokens and US dollars spent (dollars to the micro-dollar). */
  usage: RunUsage;
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
  /**
   * Compaction's record: `failures` in a row (at 3 the run summarises no more), the last failure's
   * `error` (`'<ErrorName>: <message>'`, null once a summary succeeds), and `retryAt`, the history
   * length before which no summary is tried again after a failure. All 0 / null without compaction.
   */
  compaction: CompactionState;
  /**
   * The conversation's current turn: its number (1 from the goal, one more for each message
   * `send` gave) and what it has spent so far, which `limits.perTurn` limits.
   */
  turn: { number: number; steps: number; tokens: number; costUsd: number };
}

export type { ModelPrice, Price, PricedUsage, PriceFunction, PriceTable } from './price.js';
export type {
  ApprovalRecord,
  AssistantCall,
  BudgetKind,
  CompactionState,
  HistoryEntry,
  Json,
  JsonObject,
  Limits,
  PendingCall,
  RunUsage,
  Status,
  TurnLimits,
  Usage,
};
