/**
 * Turns what a policy returned into a `Decision` the machine can take: validated, copied to
 * plain JSON, and classified against the tool set. Nothing a policy returns can throw here
 * (invariant 6): a bad action becomes a `malformed` decision, seen by the model as an error.
 */
import type { Decision, JsonObject, Usage } from '../machines/types.js';
import { isPlainObject, toJson } from './json.js';
import type { Tool } from './types.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A decision before its cost and time are known. */
export type Classified = DistributiveOmit<Decision, 'usage' | 'elapsedMs' | 'at'>;

const MALFORMED = 'malformed action';

function malformed(raw: unknown, why: string): Classified {
  const tool = isPlainObject(raw) && typeof raw.tool === 'string' ? raw.tool : '';
  return { type: 'malformed', tool, error: `${MALFORMED}: ${why}` };
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/** Reads `usage` off an action; a missing or invalid usage counts nothing. */
export function usageOf(raw: unknown): Usage | null {
  if (!isPlainObject(raw) || !isPlainObject(raw.usage)) return null;
  const { inputTokens, outputTokens } = raw.usage;
  return isCount(inputTokens) && isCount(outputTokens) ? { inputTokens, outputTokens } : null;
}

/** Whether a call of `tool` with `args` needs a human first. A predicate that throws means yes. */
export async function needsApproval(tool: Tool, args: JsonObject): Promise<boolean> {
  const rule = tool.needsApproval ?? tool.sideEffect ?? false;
  if (typeof rule !== 'function') return rule === true;
  try {
    return (await rule(args)) !== false;
  } catch {
    return true; // fail closed: never skip an approval because the rule broke
  }
}

/** Validates a policy's action and classifies it against the tools. */
export async function classify(raw: unknown, tools: ReadonlyMap<string, Tool>): Promise<Classified> {
  if (!isPlainObject(raw))
    return malformed(
      raw,
      `expected an object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`,
    );
  const hasTool = 'tool' in raw && raw.tool !== undefined;
  const hasFinal = 'final' in raw && raw.final !== undefined;
  if (hasTool && hasFinal) return malformed(raw, 'has both tool and final');
  if (!hasTool && !hasFinal) return malformed(raw, 'has neither tool nor final');
  if (hasFinal) {
    const final = toJson(raw.final, 'final');
    return final.ok ? { type: 'final', final: final.value } : malformed(raw, final.reason);
  }
  if (typeof raw.tool !== 'string' || raw.tool === '') return malformed(raw, 'tool must be a non-empty string');
  const argsRaw = raw.args === undefined ? {} : raw.args;
  if (!isPlainObject(argsRaw)) return malformed(raw, 'args must be an object');
  const args = toJson(argsRaw, 'args');
  if (!args.ok) return malformed(raw, args.reason);
  const tool = tools.get(raw.tool);
  const argsObject = args.value as JsonObject;
  if (!tool) return { type: 'unknown_tool', tool: raw.tool, args: argsObject };
  return { type: 'call', tool: raw.tool, args: argsObject, needsApproval: await needsApproval(tool, argsObject) };
}
