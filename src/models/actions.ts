/**
 * From a model's response to a Tollgate action, the same for every API. The response is hostile
 * input (a prompt injection can steer it): nothing here throws on what the model wrote. Arguments
 * that are not a JSON object are passed on as they are, so that the runtime records the step as a
 * malformed action, which the model then reads; an unknown tool name is the runtime's to refuse.
 */
import type { JsonObject } from '../../machines/types.js';
import type { Action, PolicyContext } from '../types.js';

/** Token usage as the adapters report it: `cachedInputTokens` is the part of `inputTokens` read from a cache. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** Where the API reports it. The token budget counts `inputTokens + outputTokens` only; `price` prices it at the cached rate. */
  cachedInputTokens?: number;
  /** The model that answered, as the response names it (else the one asked for): what a `price` table is looked up by. */
  model?: string;
}

/** The longest model name taken from a response. */
const MAX_MODEL_NAME = 200;

/**
 * The model a response names (`gpt-4.1-2025-04-14` for `gpt-4.1`), when it is a plausible name;
 * else the one asked for. Never throws.
 */
export function answeringModel(read: () => unknown, asked: string): string {
  try {
    const named = read();
    return typeof named === 'string' && named !== '' && named.length <= MAX_MODEL_NAME ? named : asked;
  } catch {
    return asked;
  }
}

/** The action with its usage (where it has one) naming `model`, so that a `price` table can price it. */
export function withModel(action: Action, model: string): Action {
  const usage = (action as { usage?: ModelUsage }).usage;
  return usage ? ({ ...action, usage: { ...usage, model } } as Action) : action;
}

/** One tool call as the API returned it: arguments still as text. */
export interface RawCall {
  id: string | undefined;
  name: string;
  /** The arguments' JSON text, or an already parsed value (Anthropic's `input`). */
  args: string | unknown;
}

/** The arguments of a call: a JSON object, or the raw text (which the runtime refuses as malformed). */
export function argsOf(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** A count the runtime takes (a non-negative safe integer), 0 for anything else. */
function count(n: unknown): number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** Usage from the API's numbers; `cached` only when the API reported it. */
export function usageOf(input: unknown, output: unknown, cached?: unknown): ModelUsage {
  const usage: ModelUsage = { inputTokens: count(input), outputTokens: count(output) };
  if (typeof cached === 'number') usage.cachedInputTokens = count(cached);
  return usage;
}

/**
 * The action for a response: its calls (one → `{ tool, args, id }`, several → `{ calls }`, the
 * text said beside them kept), else its text as the final answer. A response with neither (an
 * empty answer, or one cut off at the output-token limit before it said anything useful) is
 * returned as an action with neither tool nor final, which the runtime records as a malformed
 * action — counting its usage against the budget, which a thrown error would not.
 */
export function actionOf(response: { text: string; calls: RawCall[]; usage: ModelUsage | undefined }): Action {
  const usage = response.usage ? { usage: response.usage } : {};
  const text = response.text.trim() === '' ? {} : { text: response.text };
  const calls = response.calls.map((call) => ({
    tool: call.name,
    args: argsOf(call.args) as JsonObject,
    ...(call.id ? { id: call.id } : {}),
  }));
  const [first] = calls;
  if (first && calls.length === 1) return { ...first, ...text, ...usage };
  if (calls.length > 1) return { calls, ...text, ...usage };
  if (response.text.trim() !== '') return { final: response.text, ...usage };
  return usage as Action;
}

/**
 * The output-token limit of one call: the configured one, capped by what the runtime reserved for
 * the call's output (`ctx.maxOutputTokens`: the budgets less the request's estimated input; or,
 * from a context made without it, what the token budget leaves), and at least `floor` (an API's
 * minimum, which the runtime knows from the policy's marks and reserves).
 */
export function outputLimit(configured: number | undefined, ctx: PolicyContext, floor = 1): number | undefined {
  const left = ctx.maxOutputTokens !== undefined ? ctx.maxOutputTokens : ctx.remaining.tokens;
  const limit = left === null ? configured : Math.min(configured ?? left, left);
  return limit === undefined ? undefined : Math.max(floor, Math.floor(limit));
}

/** Calls `ctx.stream` for a piece of the answer: an observer's trouble never reaches the model call. */
export function streamTo(ctx: PolicyContext) {
  return {
    text(text: string): void {
      if (text !== '') ctx.stream({ kind: 'text', text });
    },
    reasoning(text: unknown): void {
      if (typeof text === 'string' && text !== '') ctx.stream({ kind: 'reasoning', text });
    },
    call(
      index: number,
      piece: { id?: string | undefined; tool?: string | undefined; argsText?: string | undefined },
    ): void {
      const delta: { kind: 'call'; index: number; id?: string; tool?: string; argsText?: string } = {
        kind: 'call',
        index,
      };
      if (piece.id) delta.id = piece.id;
      if (piece.tool) delta.tool = piece.tool;
      if (piece.argsText) delta.argsText = piece.argsText;
      ctx.stream(delta);
    },
  };
}

/** The action for a response that could not be read: neither tool nor final (a malformed action), with its usage when known. */
export function unreadable(usage: ModelUsage | undefined): Action {
  return (usage ? { usage } : {}) as Action;
}

/**
 * Reads a response into an action where its shape may be anything (a compatible server, a proxy,
 * a future API version): a shape the reader did not expect gives `unreadable`, which the runtime
 * records as a malformed action. Only the reading is guarded: the API call's own errors are
 * thrown before, and retried.
 */
export function readSafely(read: () => Action, usage: () => ModelUsage | undefined): Action {
  try {
    return read();
  } catch {
    try {
      return unreadable(usage());
    } catch {
      return unreadable(undefined);
    }
  }
}
