/**
 * `mcpTools`: the tools of a connected MCP server as Tollgate tools. What the server says is
 * hostile data: a tool that cannot be used is refused (or skipped, with `onInvalidTool`), and the
 * approval gate depends on the server's annotations only when the caller trusts the server.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { wellFormed } from '../../machines/strings.js';
import type { JsonObject } from '../../machines/types.js';
import { isPlainObject } from '../json.js';
import { showValue } from '../option-keys.js';
import type { Tool } from '../types.js';
import { type McpToolProblem, McpToolsError } from './errors.js';
import { findTool, listAll, type RequestLimits } from './list.js';
import { type CheckedOptions, checkMcpOptions, type McpToolsOptions } from './options.js';
import { resultOf } from './result.js';
import { compile, inputSchemaOf, readSchema } from './schema.js';

/**
 * The `_meta` key of every `tools/call` that carries the call's idempotency key
 * (`${runId}:${step}`, or `${runId}:${step}.${i}`): a server that deduplicates by it makes a call
 * retried after a crash happen once.
 */
export const IDEMPOTENCY_KEY_META = 'tollgate/idempotencyKey';

/**
 * The `_meta` key that carries the run's fencing token (`ctx.fence`), when the run has a store: a
 * server that keeps the largest token it has seen for a record and refuses smaller ones turns away
 * an owner that lost the run (docs/workers.md, "Fencing").
 */
export const FENCE_META = 'tollgate/fence';

/** A description longer than this is cut (with `…`): it goes to the model on every request. */
export const MAX_DESCRIPTION_LENGTH = 4_000;

/** Invalid tools an `McpToolsError` message names (all of them are in its `problems`). */
const MAX_PROBLEMS_SHOWN = 10;

/** What a Tollgate tool name may be: what the model APIs accept (OpenAI, Anthropic: 1–64 of these). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** What the annotations mean for the gate, given the trust in the server. */
function gateOf(annotations: unknown, trust: boolean): { readOnly: boolean; idempotent: boolean } {
  if (!trust || !isPlainObject(annotations)) return { readOnly: false, idempotent: false };
  return { readOnly: annotations.readOnlyHint === true, idempotent: annotations.idempotentHint === true };
}

type Made = { ok: true; tool: Tool<JsonObject> } | { ok: false; why: string };

interface Context {
  client: Client;
  options: CheckedOptions;
  limits: RequestLimits;
}

/** One listed tool as a Tollgate tool, or why it cannot be one. */
function makeTool(raw: unknown, { client, options, limits }: Context): Made {
  if (!isPlainObject(raw)) return { ok: false, why: `it is ${showValue(raw)}, not an object` };
  const { name: mcpName, description: rawDescription, inputSchema, annotations } = raw;
  if (typeof mcpName !== 'string') return { ok: false, why: `its name is ${showValue(mcpName)}, not a string` };
  const name = `${options.prefix}${mcpName}`;
  if (!TOOL_NAME.test(name)) {
    return { ok: false, why: `its name ${showValue(name)} is not 1 to 64 letters, digits, _ or -` };
  }
  if (rawDescription !== undefined && typeof rawDescription !== 'string') {
    return { ok: false, why: `its description is ${showValue(rawDescription)}, not a string` };
  }
  const read = readSchema(inputSchema);
  if (!read.ok) return read;
  const compiled = options.validator ? compile(options.validator, read.schema) : null;
  if (compiled && !compiled.ok) return compiled;
  const { readOnly, idempotent } = gateOf(annotations, options.trust);
  // The listing's signal is not the calls': each call gets its run's signal.
  const { signal: _listing, ...callLimits } = limits;
  const tool: Tool<JsonObject> = {
    name,
    input: inputSchemaOf(read.schema, compiled?.check ?? null),
    sideEffect: !readOnly,
    needsApproval: readOnly && options.recheck ? () => changed(client, mcpName, callLimits) : !readOnly,
    idempotent: !readOnly && idempotent,
    async fn(args, key, ctx) {
      const meta = { [IDEMPOTENCY_KEY_META]: key, ...(ctx.fence === null ? {} : { [FENCE_META]: ctx.fence }) };
      const params = { name: mcpName, arguments: args, _meta: meta };
      return resultOf(await client.callTool(params, undefined, { ...callLimits, signal: ctx.signal }), mcpName);
    },
  };
  if (rawDescription !== undefined) tool.description = clip(rawDescription);
  if (options.timeoutMs !== undefined) tool.timeoutMs = options.timeoutMs;
  return { ok: true, tool: Object.freeze(tool) };
}

