/**
 * `fromAiSdkTools`: the AI SDK's tools (`tool({ description, inputSchema, execute, needsApproval })`
 * of `ai` 6 or 7) as Tollgate tools. Which tools change the world is said here, explicitly: the AI
 * SDK has no such flag, and a side effect is what needs a human. No runtime import of `ai`: a tool
 * is read by its shape.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import type { JsonObject } from '../../machines/types.js';
import { OptionsError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { showValue } from '../option-keys.js';
import type { ApprovalRule, Tool } from '../types.js';

/** A tool of the AI SDK (`ai` 6 or 7), as far as Tollgate reads it. */
export interface AiSdkTool {
  type?: 'function' | 'dynamic' | 'provider' | undefined;
  /** A string, or (`ai` 7) a function of the tool's context, asked once with an empty context. */
  description?: string | ((options: any) => string) | undefined;
  /** A Standard Schema (zod 4, valibot, arktype), a schema of `ai`'s `jsonSchema()`/`zodSchema()`, or a lazy one. */
  inputSchema?: unknown;
  needsApproval?: boolean | ((input: any, options: any) => boolean | PromiseLike<boolean>) | undefined;
  execute?: ((input: any, options: any) => unknown) | undefined;
}

/** Options of `fromAiSdkTools`. */
export interface AiSdkToolsOptions<Names extends string = string> {
  /**
   * The tools that change the world (send, pay, write): each needs a human's approval unless its
   * `needsApproval` is a function that says otherwise per call. Required, `[]` included: the AI
   * SDK does not say which tools have effects, and a side effect left out would run unasked.
   */
  sideEffects: readonly Names[];
  /** Side effects that deduplicate by the idempotency key (`options.toolCallId`): called again after a crash. @default [] */
  idempotent?: readonly Names[] | undefined;
  /** Every tool's `timeoutMs`. @default none */
  timeoutMs?: number | undefined;
}

/** `ai`'s mark on its own schema objects (`jsonSchema()`, `zodSchema()`). */
const AI_SCHEMA = Symbol.for('vercel.ai.schema');

/** The JSON Schema dialects an AI SDK schema (draft-07) is declared as without conversion. */
const TARGETS = new Set<string>(['draft-07', 'draft-2020-12']);

interface AiSchema {
  jsonSchema: unknown;
  validate?: (value: unknown) => unknown;
}

function isAiSchema(value: unknown): value is AiSchema {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[AI_SCHEMA] === true;
}

/** An `ai` schema object as a Standard Schema with its JSON Schema, validated by its own `validate`. */
function standardOf(schema: AiSchema, name: string): StandardSchemaV1<JsonObject> & StandardJSONSchemaV1<JsonObject> {
  const json = schema.jsonSchema;
  if (!isPlainObject(json)) {
    throw new OptionsError(`fromAiSdkTools: tool "${name}": its inputSchema's JSON Schema is ${showValue(json)}`);
  }
  const jsonSchema = ({ target }: StandardJSONSchemaV1.Options): Record<string, unknown> => {
    if (!TARGETS.has(target))
      throw new Error(`an AI SDK tool's JSON Schema is draft-07; it is not converted to ${target}`);
    return structuredClone(json);
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'tollgate/ai-sdk',
      async validate(value: unknown): Promise<StandardSchemaV1.Result<JsonObject>> {
        if (!isPlainObject(value))
          return { issues: [{ message: `arguments must be an object, got ${showValue(value)}` }] };
        if (typeof schema.validate !== 'function') return { value: value as JsonObject };
        const result = (await schema.validate(value)) as { success?: unknown; value?: unknown; error?: unknown };
        if (result?.success === true) return { value: result.value as JsonObject };
        const error = result?.error;
        return {
          issues: [{ message: error instanceof Error ? error.message : 'the tool’s schema refused the arguments' }],
        };
      },
      jsonSchema: { input: jsonSchema, output: jsonSchema },
    },
  };
}

