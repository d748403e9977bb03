/**
 * Tools' argument schemas: any Standard Schema v1 value (zod 4, valibot, arktype). Three uses:
 * checking a tool's `input` up front (`checkToolSchema`), validating a call's arguments before
 * approval is asked and before the call runs (`validateArgs`), and describing the tools to a
 * model (`toolDeclarations`). `defineTool` types a tool from its schema.
 *
 * The arguments come from the model: attacker data (prompt injection). The schema gets a copy of
 * them, never the one the history keeps; whatever it returns must be plain JSON; a schema that
 * throws, hangs past the signal or answers nonsense fails closed: nothing runs. Every text made
 * here is bounded and well-formed, because it ends up in the checkpoint as an observation.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { type $ZodType, toJSONSchema as zodToJsonSchema } from 'zod/v4/core';
import { wellFormed } from '../machines/strings.js';
import type { JsonObject } from '../machines/types.js';
import { OptionsError } from './errors.js';
import { isPlainObject, toJson } from './json.js';
import { showValue } from './option-keys.js';
import type { Tool } from './types.js';

/** Issues an `invalid arguments` observation lists before it says how many more there are. */
export const MAX_ISSUES_SHOWN = 10;

/** The longest text `validateArgs` returns as an error (a model's arguments can be huge). */
export const MAX_ARGS_ERROR_LENGTH = 4_000;

/** One issue's message is cut at this many characters (valibot quotes the value it got). */
const MAX_MESSAGE = 200;

/** Path segments an issue names before it elides the middle of a deep path, and a key's length. */
const MAX_PATH_SHOWN = 8;
const MAX_KEY = 60;

/** `validateArgs`' answer: the schema's output (what the tool gets), or why nothing may run. */
export type ArgsCheck = { ok: true; value: JsonObject } | { ok: false; error: string };

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `'<ErrorName>: <message>'` for anything a schema throws; never throws itself. */
function describeThrown(error: unknown): string {
  try {
    if (error !== null && typeof error === 'object') {
      const { name, message } = error as { name?: unknown; message?: unknown };
      return `${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : showValue(message)}`;
    }
    return `Error: ${typeof error === 'string' ? error : showValue(error)}`;
  } catch {
    return 'Error: <unreadable thrown value>';
  }
}

type Standard =
  | { ok: true; props: StandardSchemaV1.Props; validate: StandardSchemaV1.Props['validate'] }
  | { ok: false; why: string };

/** Reads `value['~standard']` once and checks that it is a Standard Schema v1. */
function readStandard(value: unknown): Standard {
  // An arktype type is a function with `~standard`; zod and valibot schemas are objects.
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    return { ok: false, why: `got ${showValue(value)}` };
  }
  try {
    const props = (value as { '~standard'?: unknown })['~standard'];
    if (props === null || typeof props !== 'object') return { ok: false, why: 'it has no "~standard" object' };
    const { version, validate } = props as { version?: unknown; validate?: unknown };
    if (version !== 1) return { ok: false, why: `its "~standard".version is ${showValue(version)}, not 1` };
    if (typeof validate !== 'function') return { ok: false, why: 'its "~standard".validate is not a function' };
    // The very function checked is the one called (a getter could answer differently twice).
    return {
      ok: true,
      props: props as StandardSchemaV1.Props,
      validate: validate as StandardSchemaV1.Props['validate'],
    };
  } catch (error) {
    return { ok: false, why: `it could not be read (${describeThrown(error)})` };
  }
}

/**
 * Checks a tool's `input` up front: absent, or a Standard Schema v1 value (`~standard.version`
 * is 1 and `~standard.validate` a function). Returns what is wrong, or null. Never throws.
 *
 * @example
 * const problem = checkToolSchema(tool);
 * if (problem) throw new OptionsError(`new Agent: tools[${i}] (${JSON.stringify(tool.name)}): ${problem}`);
 */
export function checkToolSchema(tool: Pick<Tool, 'input'>): string | null {
  let input: unknown;
  try {
    input = tool.input;
  } catch (error) {
    return `input could not be read (${describeThrown(error)})`;
  }
  if (input === undefined) return null;
  const standard = readStandard(input);
  return standard.ok ? null : `input must be a Standard Schema v1 value (zod 4, valibot, arktype…): ${standard.why}`;
}

