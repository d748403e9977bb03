/**
 * `tollgate/anthropic`: a policy over `@anthropic-ai/sdk`, on the Messages API: calls are
 * `tool_use` blocks, their results `tool_result` blocks in the next user message, paired by id.
 * The SDK is a peer dependency, used through the client you pass: this module imports only its
 * types.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { HistoryEntry } from '../../machines/types.js';
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
  unreadable,
  usageOf,
  withModel,
} from './actions.js';
import { type ModelOptions, modelCall, policyOf } from './options.js';
import { instructionsOf, type Turn, turnsOf } from './turns.js';

export type { ModelUsage } from './actions.js';

type Message = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;
type Body = Anthropic.MessageCreateParamsNonStreaming;

/** `max_tokens` is required by the Messages API: this when `maxOutputTokens` is not given. */
const DEFAULT_MAX_TOKENS = 4096;

/** Options of `anthropicPolicy`. */
export interface AnthropicPolicyOptions<Tools extends readonly Tool[]> extends ModelOptions<Anthropic, Tools> {
  /**
   * Further request parameters (`temperature`, `tool_choice`, `metadata`, …). The adapter sets
   * `model`, `system`, `messages`, `tools`, `max_tokens` and `stream` itself.
   */
  request?: Partial<Body>;
}

/**
 * The turns as Messages: results are `tool_result` blocks (first, as the API wants) of the user
 * message after the `tool_use` blocks; consecutive user turns are joined into one message.
 */
export function anthropicMessages(turns: Turn[]): Message[] {
  const messages: Message[] = [];
  const user = (blocks: Block[]) => {
    const last = messages.at(-1);
    if (last?.role === 'user' && Array.isArray(last.content)) last.content.push(...blocks);
    else messages.push({ role: 'user', content: blocks });
  };
  for (const turn of turns) {
    if (turn.role === 'user') user([{ type: 'text', text: turn.text === '' ? '(empty)' : turn.text }]);
    else if (turn.role === 'results') {
      user(
        turn.results.map((r) => ({
          type: 'tool_result',
          tool_use_id: r.id,
          content: r.content === '' ? '(empty)' : r.content,
          ...(r.isError ? { is_error: true } : {}),
        })),
      );
    } else {
      // The API refuses empty text blocks.
      const text: Block[] = turn.text.trim() === '' ? [] : [{ type: 'text', text: turn.text }];
      const uses: Block[] = turn.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args }));
      const content = [...text, ...uses];
      messages.push({
        role: 'assistant',
        content: content.length > 0 ? content : [{ type: 'text', text: '(no answer)' }],
      });
    }
  }
  return messages;
}

/** The declarations as Messages tools: the JSON Schema is `input_schema`. */
export function anthropicTools(declarations: ToolDeclaration[]): Anthropic.Tool[] {
  return declarations.map(({ name, description, parameters }) => ({
    name,
    input_schema: { ...parameters, type: 'object' },
    ...(description === undefined ? {} : { description }),
  }));
}

/** Usage from the API's counts: `input_tokens` leaves out the cached part, which is added back. */
function usageOfMessage(usage: Partial<Anthropic.Usage> | null | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const input =
    (usage.input_tokens ?? 0) + (Number.isSafeInteger(read) ? read : 0) + (Number.isSafeInteger(written) ? written : 0);
  return usageOf(input, usage.output_tokens, usage.cache_read_input_tokens ?? undefined);
}

/** The text for a refusal with nothing said: the run ends with it as its answer (see docs/models.md). */
const REFUSED = 'The model declined to answer (stop_reason: refusal).';

/** The action of a whole message: its text and its `tool_use` blocks, in order. */
export function anthropicAction(message: Pick<Anthropic.Message, 'content' | 'stop_reason' | 'usage'>): Action {
  let text = '';
  const calls: RawCall[] = [];
  for (const block of Array.isArray(message.content) ? message.content : []) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') calls.push({ id: block.id, name: block.name, args: block.input });
  }
  if (message.stop_reason === 'refusal' && calls.length === 0 && text.trim() === '') text = REFUSED;
  return actionOf({ text, calls, usage: usageOfMessage(message.usage) });
}

/**
 * Reads the raw event stream into a message, telling `ctx.stream` the text and `tool_use` pieces as
 * they come. Not the SDK's `messages.stream()` helper: it parses partial tool input as it goes and
 * throws on input that is not JSON, which must instead become an observation. An event of a shape
 * it does not expect makes the response unreadable (a malformed action): skipping it could change
 * what a call's input says. An `error` event is thrown by the SDK: the API's error.
 */
