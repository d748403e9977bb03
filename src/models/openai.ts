/**
 * `tollgate/openai`: a policy over the official `openai` SDK (6.x or 7.x), on the Chat Completions
 * or the Responses API. The SDK is a peer dependency, used through the client you pass: this module
 * imports only its types, those the two majors share.
 */
import type OpenAI from 'openai';
import { OptionsError } from '../errors.js';
import type { Policy, Tool } from '../types.js';
import { chatCall } from './openai-chat.js';
import { MIN_OUTPUT_TOKENS, responsesCall } from './openai-responses.js';
import { type ModelOptions, modelCall, policyOf } from './options.js';

export type { ModelUsage } from './actions.js';

/** Options of `openaiPolicy`. */
export interface OpenAIPolicyOptions<Tools extends readonly Tool[]> extends ModelOptions<OpenAI, Tools> {
  /** `'chat'`: Chat Completions (also what OpenAI-compatible servers speak); `'responses'`: the Responses API. @default 'chat' */
  api?: 'chat' | 'responses';
  /**
   * Further request parameters (`temperature`, `reasoning_effort`, `parallel_tool_calls`, …).
   * The adapter sets `model`, the messages, `tools`, the output-token limit and `stream` itself.
   */
  request?:
    | Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming>
    | Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>;
}

/**
 * A policy that asks an OpenAI model for the next action. The history becomes the API's messages
 * (each call paired with its result by id), the tools its function tools (from their schemas),
 * the response an action: one call `{ tool, args, id }`, several `{ calls, text? }`, text alone
 * `{ final }`, with `usage` (and `cachedInputTokens`). Arguments that are not a JSON object, and
 * empty answers, become malformed-action observations; unknown tools are the runtime's to refuse.
 * Streams by default: `agent.observe` sees `{ type: 'delta' }` events. Passes `ctx.signal`, caps
 * the output tokens to the token budget left, and leaves retries to the runtime (`policyRetries`).
 *
 * @example
 * import OpenAI from 'openai';
 * const tools = [lookupOrder, refund] as const;
 * const agent = new Agent({ tools, policy: openaiPolicy({ client: new OpenAI(), model: 'gpt-5-mini', tools }) });
 */
export function openaiPolicy<const Tools extends readonly Tool[]>(options: OpenAIPolicyOptions<Tools>): Policy<Tools> {
  const call = modelCall<OpenAI>('openaiPolicy', options);
  const api = options.api ?? 'chat';
  if (api !== 'chat' && api !== 'responses') {
    throw new OptionsError(`openaiPolicy: api must be 'chat' or 'responses', got ${JSON.stringify(api)}`);
  }
  return policyOf<Tools>(
    (history, ctx) => (api === 'chat' ? chatCall(call, history, ctx) : responsesCall(call, history, ctx)),
    { provider: 'openai', model: call.model },
    call,
    api === 'responses' ? { minOutputTokens: MIN_OUTPUT_TOKENS } : {},
  );
}
