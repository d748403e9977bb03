/**
 * `tollgate/ai-sdk`: a policy over the AI SDK's language-model interface, version 3
 * (`LanguageModelV3` of `@ai-sdk/provider` 3.x, what `ai` 6 providers return) or version 4
 * (`@ai-sdk/provider` 4.x, `ai` 7): `openai('gpt-5-mini')`, `anthropic('claude-sonnet-4-5')`,
 * `google(…)`, …. It calls the model's `doStream` / `doGenerate` itself, below `ai`'s
 * `generateText`: no tool loop and no retries of the AI SDK's, the runtime's own instead. The
 * prompt, tools and parts it sends and reads have the same shape in both versions; what a model
 * returns is read as untrusted (a part of another shape is skipped). This module imports only the
 * interface's types.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FunctionTool,
  LanguageModelV3GenerateResult,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { HistoryEntry } from '../../machines/types.js';
import { OptionsError } from '../errors.js';
import type { ToolDeclaration } from '../tool-declarations.js';
import type { Action, Policy, PolicyContext, Tool } from '../types.js';
import {
  actionOf,
  answeringModel,
  type ModelUsage,
  outputLimit,
  type RawCall,
  readSafely,
  streamTo,
  usageOf,
  withModel,
} from './actions.js';
import { type ModelOptions, modelCall, policyOf } from './options.js';
import { instructionsOf, type Turn, turnsOf } from './turns.js';

export type { ModelUsage } from './actions.js';

/** The versions of the language-model interface the adapter speaks: `ai` 6's and `ai` 7's. */
const SPECIFICATIONS = ['v3', 'v4'];

/**
 * A language model of the AI SDK, interface version 3 (`ai` 6 providers, `LanguageModelV3`) or 4
 * (`ai` 7 providers, `LanguageModelV4`): what the adapter needs of it. The adapter builds the call
 * options itself, in the shape both versions read (version 3's prompt, tool and option fields,
 * which version 4 kept), so their type is left open here: the two versions' option types are
 * not assignable to each other as a whole.
 */
export interface AiSdkLanguageModel {
  readonly specificationVersion: 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: never): PromiseLike<unknown>;
  doStream(options: never): PromiseLike<unknown>;
}

/** Options of `aiSdkPolicy`: `model` is the language model itself, not a name. */
export interface AiSdkPolicyOptions<Tools extends readonly Tool[]>
  extends Omit<ModelOptions<AiSdkLanguageModel, Tools>, 'client' | 'model'> {
  model: AiSdkLanguageModel;
  /**
   * Further call options (`temperature`, `toolChoice`, `providerOptions`, …). The adapter sets
   * `prompt`, `tools`, `maxOutputTokens` and `abortSignal` itself.
   */
  request?: Partial<LanguageModelV3CallOptions>;
}

/** The turns as the interface's prompt: tool results are `tool` messages after their assistant message. */
export function aiSdkPrompt(turns: Turn[], instructions: string | undefined): LanguageModelV3Message[] {
  const prompt: LanguageModelV3Message[] = instructions ? [{ role: 'system', content: instructions }] : [];
  for (const turn of turns) {
    if (turn.role === 'user') prompt.push({ role: 'user', content: [{ type: 'text', text: turn.text }] });
    else if (turn.role === 'results') {
      prompt.push({
        role: 'tool',
        content: turn.results.map((r) => ({
          type: 'tool-result',
          toolCallId: r.id,
          toolName: r.name,
          output: r.isError ? { type: 'error-text', value: r.content } : { type: 'text', value: r.content },
        })),
      });
    } else {
      prompt.push({
        role: 'assistant',
        content: [
          ...(turn.text === '' ? [] : [{ type: 'text' as const, text: turn.text }]),
          ...turn.calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: c.args })),
        ],
      });
    }
  }
  return prompt;
}

/** The declarations as the interface's function tools. */
export function aiSdkTools(declarations: ToolDeclaration[]): LanguageModelV3FunctionTool[] {
  return declarations.map(({ name, description, parameters }) => ({
    type: 'function',
    name,
    inputSchema: parameters as LanguageModelV3FunctionTool['inputSchema'],
    ...(description === undefined ? {} : { description }),
  }));
}

function usageOfModel(usage: LanguageModelV3Usage | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  return usageOf(usage.inputTokens?.total, usage.outputTokens?.total, usage.inputTokens?.cacheRead);
}

/** The action of a whole result: its text and its tool calls (not those the provider ran itself). */
function contentAction(content: LanguageModelV3Content[], usage: LanguageModelV3Usage | undefined): Action {
  let text = '';
  const calls: RawCall[] = [];
  for (const part of Array.isArray(content) ? content : []) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool-call' && !part.providerExecuted) {
      calls.push({ id: part.toolCallId, name: part.toolName, args: part.input });
    }
  }
  return actionOf({ text, calls, usage: usageOfModel(usage) });
}