/** A key as a path segment: `name` first, then `.name`, `[2]`, `["odd key"]`. */
function segment(raw: unknown, first: boolean): string {
  // A Standard Schema path holds keys, or segments `{ key }` (valibot).
  const key = raw !== null && typeof raw === 'object' ? (raw as { key?: unknown }).key : raw;
  if (typeof key === 'number') return `[${key}]`;
  if (typeof key === 'string') {
    if (/^[A-Za-z_$][\w$]*$/.test(key) && key.length <= MAX_KEY) return first ? key : `.${key}`;
    return `[${JSON.stringify(clip(key, MAX_KEY))}]`;
  }
  return typeof key === 'symbol' ? `[${clip(String(key), MAX_KEY)}]` : '[?]';
}

/** `items[2].qty`; a deep path keeps its first and last segments: `a.b.c.d.e…[7].x.y`. */
function pathText(path: unknown): string {
  if (!Array.isArray(path)) return '';
  const length = path.length;
  const shown = (i: number) => segment(path[i], i === 0);
  if (length <= MAX_PATH_SHOWN) return Array.from({ length }, (_, i) => shown(i)).join('');
  const head = Array.from({ length: MAX_PATH_SHOWN - 3 }, (_, i) => shown(i)).join('');
  const tail = [length - 3, length - 2, length - 1].map(shown).join('');
  return `${head}…${tail}`;
}

function issueText(issue: unknown): string {
  try {
    const { message, path } = issue as StandardSchemaV1.Issue;
    const text = clip(typeof message === 'string' ? message : `(no message: ${showValue(message)})`, MAX_MESSAGE);
    const where = pathText(path);
    return where === '' ? text : `${where}: ${text}`;
  } catch (error) {
    return `(an issue that could not be read: ${clip(describeThrown(error), MAX_MESSAGE)})`;
  }
}

function fail(error: string): ArgsCheck {
  const bounded =
    error.length > MAX_ARGS_ERROR_LENGTH
      ? `${error.slice(0, MAX_ARGS_ERROR_LENGTH)}… (${error.length - MAX_ARGS_ERROR_LENGTH} more characters)`
      : error;
  return { ok: false, error: wellFormed(bounded) };
}

function issuesError(issues: unknown): ArgsCheck {
  try {
    if (!Array.isArray(issues)) return fail(`argument schema failed: its issues are ${showValue(issues)}, not a list`);
    const count = issues.length;
    if (count === 0) return fail('invalid arguments (the schema gave no reason)');
    const shown = Array.from({ length: Math.min(count, MAX_ISSUES_SHOWN) }, (_, i) => issueText(issues[i]));
    const more = count > MAX_ISSUES_SHOWN ? `; and ${count - MAX_ISSUES_SHOWN} more` : '';
    return fail(`invalid arguments: ${shown.join('; ')}${more}`);
  } catch (error) {
    // A Proxy for a list: Array.isArray, length or an index can throw.
    return fail(`argument schema failed: its issues could not be read (${describeThrown(error)})`);
  }
}

/** Reads a validate result once: its issues, or its output copied as a plain JSON object. */
function readResult(result: unknown): ArgsCheck {
  let issues: unknown;
  let value: unknown;
  try {
    if (result === null || typeof result !== 'object') {
      return fail(`argument schema failed: validate returned ${showValue(result)}, not a result`);
    }
    ({ issues, value } = result as { issues?: unknown; value?: unknown });
  } catch (error) {
    return fail(`argument schema failed: its result could not be read (${describeThrown(error)})`);
  }
  // Standard Schema: a falsy `issues` means success.
  if (issues) return issuesError(issues);
  const output = toJson(value, 'output');
  if (!output.ok) return fail(`argument schema's output is not JSON: ${output.reason}`);
  if (!isPlainObject(output.value)) {
    return fail(`argument schema's output must be an object, got ${showValue(output.value)}`);
  }
  return { ok: true, value: output.value as JsonObject };
}

/**
 * What a validation stopped by its signal rejects with. Recognised by identity: `instanceof` on
 * what a schema throws can itself throw (a revoked Proxy).
 */
const ABORTED = Symbol('aborted');

