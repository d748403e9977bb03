/**
 * Tools as a model API declares them: name, description and the JSON Schema of the arguments,
 * from each tool's Standard Schema. For model adapters (OpenAI, Anthropic, the AI SDK), which
 * send the declarations with every request.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { type $ZodType, toJSONSchema as zodToJsonSchema } from 'zod/v4/core';
import { describeError } from '../machines/describe-error.js';
import type { JsonObject } from '../machines/types.js';
import { OptionsError } from './errors.js';
import { isPlainObject, toJson } from './json.js';
import { showValue } from './option-keys.js';
import { checkToolSchema } from './tool-schema.js';
import type { Tool } from './types.js';

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

type Parameters = { ok: true; parameters: JsonObject } | { ok: false; why: string };

/** The JSON Schema a converter gives, as the model API will get it (JSON), or why there is none. */
function convert(input: StandardSchemaV1, tool: Tool, options: DeclarationOptions, target: SchemaTarget): unknown {
  const schema = options.toJsonSchema?.(input, tool) ?? builtInJsonSchema(input, target);
  // What JSON.stringify drops (undefined, functions) is dropped; a BigInt throws.
  return schema === undefined ? undefined : JSON.parse(JSON.stringify(schema));
}

/** The JSON Schema of one tool's arguments, as plain JSON, or what is wrong. */
function parametersOf(tool: Tool, options: DeclarationOptions): Parameters {
  const problem = checkToolSchema(tool);
  if (problem !== null) return { ok: false, why: problem };
  const input = tool.input;
  if (input === undefined) return { ok: true, parameters: { type: 'object' } };
  const target = options.target ?? 'draft-2020-12';
  let schema: unknown;
  try {
    schema = convert(input, tool, options, target);
    if (schema === undefined) return { ok: false, why: noConverter(input) };
  } catch (error) {
    return {
      ok: false,
      why: `its input schema cannot be written as JSON Schema (${target}): ${describeError(error)}`,
    };
  }
  const json = toJson(schema, 'schema');
  if (!json.ok) return { ok: false, why: `its JSON Schema is not JSON: ${json.reason}` };
  if (!isPlainObject(json.value)) {
    return { ok: false, why: `its JSON Schema must be an object, got ${showValue(json.value)}` };
  }
  const { $schema: _dialect, ...parameters } = json.value as JsonObject;
  const type = parameters.type;
  if (type !== undefined && type !== 'object') {
    const why = `input must describe an object (arguments are a JSON object), its JSON Schema's type is ${JSON.stringify(type)}`;
    return { ok: false, why };
  }
  return { ok: true, parameters };
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
    const declared = parametersOf(tool, options);
    if (!declared.ok) throw new OptionsError(`${where}: ${declared.why}`);
    const { parameters } = declared;
    const description = tool.description;
    return typeof description === 'string' ? { name, description, parameters } : { name, parameters };
  });
}
