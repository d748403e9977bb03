/**
 * The model behind a policy, as the model adapters mark the policies they make, so that a policy
 * call's span can carry `gen_ai.request.model` and `gen_ai.provider.name`. A policy written by
 * hand has none; its spans say `chat` alone.
 */

// Symbol.for: read even when the policy was made by another copy of tollgate.
const MODEL = Symbol.for('tollgate.policy-model');

/** The provider (`openai`, `anthropic`, …) and the model's name, as the API knows it. */
export interface PolicyModel {
  provider: string;
  model: string;
}

/** Marks `policy` as asking `model` (a property of its own, neither enumerable nor writable). */
export function markModel<P extends object>(policy: P, model: PolicyModel): P {
  Object.defineProperty(policy, MODEL, { value: Object.freeze({ ...model }) });
  return policy;
}

/** The model a policy was marked with; null for any other value, never throwing. */
export function modelOf(policy: unknown): PolicyModel | null {
  try {
    const model = (policy as Record<symbol, unknown> | null)?.[MODEL] as Partial<PolicyModel> | undefined;
    return typeof model?.provider === 'string' && typeof model.model === 'string'
      ? { provider: model.provider, model: model.model }
      : null;
  } catch {
    return null;
  }
}
