/** The public types of the Agent API. */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { InspectionEvent, Observer } from 'xstate';
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
 * The type parameters are for typed agents (see `defineTool`): `Args` is what `fn` and
 * `needsApproval` receive (the schema's output), `Name` the tool's name as a literal type, `Input`
 * what the model writes (the schema's input). They all default to untyped: `Tool`, `Tool<any>` and
 * `const tools: Tool[] = [...]` accept any tool, as before.
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
export interface Tool<Args = any, Name extends string = string, Input = Args> {
  name: Name;
  /** What the tool does, for the model (tool declarations). */
  description?: string;
  /**
   * The arguments' schema: any Standard Schema v1 value (zod 4, valibot, arktype). Arguments are
   * validated before approval is asked and before the call runs; invalid ones are an error
   * observation (`invalid arguments: <issues>`) and nothing runs. The tool, and the approval
   * rule, get the schema's output, which must be a plain JSON object. @default none: any JSON object
   */
  input?: StandardSchemaV1<Input, Args>;
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

/** `true` when `T` is `any`. */
type IsAny<T> = 0 extends 1 & T ? true : false;

/** A tool's schema, when it has one (`unknown` for a tool type with no `input` key). */
type SchemaOf<T> = T extends { readonly input?: infer S } ? Exclude<S, undefined> : never;

/** What a tool's `fn` takes, read from its signature; any JSON object when it names nothing. */
type FnArgsOf<T> = T extends { fn(args: infer A, ...rest: any[]): unknown }
  ? unknown extends A
    ? JsonObject
    : A
  : JsonObject;

/**
 * A tool's name as a literal type (`string` for an untyped tool).
 *
 * @example
 * type Name = ToolName<typeof sendEmail>; // 'send_email'
 */
export type ToolName<T> = T extends { readonly name: infer N extends string } ? N : never;

/**
 * The arguments a policy writes for a tool: its schema's input type, or what `fn` takes when it
 * has no schema. A schema may transform (defaults, coercion, trimming): the model writes this
 * type, the tool receives `ToolArgs`.
 *
 * @example
 * const search = defineTool({ name: 'search', input: z.object({ q: z.string(), limit: z.number().default(5) }), fn });
 * type In = ToolInput<typeof search>;  // { q: string; limit?: number | undefined }
 */
export type ToolInput<T> = [SchemaOf<T>] extends [StandardSchemaV1]
  ? StandardSchemaV1.InferInput<SchemaOf<T>>
  : FnArgsOf<T>;

/**
 * The arguments a tool's `fn` and approval rule receive: its schema's output type, or what `fn`
 * takes when it has no schema.
 *
 * @example
 * type Args = ToolArgs<typeof search>; // { q: string; limit: number }
 */
export type ToolArgs<T> = [SchemaOf<T>] extends [StandardSchemaV1]
  ? StandardSchemaV1.InferOutput<SchemaOf<T>>
  : FnArgsOf<T>;

/**
 * One call of one of `Tools`, as a typed policy writes it: the tool's literal name and its
 * arguments (required when the tool's input has a required key).
 *
 * @example
 * const call: CallOf<typeof tools> = { tool: 'search', args: { q: 'refunds' } };
 */
export type CallOf<Tools extends readonly Tool[]> = CallByName<Tools[number]>;

/** The tool of the union `U` named `N`. */
type ToolNamed<U, N> = U extends { readonly name: N } ? U : never;

/** `{}`: when it is a valid input, `args` may be left out (the runtime then passes `{}`). */
type NoArgs = Record<never, never>;

/**
 * The call types of a union of tools, one per name. A mapped type, not a distributive conditional:
 * TypeScript keeps `'search'` a literal in an inline policy's result only then (with a deferred
 * conditional type it widens it to `string` and reports a misleading error).
 */
type CallByName<U> = {
  [N in ToolName<U>]: NoArgs extends ToolInput<ToolNamed<U, N>>
    ? { tool: N; args?: ToolInput<ToolNamed<U, N>>; id?: string }
    : { tool: N; args: ToolInput<ToolNamed<U, N>>; id?: string };
}[ToolName<U>];

/** True when `Tools` has no tool, or a tool whose name is only known as `string`. */
type IsUntyped<Tools extends readonly Tool[]> = [ToolName<Tools[number]>] extends [never]
  ? true
  : string extends ToolName<Tools[number]>
    ? true
    : false;

/**
 * What a policy for `Tools` may return: `Action`, with every tool name one of `Tools`' names and
 * every `args` of that tool's input type. When any tool of `Tools` is untyped (its name is just
 * `string`), or there is no tool, it is plain `Action`: typing is all or nothing, and untyped code
 * compiles as before. `ActionOf<any>` is `any` (a policy of any tools: see `Policy`).
 *
 * @example
 * const tools = [search, sendEmail];
 * const next: ActionOf<typeof tools> = { tool: 'search', args: { q: 'refunds' } };
 * // @ts-expect-error: no tool is named 'serch'
 * const typo: ActionOf<typeof tools> = { tool: 'serch', args: { q: 'refunds' } };
 */
export type ActionOf<Tools extends readonly Tool[]> =
  IsAny<Tools> extends true
    ? any
    : IsUntyped<Tools> extends true
      ? Action
      :
          | (CallOf<Tools> & { text?: string; usage?: Usage })
          | { calls: CallOf<Tools>[]; text?: string; usage?: Usage }
          | { final: Json; usage?: Usage };

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

/** An inspector of a run's live machine: a function or an observer of XState inspection events. */
export type InspectOption = ((event: InspectionEvent) => void) | Observer<InspectionEvent>;

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
  /** With a store: wait this long for another owner's lease to end before `RunBusyError`. @default 0 */
  leaseWaitMs?: number;
  /** With a store: this agent's owner id on its leases, unique per holder. @default host:pid:random */
  owner?: string;
  /**
   * Passed to XState's `createActor`: an inspector (`@statelyai/inspect`'s `inspector.inspect`,
   * or any function or observer of inspection events) sees the live machine of this run.
   */
  inspect?: InspectOption;
}

/** Options of `new Agent`. */
export interface AgentOptions<Tools extends readonly Tool[] = readonly Tool[]> extends RuntimeOptions<Tools> {
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
export interface ResumeOptions<Tools extends readonly Tool[] = readonly Tool[]> extends RuntimeOptions<Tools> {
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

/** A history entry with the goal (or a user's message): `{ role: 'user', content }`. */
export type UserEntry = Extract<HistoryEntry, { role: 'user' }>;

/** An assistant entry of a step with one call: `{ role: 'assistant', tool, args, id?, text? }`. */
export type CallEntry = Extract<HistoryEntry, { role: 'assistant'; tool: string }>;

/** An assistant entry of a step with several calls: `{ role: 'assistant', calls, text? }`. */
export type CallsEntry = Extract<HistoryEntry, { role: 'assistant'; calls: AssistantCall[] }>;

/** The assistant entry of the final answer: `{ role: 'assistant', final }`. */
export type FinalEntry = Extract<HistoryEntry, { role: 'assistant'; final: Json }>;

/** A tool entry: the outcome of one call, a result or an error. */
export type ToolEntry = Extract<HistoryEntry, { role: 'tool' }>;

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
  | { type: 'delta'; step: number; delta: PolicyDelta };

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
