/**
 * The model behind a policy, as the model adapters mark the policies they make: for the policy
 * call's span (`gen_ai.request.model`, `gen_ai.provider.name`), and for the budgets — what a call
 * can spend is held before it is made (runtime/reserve.ts), so the runtime needs to know how much
 * a request carries beside the history and how many output tokens a call may ask for. A policy
 * written by hand has none; its spans say `chat` alone, and its calls are held on estimates.
 */

// Symbol.for: read even when the policy was made by another copy of tollgate.
const MODEL = Symbol.for('tollgate.policy-model');

/** The provider (`openai`, `anthropic`, …), the model's name as the API knows it, and its call's bounds. */
export interface PolicyModel {
  provider: string;
  model: string;
  /** The most output tokens a call asks for (the adapter's `maxOutputTokens`, or its API's own default); absent: unknown. */
  maxOutputTokens?: number;
  /** The fewest output tokens the API accepts as a call's limit: a call never asks for fewer. @default 1 */
  minOutputTokens?: number;
  /** What every request carries beside the history (instructions, tool declarations), in estimated tokens. @default 0 */
  requestTokens?: number;
}

/** Marks `policy` as asking `model` (a property of its own, neither enumerable nor writable). */
export function markModel<P extends object>(policy: P, model: PolicyModel): P {
  Object.defineProperty(policy, MODEL, { value: Object.freeze({ ...model }) });
  return policy;
}

const count = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The model a policy was marked with; null for any other value, never throwing. */
export function modelOf(policy: unknown): PolicyModel | null {
  try {
    const model = (policy as Record<symbol, unknown> | null)?.[MODEL] as Partial<PolicyModel> | undefined;
    if (typeof model?.provider !== 'string' || typeof model.model !== 'string') return null;
    const { maxOutputTokens, minOutputTokens, requestTokens } = model;
    return {
      provider: model.provider,
      model: model.model,
      ...(count(maxOutputTokens) && maxOutputTokens > 0 ? { maxOutputTokens } : {}),
      ...(count(minOutputTokens) && minOutputTokens > 0 ? { minOutputTokens } : {}),
      ...(count(requestTokens) ? { requestTokens } : {}),
    };
  } catch {
    return null;
  }
}
