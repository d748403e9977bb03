/**
 * Turns what a policy returned into a `Decision` the machine can take: validated, copied to plain
 * JSON, and each call classified against the tool set (unknown tool, invalid arguments, a rule's
 * denial, run at once, or ask a human). Nothing a policy returns can throw here (invariant 6): a
 * bad action — a wrong shape, a throwing getter, a revoked Proxy — becomes a `malformed`
 * decision, seen by the model as an error observation.
 */
import { hasLoneSurrogate, wellFormed } from '../../machines/strings.js';
import type { ClassifiedCall, Decision, HistoryEntry, JsonObject, Verdict } from '../../machines/types.js';
import { isPlainObject, safeString, toJson } from '../json.js';
import { validateArgs } from '../tool-schema.js';
import type { Tool } from '../types.js';
import { approvalRule } from './approval.js';
import type { SignalSource } from './deadline.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A decision before its cost and time are known. */
export type Classified = DistributiveOmit<Decision, 'usage' | 'cost' | 'elapsedMs' | 'at'>;

/** Where the calls are judged: the run and the step they belong to. */
export interface CallSite {
  runId: string;
  /** The policy call's signal (read only by a schema check): one left hanging stops with the call. */
  abort?: SignalSource;
  step: number;
  tools: ReadonlyMap<string, Tool>;
  /** The run's `concurrency`: above 1, the calls of tools that are not side-effecting may run side by side. */
  concurrency: number;
  /** The rules' copy of the history, made when a rule first asks for it. */
  history: () => readonly HistoryEntry[];
}

const MALFORMED = 'malformed action';

/** The most of a tool name an observation repeats back to the model. */
const MAX_TOOL_NAME = 200;
/** The most calls one step may ask for. */
export const MAX_CALLS = 64;
/** The longest tool-call id a model may give. */
const MAX_CALL_ID = 200;

class Malformed extends Error {}

/** The fields of an action, each read once, so a getter cannot answer differently twice. */
interface ActionFields {
  tool: unknown;
  args: unknown;
  id: unknown;
  text: unknown;
  calls: unknown;
  final: unknown;
  usage: unknown;
  has: { tool: boolean; calls: boolean; final: boolean };
}

function fieldsOf(raw: Record<string, unknown>): ActionFields {
  const { tool, args, id, text, calls, final, usage } = raw;
  return {
    tool,
    args,
    id,
    text,
    calls,
    final,
    usage,
    has: {
      tool: 'tool' in raw && tool !== undefined,
      calls: 'calls' in raw && calls !== undefined,
      final: 'final' in raw && final !== undefined,
    },
  };
}

/** The tool name a malformed observation names: a well-formed, bounded string, or ''. */
function nameOf(tool: unknown): string {
  if (typeof tool !== 'string') return '';
  return wellFormed(tool.length > MAX_TOOL_NAME ? tool.slice(0, MAX_TOOL_NAME) : tool);
}

function malformed(tool: unknown, why: string): Classified {
  return { type: 'malformed', tool: nameOf(tool), error: `${MALFORMED}: ${why}` };
}

function describeShape(raw: unknown): string {
  if (raw === null) return 'null';
  return Array.isArray(raw) ? 'an array' : typeof raw;
}

/** A call as the model asked for it, checked for shape and copied; throws `Malformed`. */
interface Requested {
  tool: string;
  args: JsonObject;
  toolCallId: string | null;
}

function requested(tool: unknown, args: unknown, id: unknown, where: string): Requested {
  const at = where === '' ? '' : `${where}.`;
  if (typeof tool !== 'string' || tool === '') throw new Malformed(`${at}tool must be a non-empty string`);
  if (hasLoneSurrogate(tool)) throw new Malformed(`${at}tool is a string with a lone surrogate`);
  const given = args === undefined ? {} : args;
  if (!isPlainObject(given)) throw new Malformed(`${at}args must be an object`);
  const copy = toJson(given, `${at}args`);
  if (!copy.ok) throw new Malformed(copy.reason);
  if (id !== undefined) {
    if (typeof id !== 'string' || id === '' || id.length > MAX_CALL_ID || hasLoneSurrogate(id)) {
      throw new Malformed(`${at}id must be a string of 1 to ${MAX_CALL_ID} characters`);
    }
  }
  return { tool, args: copy.value as JsonObject, toolCallId: id ?? null };
}

