/**
 * The types of tools and of the actions a policy returns, and the type-level checking of a typed
 * policy against its tools (a misspelt tool name or arguments of the wrong shape do not compile).
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { HistoryEntry, Json, JsonObject, Usage } from '../machines/types.js';

/** What a tool's `fn` receives beside its arguments. */
export interface ToolContext {
  /**
   * Aborted when the call times out (`timeoutMs`, the active-time budget), the run is cancelled,
   * or this process loses the run's lease (another owner may take the run over).
   */
  signal: AbortSignal;
  runId: string;
  /** The policy call that produced this tool call. */
  step: number;
  /** The idempotency key: `${runId}:${step}`, or `${runId}:${step}.${i}` in a step of several calls. */
  key: string;
  /** The pending-call id the human approved, or null for a call that needed no approval. */
  approvedCallId: string | null;
  /**
   * The run's fencing token (with a store; null without): it grows every time the run changes
   * owner. A side effect starts only under a lease the store confirmed for it; hand the token to
   * the system you write to, and have it refuse a token smaller than the largest it has seen, so
   * that an owner paused past its lease cannot act late (docs/workers.md, "Fencing").
   */
  fence: number | null;
}

/** What a tool's `verify` is asked about: a call whose outcome is unknown. */
export interface VerifyContext<Args = any> {
  /** The call's idempotency key, as `fn` was given it. */
  key: string;
  /** The arguments the call ran with (an approver's edit, or the model's), as `fn` received them. */
  args: Args;
  /** The run's fencing token now (null without a store). */
  fence: number | null;
  runId: string;
  step: number;
  /** Aborted at the tool's `timeoutMs` (or 30 s), on cancel, or when the lease is lost. */
  signal: AbortSignal;
}

/**
 * What `verify` says of a call: it took effect (`{ done: result }`, the result recorded as if the
 * call had returned it), it did not (`{ notDone: true }`), or it cannot tell (`{ unknown: true }`).
 */
export type VerifyAnswer = { done: unknown } | { notDone: true } | { unknown: true };

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
   * Says whether a call of this tool took effect, when Tollgate cannot know: a non-idempotent
   * side effect that was in flight when its process died (or its owner lost the run), or that
   * timed out. Look the key up where the effect lands (a payment provider's idempotency key, a
   * row by key, a sent-mail log). After a crash, `{ done }` records the result and runs nothing,
   * `{ notDone: true }` runs the call again under its approval while that is younger than the
   * run's `approvalTtlMs` (else a human is asked again); after a timeout, `{ notDone: true }`
   * leaves the timeout as the observation. `{ unknown: true }`, a throw, a timeout or any other
   * answer: a human decides, as without `verify`. Never asked about a call that never started.
   */
  verify?(call: VerifyContext<Args>): VerifyAnswer | Promise<VerifyAnswer>;
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
