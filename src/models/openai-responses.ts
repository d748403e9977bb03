/**
 * OpenAI's Responses API (`client.responses.create`), streamed or not: the turns as `input` items
 * (`function_call` and `function_call_output` paired by `call_id`), the tools as `function` tools,
 * the output items as the action. The whole history is sent each time (`store: false` unless the
 * request says otherwise): the run's history is the conversation, not the server's.
 */
import type OpenAI from 'openai';
import type { HistoryEntry } from '../../machines/types.js';
import type { ToolDeclaration } from '../tool-declarations.js';
import type { Action, PolicyContext } from '../types.js';
import {
  actionOf,
  answeringModel,
  type ModelUsage,
  outputLimit,
  type RawCall,
  readSafely,
  streamTo,
  unreadable,
  usageOf,
  withModel,
} from './actions.js';
import type { ModelCall } from './options.js';
import { instructionsOf, type Turn, turnsOf } from './turns.js';

type Item = OpenAI.Responses.ResponseInputItem;
type Body = OpenAI.Responses.ResponseCreateParamsNonStreaming;

/** The Responses API refuses a `max_output_tokens` below 16. */
export const MIN_OUTPUT_TOKENS = 16;

/** The turns as Responses input items. */
export function responsesInput(turns: Turn[]): Item[] {
  const items: Item[] = [];
  for (const turn of turns) {
    if (turn.role === 'user') items.push({ role: 'user', content: turn.text });
    else if (turn.role === 'results') {
      for (const r of turn.results) items.push({ type: 'function_call_output', call_id: r.id, output: r.content });
    } else {
      if (turn.text !== '') items.push({ role: 'assistant', content: turn.text });
      for (const c of turn.calls) {
        items.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: JSON.stringify(c.args) });
      }
    }
  }
  return items;
}

/** The declarations as Responses function tools (not strict: strict mode constrains the schema). */
export function responsesTools(declarations: ToolDeclaration[]): OpenAI.Responses.FunctionTool[] {
  return declarations.map(({ name, description, parameters }) => ({
    type: 'function',
    name,
    parameters,
    strict: false,
    ...(description === undefined ? {} : { description }),
  }));
}

function usageOfResponse(usage: OpenAI.Responses.ResponseUsage | null | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  return usageOf(usage.input_tokens, usage.output_tokens, usage.input_tokens_details?.cached_tokens);
}

/** The action of a finished response: its text (or refusal) and its function calls, in output order. */
export function responsesAction(response: OpenAI.Responses.Response): Action {
  let text = '';
  let refusal = '';
  const calls: RawCall[] = [];
  for (const item of response.output ?? []) {
    if (item.type === 'function_call') calls.push({ id: item.call_id, name: item.name, args: item.arguments });
    else if (item.type === 'custom_tool_call') calls.push({ id: item.call_id, name: item.name, args: item.input });
    else if (item.type === 'message') {
      for (const part of item.content ?? []) {
        if (part.type === 'output_text') text += part.text;
        else if (part.type === 'refusal') refusal += part.refusal;
      }
    }
  }
  // A refusal is the model's answer: the run ends with it (see docs/models.md).
  return actionOf({ text: text === '' ? refusal : text, calls, usage: usageOfResponse(response.usage) });
}

/** A failed response is the API's error (thrown, so the runtime retries); any other is read safely. */
function finish(response: OpenAI.Responses.Response): Action {
  if (response?.status === 'failed') {
    throw new Error(`response failed: ${response.error?.message ?? 'no reason given'}`);
  }
  return readSafely(
    () => responsesAction(response),
    () => usageOfResponse(response?.usage),
  );
}

/**
 * Reads the event stream: deltas to `ctx.stream` as they come, the action from the final
 * response. An event of a shape it does not expect makes the response unreadable (a malformed
 * action); an `error` event, or a failed response, is the API's error.
 */
async function streamedAction(
  stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>,
  ctx: PolicyContext,
  answered: { response?: OpenAI.Responses.Response | undefined },
) {
  const out = streamTo(ctx);
  /** A function call's index among the calls, by its output index. */
  const callIndex = new Map<number, number>();
  let odd = false;
  const read = (event: OpenAI.Responses.ResponseStreamEvent) => {
    if (event.type === 'response.output_text.delta') out.text(event.delta);
    else if (event.type === 'response.reasoning_summary_text.delta' || event.type === 'response.reasoning_text.delta') {
      out.reasoning(event.delta);
    } else if (event.type === 'response.output_item.added' && event.item.type === 'function_call') {
      callIndex.set(event.output_index, callIndex.size);
      out.call(callIndex.size - 1, { id: event.item.call_id, tool: event.item.name });
    } else if (event.type === 'response.function_call_arguments.delta') {
      const index = callIndex.get(event.output_index);
      if (index !== undefined) out.call(index, { argsText: event.delta });
    }
  };
  for await (const event of stream) {
    const type = event?.type;
    // `openai` 7 throws an SSE event named `error` itself (its `APIError`, with the server's
    // message); one without the name, and every one under `openai` 6, arrives here.
    if (type === 'error')
      throw new Error(`response stream error: ${[event.code, event.message].filter(Boolean).join(' ')}`);
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      answered.response = event.response;
      return odd && type !== 'response.failed'
        ? unreadable(usageOfResponse(event.response?.usage))
        : finish(event.response);
    }
    try {
      read(event);
    } catch {
      odd = true;
    }
  }
  throw new Error('response stream ended without a response');
}

/** One policy call on the Responses API. */
export async function responsesCall(call: ModelCall<OpenAI>, history: HistoryEntry[], ctx: PolicyContext) {
  const maxTokens = outputLimit(call.maxOutputTokens, ctx, MIN_OUTPUT_TOKENS);
  const instructions = instructionsOf(history, call.instructions);
  const body: Body = {
    store: false,
    ...(call.request as Partial<Body>),
    model: call.model,
    input: responsesInput(turnsOf(history)),
    ...(instructions === undefined ? {} : { instructions }),
    ...(call.declarations.length > 0 ? { tools: responsesTools(call.declarations) } : {}),
    ...(maxTokens === undefined ? {} : { max_output_tokens: maxTokens }),
  };
  // The runtime retries (policyRetries): the SDK's own retries are off, so one layer does it.
  const options = { signal: ctx.signal, maxRetries: 0 };
  const answered: { response?: OpenAI.Responses.Response | undefined } = {};
  let action: Action;
  if (call.stream) {
    action = await streamedAction(
      await call.client.responses.create({ ...body, stream: true }, options),
      ctx,
      answered,
    );
  } else {
    answered.response = await call.client.responses.create({ ...body, stream: false }, options);
    action = finish(answered.response);
  }
  return withModel(
    action,
    answeringModel(() => answered.response?.model, call.model),
  );
}