/** Whether a trusted read-only tool now needs approval: true unless still listed read-only, once. */
async function changed(client: Client, name: string, limits: RequestLimits): Promise<boolean> {
  const now = await findTool(client, name, limits);
  const [only] = now;
  return !(now.length === 1 && isPlainObject(only) && gateOf(only.annotations, true).readOnly);
}

function clip(text: string): string {
  const whole = wellFormed(text);
  return whole.length > MAX_DESCRIPTION_LENGTH ? `${whole.slice(0, MAX_DESCRIPTION_LENGTH)}…` : whole;
}

/**
 * The tools of a connected MCP client's server as Tollgate tools: each tool's name (with
 * `prefix`), description, input schema (the server's JSON Schema, declared to the model as it is),
 * and a `fn` that calls it (`client.callTool`), with the call's idempotency key in its `_meta`
 * (`IDEMPOTENCY_KEY_META`) and the run's abort signal. Every page of `tools/list` is read.
 *
 * Untrusted (the default), every tool is a side effect that needs approval: the server's
 * annotations are ignored. With `trust: true`, `readOnlyHint: true` makes a tool run without
 * approval (checked again before each call: see `recheck`), any other tool is a side effect
 * that needs approval, and `idempotentHint: true` makes it idempotent (called again after a
 * crash, with the same key).
 *
 * A result is the tool's `structuredContent`, else the text of its content (see `resultOf`); an
 * `isError` result, a failed request or a closed connection is an error observation.
 *
 * Throws `McpToolsError` when the listing fails, or when a tool cannot be used (a name that is not
 * a valid tool name, two tools of one name, a description that is not a string, an input schema
 * that is not a JSON object schema) unless `onInvalidTool` is given; `OptionsError` for bad options.
 *
 * @example
 * const client = new Client({ name: 'support-desk', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['server.js'] }));
 * const tools = await mcpTools(client, { prefix: 'crm_' });
 * const agent = new Agent({ tools, policy });
 */
export async function mcpTools(client: Client, options: McpToolsOptions = {}): Promise<Tool<JsonObject>[]> {
  const checked = checkMcpOptions(client, options);
  const limits: RequestLimits = {};
  if (checked.timeoutMs !== undefined) limits.timeout = checked.timeoutMs;
  if (checked.signal !== undefined) limits.signal = checked.signal;
  const listed = await listAll(client, limits, 'mcpTools');
  const context = { client, options: checked, limits };
  const problems: McpToolProblem[] = [];
  const made = listed.flatMap((raw) => {
    const result = makeTool(raw, context);
    if (result.ok) return [result.tool];
    problems.push({ name: isPlainObject(raw) ? raw.name : undefined, reason: result.why });
    return [];
  });
  // Two tools of one name: which one a call reaches is the server's choice, so neither is made.
  const counts = new Map<string, number>();
  for (const tool of made) counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1);
  for (const [name, count] of counts) {
    if (count > 1) problems.push({ name, reason: `${count} tools are named ${JSON.stringify(name)}` });
  }
  const tools = made.filter((tool) => counts.get(tool.name) === 1);
  if (problems.length > 0 && !checked.onInvalidTool) {
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).map((p) => `${showValue(p.name)}: ${p.reason}`);
    const more = problems.length > MAX_PROBLEMS_SHOWN ? `; and ${problems.length - MAX_PROBLEMS_SHOWN} more` : '';
    const list = `${shown.join('; ')}${more}`;
    throw new McpToolsError(`mcpTools: the server lists tools that cannot be used: ${list}`, problems);
  }
  for (const problem of problems) checked.onInvalidTool?.(problem);
  return tools;
}
