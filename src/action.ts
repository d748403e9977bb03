/**
 * Turns what a policy returned into a `Decision` the machine can take: validated, copied to
 * plain JSON, and classified against the tool set. Nothing a policy returns can throw here
 * (invariant 6): a bad action — a wrong shape, a throwing getter, a revoked Proxy — becomes a
 * `malformed` decision, seen by the model as an error observation.
 */
import { deepFreeze } from '../machines/agent.js';
import { hasLoneSurrogate, wellFormed } from '../machines/strings.js';
import type { Decision, JsonObject, Usage } from '../machines/types.js';
import { isPlainObject, safeString, toJson } from './json.js';
import type { Tool } from './types.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A decision before its cost and time are known. */
export type Classified = DistributiveOmit<Decision, 'usage' | 'elapsedMs' | 'at'>;

const MALFORMED = 'malformed action';

/** The most of a tool name an observation repeats back to the model. */
const MAX_TOOL_NAME = 200;

/** The fields of an action, each read once, so a getter cannot answer differently twice. */
interface ActionFields {
  tool: unknown;
  args: unknown;
  final: unknown;
  usage: unknown;
  hasTool: boolean;
  hasFinal: boolean;
}

function fieldsOf(raw: Record<string, unknown>): ActionFields {
  const tool = raw.tool;
  const final = raw.final;
  return {
    tool,
    args: raw.args,
    final,
    usage: raw.usage,
    hasTool: 'tool' in raw && tool !== undefined,
    hasFinal: 'final' in raw && final !== undefined,
  };
}

/** The tool name a malformed observation names: a well-formed, bounded string, or ''. */
function nameOf(tool: unknown): string {
  if (typeof tool !== 'string') return '';
  const name = tool.length > MAX_TOOL_NAME ? tool.slice(0, MAX_TOOL_NAME) : tool;
  return wellFormed(name);
}

function malformed(tool: unknown, why: string): Classified {
  return { type: 'malformed', tool: nameOf(tool), error: `${MALFORMED}: ${why}` };
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function readUsage(usage: unknown): Usage | null {
  if (!isPlainObject(usage)) return null;
  const { inputTokens, outputTokens } = usage;
  return isCount(inputTokens) && isCount(outputTokens) ? { inputTokens, outputTokens } : null;
}

/**
 * Whether a call of `tool` with `args` needs a human first. The rule sees the very value the
 * tool will be given (frozen: it cannot change it on the way). A rule that throws means yes.
 */
export async function needsApproval(tool: Tool, args: JsonObject): Promise<boolean> {
  const rule = tool.needsApproval ?? tool.sideEffect ?? false;
  if (typeof rule !== 'function') return rule === true;
  try {
    return (await rule(deepFreeze(args))) !== false;
  } catch {
    return true; // fail closed: never skip an approval because the rule broke
  }
}

function describeShape(raw: unknown): string {
  if (raw === null) return 'null';
  return Array.isArray(raw) ? 'an array' : typeof raw;
}

async function classifyFields(a: ActionFields, tools: ReadonlyMap<string, Tool>): Promise<Classified> {
  if (a.hasTool && a.hasFinal) return malformed(a.tool, 'has both tool and final');
  if (!a.hasTool && !a.hasFinal) return malformed(a.tool, 'has neither tool nor final');
  if (a.hasFinal) {
    const final = toJson(a.final, 'final');
    return final.ok ? { type: 'final', final: final.value } : malformed(a.tool, final.reason);
  }
  if (typeof a.tool !== 'string' || a.tool === '') return malformed(a.tool, 'tool must be a non-empty string');
  if (hasLoneSurrogate(a.tool)) return malformed(a.tool, 'tool is a string with a lone surrogate');
  const argsRaw = a.args === undefined ? {} : a.args;
  if (!isPlainObject(argsRaw)) return malformed(a.tool, 'args must be an object');
  const args = toJson(argsRaw, 'args');
  if (!args.ok) return malformed(a.tool, args.reason);
  const argsObject = args.value as JsonObject;
  const tool = tools.get(a.tool);
  if (!tool) return { type: 'unknown_tool', tool: a.tool, args: argsObject };
  return { type: 'call', tool: a.tool, args: argsObject, needsApproval: await needsApproval(tool, argsObject) };
}

/**
 * Validates a policy's action and classifies it against the tools, and reads its usage: each
 * field of the action is read once. Never throws.
 */
export async function readAction(
  raw: unknown,
  tools: ReadonlyMap<string, Tool>,
): Promise<{ decision: Classified; usage: Usage | null }> {
  let fields: ActionFields;
  try {
    if (!isPlainObject(raw)) {
      return { decision: malformed(undefined, `expected an object, got ${describeShape(raw)}`), usage: null };
    }
    fields = fieldsOf(raw);
  } catch (error) {
    return { decision: malformed(undefined, `the action could not be read: ${safeString(error)}`), usage: null };
  }
  let usage: Usage | null;
  try {
    usage = readUsage(fields.usage);
  } catch {
    usage = null;
  }
  return { decision: await classifyFields(fields, tools), usage };
}