function requestedCalls(calls: unknown): Requested[] {
  if (!Array.isArray(calls) || calls.length === 0) throw new Malformed('calls must be a non-empty array');
  if (calls.length > MAX_CALLS) throw new Malformed(`calls holds more than ${MAX_CALLS} calls`);
  const out: Requested[] = [];
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    if (!isPlainObject(call)) throw new Malformed(`calls[${i}] must be an object`);
    const { tool, args, id } = call;
    const one = requested(tool, args, id, `calls[${i}]`);
    if (one.toolCallId !== null && out.some((c) => c.toolCallId === one.toolCallId)) {
      throw new Malformed(`calls[${i}].id repeats the id of an earlier call`);
    }
    out.push(one);
  }
  return out;
}

/** What happens to one call: unknown tool, invalid arguments, a rule's answer. */
async function verdictOf(call: Requested, site: CallSite): Promise<Verdict> {
  const tool = site.tools.get(call.tool);
  if (!tool) return { kind: 'refuse', error: `unknown tool ${call.tool}` };
  const valid = await validateArgs(tool, call.args, site.abort ?? {});
  if (!valid.ok) return { kind: 'refuse', error: valid.error };
  const ctx = { runId: site.runId, step: site.step, tool: call.tool, history: site.history };
  const answer = await approvalRule(tool, valid.value, ctx);
  if (answer.kind === 'deny') return { kind: 'refuse', error: `denied by rule: ${answer.reason}` };
  if (answer.kind === 'run' && tool.sideEffect !== true && site.concurrency > 1)
    return { kind: 'run', concurrent: true };
  return { kind: answer.kind };
}

async function classifyFields(a: ActionFields, site: CallSite): Promise<Classified> {
  const forms = (['tool', 'calls', 'final'] as const).filter((f) => a.has[f]);
  if (forms.length === 0) return malformed(a.tool, 'has neither tool nor final');
  if (forms.length > 1) return malformed(a.tool, `has both ${forms[0]} and ${forms[1]}`);
  if (a.has.final) {
    const final = toJson(a.final, 'final');
    return final.ok ? { type: 'final', final: final.value } : malformed(a.tool, final.reason);
  }
  let calls: Requested[];
  try {
    calls = a.has.calls ? requestedCalls(a.calls) : [requested(a.tool, a.args, a.id, '')];
    if (a.text !== undefined && (typeof a.text !== 'string' || hasLoneSurrogate(a.text))) {
      throw new Malformed('text must be a string (without lone surrogates)');
    }
  } catch (error) {
    if (error instanceof Malformed) return malformed(a.tool, error.message);
    throw error;
  }
  const classified: ClassifiedCall[] = [];
  for (const call of calls) classified.push({ ...call, verdict: await verdictOf(call, site) });
  return { type: 'calls', calls: classified, text: typeof a.text === 'string' ? a.text : null };
}

/**
 * Validates a policy's action and classifies its calls against the tools: each field of the
 * action is read once. Its `usage` is passed on as read (undefined when the action could not be
 * read), for cost.ts to read and price. Never throws.
 */
export async function readAction(raw: unknown, site: CallSite): Promise<{ decision: Classified; usage: unknown }> {
  let fields: ActionFields;
  try {
    if (!isPlainObject(raw)) {
      return { decision: malformed(undefined, `expected an object, got ${describeShape(raw)}`), usage: undefined };
    }
    fields = fieldsOf(raw);
  } catch (error) {
    return { decision: malformed(undefined, `the action could not be read: ${safeString(error)}`), usage: undefined };
  }
  return { decision: await classifyFields(fields, site), usage: fields.usage };
}
