/**
 * OpenAI's Chat Completions API (`client.chat.completions.create`), streamed or not: the turns as
 * `messages`, the tools as `function` tools, the first choice as the action.
 */
import type OpenAI from 'openai';
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

type Message = OpenAI.Chat.ChatCompletionMessageParam;
type Body = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

/**
 * A streamed chunk, as much of it as the adapter reads. Written here rather than taken from the
 * SDK: the API streams a custom tool's call under `custom`, which `openai` 7 types and 6 does not.
 */
interface Chunk {
  model?: string;
  usage?: OpenAI.CompletionUsage | null;
  choices?: { delta?: { content?: string | null; refusal?: string | null; tool_calls?: ToolCallPiece[] } }[];
}

/** A piece of a streamed call: a function tool's name and arguments, or a custom tool's name and input. */
interface ToolCallPiece {
  index: number;
  id?: string;
  function?: { name?: string; arguments?: string };
  custom?: { name?: string; input?: string };
}

/** The turns as Chat Completions messages: results are `tool` messages after their assistant message. */
export function chatMessages(turns: Turn[], instructions: string | undefined): Message[] {
  const messages: Message[] = instructions ? [{ role: 'system', content: instructions }] : [];
  for (const turn of turns) {
    if (turn.role === 'user') messages.push({ role: 'user', content: turn.text });
    else if (turn.role === 'results') {
      for (const r of turn.results) messages.push({ role: 'tool', tool_call_id: r.id, content: r.content });
    } else if (turn.calls.length === 0) messages.push({ role: 'assistant', content: turn.text });
    else {
      messages.push({
        role: 'assistant',
        content: turn.text === '' ? null : turn.text,
        tool_calls: turn.calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.args) },
        })),
      });
    }
  }
  return messages;
}

/** The declarations as Chat Completions tools. */
export function chatTools(declarations: ToolDeclaration[]): OpenAI.Chat.ChatCompletionFunctionTool[] {
  return declarations.map(({ name, description, parameters }) => ({
    type: 'function',
    function: description === undefined ? { name, parameters } : { name, description, parameters },
  }));
}

function usageOfChat(usage: OpenAI.CompletionUsage | null | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  return usageOf(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens);
}

/** The action of a whole (not streamed) completion. */
export function chatAction(completion: OpenAI.Chat.ChatCompletion): Action {
  const message = completion.choices?.[0]?.message;
  const calls: RawCall[] = (message?.tool_calls ?? []).map((call) =>
    call.type === 'custom'
      ? { id: call.id, name: call.custom.name, args: call.custom.input }
      : { id: call.id, name: call.function.name, args: call.function.arguments },
  );
  // A refusal is the model's answer: the run ends with it (see docs/models.md).
  const text =
    typeof message?.content === 'string' && message.content !== '' ? message.content : (message?.refusal ?? '');
  return actionOf({ text, calls, usage: usageOfChat(completion.usage) });
}

/**
 * Reads a stream of chunks into the action, telling `ctx.stream` the text and call pieces as they
 * come. A chunk of a shape it does not expect makes the whole response unreadable (a malformed
 * action): skipping it could change what a call's arguments say.
 */
async function streamedAction(
  stream: AsyncIterable<Chunk>,
  ctx: PolicyContext,
  answered: { model?: unknown },
): Promise<Action> {
  const out = streamTo(ctx);
  let text = '';
  let refusal = '';
  let usage: ModelUsage | undefined;
  let odd = false;
  // By the chunk's `index`, which a hostile stream may make sparse or huge: a Map, sorted at the end.
  const calls = new Map<number, { id: string; name: string; args: string }>();
  const read = (chunk: Chunk) => {
    if (chunk.usage) usage = usageOfChat(chunk.usage);
    if (chunk.model) answered.model = chunk.model;
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) return;
    if (typeof delta.content === 'string') {
      text += delta.content;
      out.text(delta.content);
    }
    if (typeof delta.refusal === 'string') refusal += delta.refusal;
    for (const piece of delta.tool_calls ?? []) {
      const index = Number.isSafeInteger(piece.index) ? piece.index : 0;
      const call = calls.get(index) ?? { id: '', name: '', args: '' };
      calls.set(index, call);
      const name = piece.function?.name ?? piece.custom?.name;
      const args = piece.function?.arguments ?? piece.custom?.input;
      if (typeof piece.id === 'string' && piece.id !== '') call.id = piece.id;
      if (typeof name === 'string') call.name += name;
      if (typeof args === 'string') call.args += args;
      out.call(index, { id: piece.id, tool: name, argsText: args });
    }
  };
  for await (const chunk of stream) {
    if (odd) continue;
    try {
      read(chunk);
    } catch {
      odd = true;
    }
  }
  if (odd) return unreadable(usage);
  const raw: RawCall[] = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, c]) => ({ id: c.id || undefined, name: c.name, args: c.args }));
  return actionOf({ text: text === '' ? refusal : text, calls: raw, usage });
}

/** One policy call on the Chat Completions API. */
export async function chatCall(call: ModelCall<OpenAI>, history: Parameters<typeof turnsOf>[0], ctx: PolicyContext) {
  const maxTokens = outputLimit(call.maxOutputTokens, ctx);
  const body: Body = {
    ...(call.request as Partial<Body>),
    model: call.model,
    messages: chatMessages(turnsOf(history), instructionsOf(history, call.instructions)),
    ...(call.declarations.length > 0 ? { tools: chatTools(call.declarations) } : {}),
    ...(maxTokens === undefined ? {} : { max_completion_tokens: maxTokens }),
  };
  // The runtime retries (policyRetries): the SDK's own retries are off, so one layer does it.
  const options = { signal: ctx.signal, maxRetries: 0 };
  if (!call.stream) {
    const completion = await call.client.chat.completions.create({ ...body, stream: false }, options);
    const action = readSafely(
      () => chatAction(completion),
      () => usageOfChat(completion.usage),
    );
    return withModel(
      action,
      answeringModel(() => completion.model, call.model),
    );
  }
  const stream = await call.client.chat.completions.create(
    { ...body, stream: true, stream_options: { include_usage: true } },
    options,
  );
  const answered: { model?: unknown } = {};
  const action = await streamedAction(stream, ctx, answered);
  return withModel(
    action,
    answeringModel(() => answered.model, call.model),
  );
}