/** `value`, or a rejection with `ABORTED` as soon as `signal` aborts, whichever comes first. */
function untilAborted<T>(value: T | PromiseLike<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return Promise.resolve(value);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(value).then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Validates a call's arguments against its tool's `input` schema, sync or async. With no schema,
 * the arguments are returned as they are. Otherwise the schema validates a copy of them, and:
 * issues become `invalid arguments: <path>: <message>; …` (at most `MAX_ISSUES_SHOWN` issues,
 * then `and N more`); an output that is not a plain JSON object (a transform into a `Date`),
 * a schema that is not a Standard Schema, that throws, rejects or answers a malformed result, and
 * an aborted `signal`, are errors too: nothing may run. The error is at most
 * `MAX_ARGS_ERROR_LENGTH` characters and well-formed. Never throws.
 *
 * @example
 * const check = await validateArgs(tool, args, { signal });
 * if (!check.ok) return { error: check.error }; // an observation; nobody is asked, nothing runs
 * await tool.fn(check.value, key, ctx);          // the schema's output
 */
export async function validateArgs(
  tool: Pick<Tool, 'input'>,
  args: JsonObject,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<ArgsCheck> {
  let input: unknown;
  try {
    input = tool.input;
  } catch (error) {
    return fail(`argument schema could not be read: ${describeThrown(error)}`);
  }
  if (input === undefined) return { ok: true, value: args };
  const standard = readStandard(input);
  if (!standard.ok) return fail(`argument schema is not a Standard Schema v1 value: ${standard.why}`);
  // The schema gets a copy: one that changes its input must not change the arguments the history keeps.
  const copy = toJson(args, 'args');
  if (!copy.ok) return fail(`invalid arguments: ${copy.reason}`);
  const { signal } = options;
  let result: unknown;
  try {
    if (signal?.aborted) throw ABORTED;
    result = await untilAborted(standard.validate.call(standard.props, copy.value), signal);
  } catch (error) {
    if (error === ABORTED) return fail('argument validation was aborted');
    return fail(`argument schema failed: ${describeThrown(error)}`);
  }
  return readResult(result);
}

/** What a function declaration's `parameters` can be written as (see `toolDeclarations`). */
export type SchemaTarget = StandardJSONSchemaV1.Target;

/** A tool as a model API declares it: its name, description and arguments' JSON Schema. */
export interface ToolDeclaration {
  name: string;
  description?: string;
  /** The JSON Schema of the arguments (the schema's input side); `{ type: 'object' }` with no schema. */
  parameters: JsonObject;
}

/** Options of `toolDeclarations`. */
export interface DeclarationOptions {
  /**
   * The JSON Schema dialect: `'draft-2020-12'` (OpenAI function calling and its strict mode, and
   * Anthropic's `input_schema`, take JSON Schema: strict mode's own constraints, such as every
   * property required and `additionalProperties: false`, are the adapter's to add), `'draft-07'`,
   * or `'openapi-3.0'` (Gemini's `parameters`, an OpenAPI 3.0 schema object). Other targets are
   * passed to the schema library, which may refuse them. @default 'draft-2020-12'
   */
  target?: SchemaTarget;
  /**
   * Converts a schema that offers no JSON Schema of its own (valibot with
   * `@valibot/to-json-schema`, a hand-written schema); tried first, `undefined` falls back to the
   * built-in conversion. @default none
   */
  toJsonSchema?: (input: StandardSchemaV1, tool: Tool) => Record<string, unknown> | undefined;
}

/** The schema's own JSON Schema (Standard JSON Schema), or zod 4's converter for zod 4 schemas that lack it. */
function builtInJsonSchema(input: StandardSchemaV1, target: SchemaTarget): unknown {
  const props = input['~standard'] as StandardSchemaV1.Props & Partial<StandardJSONSchemaV1.Props>;
  const converter = props.jsonSchema;
  if (converter && typeof converter.input === 'function') return converter.input({ target });
  // zod before 4.2, and zod/mini, implement Standard Schema but not Standard JSON Schema.
  const zod = (input as { _zod?: { version?: { major?: unknown } } })._zod;
  if (props.vendor === 'zod' && zod?.version?.major === 4) {
    return zodToJsonSchema(input as unknown as $ZodType, { target, io: 'input', unrepresentable: 'throw' });
  }
  return undefined;
}

function noConverter(input: StandardSchemaV1): string {
  const vendor = String(input['~standard'].vendor);
  const zod3 = vendor === 'zod' && !('_zod' in input);
  const hint = zod3 ? 'zod 3 schemas have none: use zod 4' : 'give toolDeclarations a toJsonSchema option';
  return `its ${JSON.stringify(vendor)} schema offers no JSON Schema (Standard JSON Schema): ${hint}`;
}

/** The JSON Schema of one tool's arguments, as plain JSON. Throws a message (a string) when it cannot. */
function parametersOf(tool: Tool, options: DeclarationOptions): JsonObject {
  const problem = checkToolSchema(tool);
  if (problem !== null) throw problem;
  const input = tool.input;
  if (input === undefined) return { type: 'object' };
  const target = options.target ?? 'draft-2020-12';
  let schema: unknown;
  try {
    schema = options.toJsonSchema?.(input, tool) ?? builtInJsonSchema(input, target);
    if (schema === undefined) throw noConverter(input);
    // As the model API will get it: what JSON.stringify drops (undefined, functions) is dropped.
    schema = JSON.parse(JSON.stringify(schema));
  } catch (error) {
    if (typeof error === 'string') throw error;
    throw `its input schema cannot be written as JSON Schema (${target}): ${describeThrown(error)}`;
  }
  const json = toJson(schema, 'schema');
  if (!json.ok) throw `its JSON Schema is not JSON: ${json.reason}`;
  if (!isPlainObject(json.value)) throw `its JSON Schema must be an object, got ${showValue(json.value)}`;
  const { $schema: _dialect, ...parameters } = json.value as JsonObject;
  const type = parameters.type;
  if (type !== undefined && type !== 'object') {
    throw `input must describe an object (arguments are a JSON object), its JSON Schema's type is ${JSON.stringify(type)}`;
  }
  return parameters;
}

/**
 * The tools as function declarations for a model API: `{ name, description?, parameters }`, in
 * the tools' order. `parameters` is the JSON Schema of what the model writes (the schema's input
 * side), from the schema's own Standard JSON Schema (zod ≥ 4.2), zod 4's `toJSONSchema` for zod 4
 * schemas without it (zod 4.0–4.1, zod/mini), or `options.toJsonSchema`; `{ type: 'object' }`
 * (any object) for a tool with no schema. The top-level `$schema` is left out (a declaration is
 * not a document). Throws `OptionsError` naming the tool when a schema cannot be converted, does
 * not describe an object, or two tools share a name.
 *
 * @example
 * const declarations = toolDeclarations(tools);
 * // OpenAI: tools: declarations.map((d) => ({ type: 'function', function: d }))
 * // Anthropic: tools: declarations.map(({ name, description, parameters }) =>
 * //   ({ name, description, input_schema: parameters }))
 */
export function toolDeclarations(tools: readonly Tool[], options: DeclarationOptions = {}): ToolDeclaration[] {
  const seen = new Set<string>();
  return tools.map((tool, i) => {
    const name = tool.name;
    const where = `toolDeclarations: tools[${i}] (${showValue(name)})`;
    if (typeof name !== 'string' || name === '') throw new OptionsError(`${where}: name must be a non-empty string`);
    if (seen.has(name)) throw new OptionsError(`toolDeclarations: two tools are named ${JSON.stringify(name)}`);
    seen.add(name);
    let parameters: JsonObject;
    try {
      parameters = parametersOf(tool, options);
    } catch (error) {
      if (typeof error !== 'string') throw error;
      throw new OptionsError(`${where}: ${error}`);
    }
    const description = tool.description;
    return typeof description === 'string' ? { name, description, parameters } : { name, parameters };
  });
}

/**
 * Declares a tool with its types inferred: its name as a literal type, and its arguments from its
 * `input` schema (`fn` and `needsApproval` get the schema's output; a typed policy writes its
 * input) or, without a schema, from `fn`'s parameter. A policy typed with such tools
 * (`Policy<typeof tools>`) cannot misspell a tool's name or give it arguments of the wrong shape.
 * At run time it returns `tool` itself, after checking that its `input` is a Standard Schema
 * (`OptionsError` otherwise).
 *
 * @example
 * const sendEmail = defineTool({
 *   name: 'send_email',
 *   input: z.object({ to: z.email(), body: z.string() }),
 *   sideEffect: true,
 *   fn: async ({ to, body }, key) => mailer.send({ to, body, idempotencyKey: key }), // typed
 * });
 * const search = defineTool({ name: 'search', fn: async ({ q }: { q: string }) => index.find(q) });
 * const tools = [sendEmail, search];
 * const policy: Policy<typeof tools> = () => ({ tool: 'search', args: { q: 'refunds' } });
 */
export function defineTool<const Name extends string, Schema extends StandardSchemaV1>(
  tool: { name: Name; input: Schema } & Omit<
    Tool<StandardSchemaV1.InferOutput<Schema>, Name, StandardSchemaV1.InferInput<Schema>>,
    'name' | 'input'
  >,
): Tool<StandardSchemaV1.InferOutput<Schema>, Name, StandardSchemaV1.InferInput<Schema>>;
export function defineTool<const Name extends string, Args = JsonObject>(
  tool: Tool<Args, Name> & { input?: undefined },
): Tool<Args, Name>;
export function defineTool(tool: Tool): Tool {
  const problem = checkToolSchema(tool);
  if (problem !== null) throw new OptionsError(`defineTool: tool ${showValue(tool.name)}: ${problem}`);
  return tool;
}