/** The tool's input schema as a Tollgate `input`: undefined for none. */
function inputOf(raw: unknown, name: string): StandardSchemaV1 | undefined {
  const schema = typeof raw === 'function' ? raw() : raw; // lazySchema(() => …)
  if (schema === undefined || schema === null) return undefined;
  if (isAiSchema(schema)) return standardOf(schema, name);
  if (typeof schema === 'object' && '~standard' in schema) return schema as StandardSchemaV1;
  throw new OptionsError(
    `fromAiSdkTools: tool "${name}": inputSchema must be a Standard Schema (zod 4, valibot, arktype) or a schema of ai's jsonSchema()/zodSchema(), got ${showValue(schema)}`,
  );
}

/** The description: a string, or what `ai` 7's description function says with an empty context. */
function descriptionOf(description: unknown, name: string): string | undefined {
  let text = description;
  if (typeof description === 'function') {
    try {
      text = description({ context: {} });
    } catch (error) {
      throw new OptionsError(
        `fromAiSdkTools: tool "${name}": its description function failed without a tool context (${error instanceof Error ? error.message : String(error)}): give a string`,
      );
    }
  }
  if (text !== undefined && typeof text !== 'string') {
    throw new OptionsError(`fromAiSdkTools: tool "${name}": its description is ${showValue(text)}, not a string`);
  }
  return text;
}

/** What `execute` returned: a value, or the last value of an async iterable (preliminary results). */
async function outputOf(returned: unknown): Promise<unknown> {
  const value = await returned;
  if (typeof value !== 'object' || value === null || !(Symbol.asyncIterator in value)) return value;
  let last: unknown;
  for await (const item of value as AsyncIterable<unknown>) last = item;
  return last;
}

/** The names in `list` that are not tools, for a typo in `sideEffects` must not leave a side effect unasked. */
function unknownNames(list: readonly string[], tools: Record<string, unknown>): string[] {
  return list.filter((name) => !Object.hasOwn(tools, name));
}

function checkOptions(tools: unknown, options: unknown): asserts options is AiSdkToolsOptions {
  if (!isPlainObject(tools)) {
    throw new OptionsError(`fromAiSdkTools: tools must be an object of AI SDK tools by name, got ${showValue(tools)}`);
  }
  if (!isPlainObject(options) || !Array.isArray(options.sideEffects)) {
    throw new OptionsError(
      'fromAiSdkTools: options.sideEffects must list the tools that change the world ([] when none does): the AI SDK does not say',
    );
  }
  for (const key of ['sideEffects', 'idempotent'] as const) {
    const list = options[key] ?? [];
    if (!Array.isArray(list) || list.some((name) => typeof name !== 'string')) {
      throw new OptionsError(`fromAiSdkTools: options.${key} must be a list of tool names, got ${showValue(list)}`);
    }
    const unknown = unknownNames(list, tools);
    if (unknown.length > 0) {
      throw new OptionsError(
        `fromAiSdkTools: options.${key} names ${unknown.map((n) => `"${n}"`).join(', ')}, not among the tools`,
      );
    }
  }
  const idempotent = (options.idempotent ?? []) as string[];
  const notEffects = idempotent.filter((name) => !(options.sideEffects as string[]).includes(name));
  if (notEffects.length > 0) {
    throw new OptionsError(
      `fromAiSdkTools: options.idempotent names ${notEffects.map((n) => `"${n}"`).join(', ')}, which are not sideEffects`,
    );
  }
}

