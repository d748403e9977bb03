/**
 * What every adapter is given: the client, the model, the tools and how to call. Checked once,
 * when the policy is made, so that a typo fails at start-up and not at the first model call.
 */
import type { HistoryEntry } from '../../machines/types.js';
import { OptionsError } from '../errors.js';
import { markModel, type PolicyModel } from '../policy-model.js';
import { type DeclarationOptions, type ToolDeclaration, toolDeclarations } from '../tool-declarations.js';
import type { Policy, PolicyContext, Tool } from '../types.js';
import type { ModelUsage } from './actions.js';

/** The options every adapter takes. */
export interface ModelOptions<Client, Tools extends readonly Tool[]> {
  /** The SDK's client, configured as you like (API key, base URL, timeout). Its retries are turned off per request: the runtime retries (`policyRetries`). */
  client: Client;
  /** The model's name, as the API knows it. */
  model: string;
  /** The agent's tools: the same list given to the Agent. Declared to the model from their schemas. */
  tools: Tools;
  /** The system prompt. @default none */
  instructions?: string;
  /** Output tokens per call, before the token budget caps it (`ctx.remaining.tokens`). */
  maxOutputTokens?: number;
  /** Stream the answer: observers see `{ type: 'delta' }` events as it arrives. @default true */
  stream?: boolean;
  /** How the tools' schemas become JSON Schema (see `toolDeclarations`). */
  declarations?: DeclarationOptions;
}

/** What an adapter's call needs, checked. */
export interface ModelCall<Client> {
  client: Client;
  model: string;
  instructions: string | undefined;
  maxOutputTokens: number | undefined;
  stream: boolean;
  declarations: ToolDeclaration[];
  /** Extra request parameters (temperature, …), under the adapter's own. */
  request: Record<string, unknown>;
}

/** Checks the options common to every adapter; throws `OptionsError` naming the one that is wrong. */
export function modelCall<Client>(
  where: string,
  options: ModelOptions<Client, readonly Tool[]> & { request?: object | undefined },
): ModelCall<Client> {
  if (typeof options !== 'object' || options === null) throw new OptionsError(`${where}: options must be an object`);
  const { client, model, tools, instructions, maxOutputTokens, stream, declarations, request } = options;
  if (typeof client !== 'object' || client === null)
    throw new OptionsError(`${where}: client must be the SDK's client`);
  if (typeof model !== 'string' || model === '') throw new OptionsError(`${where}: model must be a non-empty string`);
  if (!Array.isArray(tools)) throw new OptionsError(`${where}: tools must be an array of tools`);
  if (instructions !== undefined && typeof instructions !== 'string') {
    throw new OptionsError(`${where}: instructions must be a string`);
  }
  if (maxOutputTokens !== undefined && !(Number.isSafeInteger(maxOutputTokens) && maxOutputTokens > 0)) {
    throw new OptionsError(`${where}: maxOutputTokens must be a positive integer, got ${String(maxOutputTokens)}`);
  }
  if (stream !== undefined && typeof stream !== 'boolean') throw new OptionsError(`${where}: stream must be a boolean`);
  return {
    client,
    model,
    instructions: instructions === '' ? undefined : instructions,
    maxOutputTokens,
    stream: stream ?? true,
    declarations: toolDeclarations(tools, declarations),
    request: { ...(request ?? {}) },
  };
}

/**
 * Wraps an adapter's call as a policy of `Tools`, marked with its model (for the policy call's
 * span) and its call's bounds (for the budgets' reservations): the most and fewest output tokens
 * it asks for, and what its requests carry beside the history (instructions, declarations).
 */
export function policyOf<Tools extends readonly Tool[]>(
  fn: (history: HistoryEntry[], ctx: PolicyContext) => Promise<unknown>,
  model: Pick<PolicyModel, 'provider' | 'model'>,
  call: Pick<ModelCall<unknown>, 'instructions' | 'declarations' | 'maxOutputTokens'>,
  bounds: { minOutputTokens?: number; defaultOutputTokens?: number } = {},
): Policy<Tools> {
  const carried = JSON.stringify({ instructions: call.instructions ?? '', tools: call.declarations });
  const maxOutputTokens = call.maxOutputTokens ?? bounds.defaultOutputTokens;
  return markModel(fn, {
    ...model,
    requestTokens: Math.ceil(carried.length / 4),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    ...(bounds.minOutputTokens === undefined ? {} : { minOutputTokens: bounds.minOutputTokens }),
  }) as unknown as Policy<Tools>;
}

export type { ModelUsage };
