/**
 * The argument checks the worker API shares: a store that can take part in the approval queue,
 * and agent definitions (as `defineAgent` makes them) by name.
 */

import type { AgentDefinition } from '../define.js';
import { isAgentDefinition } from '../define.js';
import { OptionsError } from '../errors.js';
import { showValue } from '../option-keys.js';
import type { CheckpointStore } from '../store/contract.js';

const QUEUE_METHODS = ['load', 'save', 'list', 'claim', 'release', 'queueDecision', 'claimNext'] as const;

/** Throws `OptionsError` unless `store` is a `CheckpointStore` with the approval queue's methods. */
export function checkQueueStore(call: string, store: unknown): asserts store is CheckpointStore {
  const missing =
    store === null || typeof store !== 'object'
      ? null
      : QUEUE_METHODS.filter((m) => typeof (store as Record<string, unknown>)[m] !== 'function');
  if (missing === null) {
    throw new OptionsError(`${call}: store must be a CheckpointStore, got ${showValue(store)}`);
  }
  if (missing.length > 0) {
    throw new OptionsError(
      `${call}: store must be a CheckpointStore with ${missing.join(', ')} (the approval queue and worker claims)`,
    );
  }
}

/** Throws `OptionsError` unless `value` was made by `defineAgent`. */
export function checkDefinition(call: string, what: string, value: unknown): asserts value is AgentDefinition<any> {
  if (!isAgentDefinition(value)) {
    throw new OptionsError(`${call}: ${what} must be an agent definition made by defineAgent, got ${showValue(value)}`);
  }
}

/** The definitions by name: a non-empty array, no name twice. */
export function definitionsByName(call: string, agents: unknown): Map<string, AgentDefinition<any>> {
  if (!Array.isArray(agents) || agents.length === 0) {
    throw new OptionsError(`${call}: agents must be a non-empty array of agent definitions, got ${showValue(agents)}`);
  }
  const byName = new Map<string, AgentDefinition<any>>();
  for (const [i, definition] of agents.entries()) {
    checkDefinition(call, `agents[${i}]`, definition);
    if (byName.has(definition.name)) {
      throw new OptionsError(`${call}: agents: two definitions are named ${JSON.stringify(definition.name)}`);
    }
    byName.set(definition.name, definition);
  }
  return byName;
}