async function streamedAction(
  stream: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  ctx: PolicyContext,
  answered: { model?: unknown },
) {
  const out = streamTo(ctx);
  type Slot = { kind: 'text'; text: string } | { kind: 'tool'; id: string; name: string; json: string };
  const blocks = new Map<number, Slot>();
  /** A tool_use block's index among the calls, by its block index. */
  const callIndex = new Map<number, number>();
  let usage: Partial<Anthropic.Usage> = {};
  let stopReason: Anthropic.StopReason | null = null;
  let odd = false;
  const read = (event: Anthropic.RawMessageStreamEvent) => {
    if (event.type === 'message_start') {
      usage = { ...event.message.usage };
      answered.model = event.message.model;
    } else if (event.type === 'message_delta') {
      stopReason = event.delta.stop_reason ?? stopReason;
      // The delta's counts are cumulative: each one given replaces the start's.
      for (const [key, value] of Object.entries(event.usage ?? {})) {
        if (typeof value === 'number') (usage as Record<string, number>)[key] = value;
      }
    } else if (event.type === 'content_block_start') {
      const block = event.content_block;
      if (block.type === 'text') {
        blocks.set(event.index, { kind: 'text', text: String(block.text ?? '') });
        out.text(String(block.text ?? ''));
      } else if (block.type === 'tool_use') {
        blocks.set(event.index, { kind: 'tool', id: block.id, name: block.name, json: '' });
        callIndex.set(event.index, callIndex.size);
        out.call(callIndex.size - 1, { id: block.id, tool: block.name });
      }
    } else if (event.type === 'content_block_delta') {
      const slot = blocks.get(event.index);
      if (slot?.kind === 'text' && event.delta.type === 'text_delta') {
        slot.text += event.delta.text;
        out.text(event.delta.text);
      } else if (slot?.kind === 'tool' && event.delta.type === 'input_json_delta') {
        slot.json += event.delta.partial_json;
        out.call(callIndex.get(event.index) ?? 0, { argsText: event.delta.partial_json });
      } else if (event.delta.type === 'thinking_delta') out.reasoning(event.delta.thinking);
    }
  };
  for await (const event of stream) {
    if (odd) continue;
    try {
      read(event);
    } catch {
      odd = true;
    }
  }
  if (odd) return unreadable(usageOfMessage(usage));
  let text = '';
  const calls: RawCall[] = [];
  for (const [, slot] of [...blocks.entries()].sort(([a], [b]) => a - b)) {
    if (slot.kind === 'text') text += slot.text;
    else calls.push({ id: slot.id, name: slot.name, args: slot.json });
  }
  if (stopReason === 'refusal' && calls.length === 0 && text.trim() === '') text = REFUSED;
  return actionOf({ text, calls, usage: usageOfMessage(usage) });
}

/**
 * A policy that asks a Claude model for the next action (Messages API). The history becomes
 * messages (`tool_use` / `tool_result` blocks paired by id), the tools `tools` with their JSON
 * Schema as `input_schema`, the response an action: one call `{ tool, args, id }`, several
 * `{ calls, text? }`, text alone `{ final }`, with `usage` (`inputTokens` includes cache reads and
 * writes; `cachedInputTokens` is the reads). `max_tokens` is `maxOutputTokens` (default 4096)
 * capped to the token budget left. Streams by default; passes `ctx.signal`; leaves retries to the
 * runtime (`policyRetries`).
 *
 * @example
 * import Anthropic from '@anthropic-ai/sdk';
 * const tools = [lookupOrder, refund] as const;
 * const policy = anthropicPolicy({ client: new Anthropic(), model: 'claude-sonnet-4-5', tools });
 * const agent = new Agent({ tools, policy });
 */
export function anthropicPolicy<const Tools extends readonly Tool[]>(
  options: AnthropicPolicyOptions<Tools>,
): Policy<Tools> {
  const call = modelCall<Anthropic>('anthropicPolicy', options);
  return policyOf<Tools>(
    async (history: HistoryEntry[], ctx: PolicyContext) => {
      const system = instructionsOf(history, call.instructions);
      const body: Body = {
        ...(call.request as Partial<Body>),
        model: call.model,
        messages: anthropicMessages(turnsOf(history)),
        max_tokens: outputLimit(call.maxOutputTokens ?? DEFAULT_MAX_TOKENS, ctx) ?? DEFAULT_MAX_TOKENS,
        ...(system === undefined ? {} : { system }),
        ...(call.declarations.length > 0 ? { tools: anthropicTools(call.declarations) } : {}),
      };
      // The runtime retries (policyRetries): the SDK's own retries are off, so one layer does it.
      const options = { signal: ctx.signal, maxRetries: 0 };
      if (!call.stream) {
        const message = await call.client.messages.create({ ...body, stream: false }, options);
        const action = readSafely(
          () => anthropicAction(message),
          () => usageOfMessage(message?.usage),
        );
        return withModel(
          action,
          answeringModel(() => message.model, call.model),
        );
      }
      const answered: { model?: unknown } = {};
      const action = await streamedAction(
        await call.client.messages.create({ ...body, stream: true }, options),
        ctx,
        answered,
      );
      return withModel(
        action,
        answeringModel(() => answered.model, call.model),
      );
    },
    { provider: 'anthropic', model: call.model },
    call,
    { defaultOutputTokens: DEFAULT_MAX_TOKENS },
  );
}