/** One AI SDK tool as a Tollgate tool. */
function toolOf(name: string, raw: unknown, options: AiSdkToolsOptions): Tool<JsonObject> {
  if (!isPlainObject(raw)) throw new OptionsError(`fromAiSdkTools: tool "${name}" is ${showValue(raw)}, not a tool`);
  const { type, description, inputSchema, needsApproval, execute } = raw as AiSdkTool;
  if (type === 'provider') {
    throw new OptionsError(
      `fromAiSdkTools: tool "${name}" is a provider tool (run by the model's provider, out of Tollgate's reach): declare it to the model yourself, not as a Tollgate tool`,
    );
  }
  if (typeof execute !== 'function') {
    throw new OptionsError(
      `fromAiSdkTools: tool "${name}" has no execute function: Tollgate runs the tools it is given`,
    );
  }
  const text = descriptionOf(description, name);
  const sideEffect = options.sideEffects.includes(name);
  if (needsApproval !== undefined && typeof needsApproval !== 'boolean' && typeof needsApproval !== 'function') {
    throw new OptionsError(`fromAiSdkTools: tool "${name}": needsApproval is ${showValue(needsApproval)}`);
  }
  if (sideEffect && needsApproval === false) {
    throw new OptionsError(
      `fromAiSdkTools: tool "${name}" is a side effect with needsApproval: false, which would run it unasked: drop needsApproval (a human approves each call) or give a function that decides per call`,
    );
  }
  const tool: Tool<JsonObject> = {
    name,
    sideEffect,
    idempotent: (options.idempotent ?? []).includes(name),
    async fn(args, key, ctx) {
      // Called as the tool's method, as the AI SDK calls it.
      const output = execute.call(raw, args, { toolCallId: key, messages: [], abortSignal: ctx.signal });
      return outputOf(output);
    },
  };
  const input = inputOf(inputSchema, name);
  if (input !== undefined) tool.input = input as StandardSchemaV1<JsonObject>;
  if (text !== undefined) tool.description = text;
  if (typeof needsApproval === 'function') {
    const rule: ApprovalRule<JsonObject> = async (args, ctx) =>
      (await needsApproval.call(raw, args, { toolCallId: `${ctx.runId}:${ctx.step}`, messages: [] })) !== false;
    tool.needsApproval = rule;
  } else if (needsApproval === true) tool.needsApproval = true;
  if (options.timeoutMs !== undefined) tool.timeoutMs = options.timeoutMs;
  return Object.freeze(tool);
}

/**
 * The AI SDK's tools (an object of `tool(…)` by name, as `generateText` takes them) as Tollgate
 * tools: the key is the name; `description` and `inputSchema` (a Standard Schema such as zod 4,
 * or `ai`'s `jsonSchema()`) are kept, so the model sees the same declaration; `execute` is the
 * tool's `fn`, given `{ toolCallId: key, messages: [], abortSignal }` (the idempotency key as the
 * call id; a tool that streams preliminary results gives its last one).
 *
 * Approval: a tool in `options.sideEffects` needs a human for each call; its `needsApproval`
 * function, if any, decides per call instead (a throw or anything but `false` asks the human).
 * Any other tool runs unasked unless its `needsApproval` is `true` or a function that says so.
 * Refused, with `OptionsError`: a provider tool (`type: 'provider'`: the provider runs it, Tollgate
 * cannot gate it), a tool without `execute`, a side effect with `needsApproval: false`, and a name
 * in `sideEffects` or `idempotent` that is not a tool. Ignored: `toModelOutput` (the result goes to
 * the model as JSON), `outputSchema`, `strict`, `providerOptions` and the `onInput*` callbacks.
 *
 * @example
 * import { tool } from 'ai';
 * const tools = fromAiSdkTools(
 *   { lookupOrder: tool({ description: 'Find an order', inputSchema: z.object({ order: z.string() }), execute: lookup }),
 *     refund: tool({ description: 'Refund an order', inputSchema: refundSchema, execute: refund }) },
 *   { sideEffects: ['refund'], idempotent: ['refund'] },
 * );
 * const agent = new Agent({ tools, policy: aiSdkPolicy({ model, tools }) });
 */
export function fromAiSdkTools<const Names extends string>(
  tools: Record<Names, AiSdkTool>,
  options: AiSdkToolsOptions<NoInfer<Names>>,
): Tool<JsonObject>[] {
  checkOptions(tools, options);
  return Object.entries(tools).map(([name, raw]) => toolOf(name, raw, options));
}