/** Reads the stream parts: deltas to `ctx.stream` as they come, the action from the parts. */
async function streamedAction(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  ctx: PolicyContext,
  answered: { model?: unknown },
) {
  const out = streamTo(ctx);
  const content: LanguageModelV3Content[] = [];
  let text = '';
  let usage: LanguageModelV3Usage | undefined;
  /** A call's index by its tool-input id (the call's id). */
  const callIndex = new Map<string, number>();
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      if (typeof part !== 'object' || part === null) continue;
      if (part.type === 'text-delta') {
        text += part.delta;
        out.text(part.delta);
      } else if (part.type === 'reasoning-delta') out.reasoning(part.delta);
      else if (part.type === 'tool-input-start' && !part.providerExecuted) {
        callIndex.set(part.id, callIndex.size);
        out.call(callIndex.size - 1, { id: part.id, tool: part.toolName });
      } else if (part.type === 'tool-input-delta') {
        const index = callIndex.get(part.id);
        if (index !== undefined) out.call(index, { argsText: part.delta });
      } else if (part.type === 'tool-call') content.push(part);
      else if (part.type === 'finish') usage = part.usage;
      else if (part.type === 'response-metadata') answered.model = part.modelId;
      else if (part.type === 'error') throw part.error;
    }
  } finally {
    reader.releaseLock();
  }
  return readSafely(
    () => contentAction([{ type: 'text', text }, ...content], usage),
    () => usageOfModel(usage),
  );
}

/** The provider (`openai` of `openai.chat`) and model id a span names, whatever the model object holds. */
function modelNamed(model: AiSdkLanguageModel): { provider: string; model: string } {
  const provider = typeof model.provider === 'string' ? model.provider : '';
  return { provider: provider.split('.')[0] || 'unknown', model: String(model.modelId) };
}

/**
 * A policy that asks an AI SDK language model for the next action. The history becomes the
 * interface's prompt (tool calls and `tool` results paired by id), the tools function tools with
 * their JSON Schema, the result an action: one call `{ tool, args, id }`, several `{ calls, text? }`,
 * text alone `{ final }`, with `usage` (`cachedInputTokens`: cache reads). The provider maps all
 * of it to its own API. Streams by default; passes `ctx.signal` as `abortSignal`; caps
 * `maxOutputTokens` to the token budget left; retries are the runtime's (`policyRetries`).
 *
 * @example
 * import { openai } from '@ai-sdk/openai';
 * const tools = [lookupOrder, refund] as const;
 * const agent = new Agent({ tools, policy: aiSdkPolicy({ model: openai('gpt-5-mini'), tools }) });
 */
export function aiSdkPolicy<const Tools extends readonly Tool[]>(options: AiSdkPolicyOptions<Tools>): Policy<Tools> {
  const model = options?.model;
  if (typeof model !== 'object' || model === null || typeof model.doGenerate !== 'function') {
    const got = typeof model === 'string' ? JSON.stringify(model) : typeof model;
    throw new OptionsError(`aiSdkPolicy: model must be a language model (such as openai('gpt-5-mini')), got ${got}`);
  }
  const version: unknown = model.specificationVersion;
  if (!SPECIFICATIONS.includes(version as string) || typeof model.doStream !== 'function') {
    const got = typeof version === 'string' ? `version ${JSON.stringify(version.slice(0, 20))}` : 'no version';
    throw new OptionsError(
      `aiSdkPolicy: model speaks the AI SDK's language-model interface ${SPECIFICATIONS.join(' or ')} (providers of ai 6 or 7); this one has ${got}`,
    );
  }
  const call = modelCall<AiSdkLanguageModel>('aiSdkPolicy', {
    ...options,
    client: model,
    model: `${model.provider}:${model.modelId}`,
  });
  return policyOf<Tools>(
    async (history: HistoryEntry[], ctx: PolicyContext) => {
      const maxOutputTokens = outputLimit(call.maxOutputTokens, ctx);
      const callOptions: LanguageModelV3CallOptions = {
        ...(call.request as Partial<LanguageModelV3CallOptions>),
        prompt: aiSdkPrompt(turnsOf(history), instructionsOf(history, call.instructions)),
        abortSignal: ctx.signal,
        ...(call.declarations.length > 0 ? { tools: aiSdkTools(call.declarations) } : {}),
        ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
      };
      const asked = String(model.modelId);
      if (!call.stream) {
        const result = (await call.client.doGenerate(callOptions as never)) as LanguageModelV3GenerateResult;
        const action = readSafely(
          () => contentAction(result.content, result.usage),
          () => usageOfModel(result?.usage),
        );
        return withModel(
          action,
          answeringModel(() => result.response?.modelId, asked),
        );
      }
      const { stream } = (await call.client.doStream(callOptions as never)) as LanguageModelV3StreamResult;
      const answered: { model?: unknown } = {};
      const action = await streamedAction(stream, ctx, answered);
      return withModel(
        action,
        answeringModel(() => answered.model, asked),
      );
    },
    modelNamed(model),
    call,
  );
}

export { type AiSdkTool, type AiSdkToolsOptions, fromAiSdkTools } from './ai-sdk-tools.js';
export {
  type ChatRun,
  type ChatTurnOptions,
  chatTurn,
  decisionsFrom,
  type ObservedRun,
  type TollgateUIChunk,
  toUIMessageStream,
  type UIMessageStreamOptions,
} from './ai-sdk-ui.js';
