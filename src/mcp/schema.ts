/**
 * An MCP tool's `inputSchema` (JSON Schema, written by the server) as the schema of a Tollgate
 * tool: a Standard Schema (arguments are checked before approval is asked and before the call
 * runs) that is also a Standard JSON Schema (`toolDeclarations` declares the server's schema to
 * the model as it is).
 */
import type { JsonSchemaType, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import type { JsonObject } from '../../machines/types.js';
import { isPlainObject, toJson } from '../json.js';
import { showValue } from '../option-keys.js';

/** The longest JSON Schema of one tool's arguments, as JSON text, that is accepted from a server. */
export const MAX_SCHEMA_LENGTH = 100_000;

/** A validator's message is cut at this many characters (it may quote the value it got). */
const MAX_MESSAGE = 1_000;

/** The dialects the server's schema is declared in unconverted; others throw, as the spec asks. */
const TARGETS = new Set(['draft-2020-12', 'draft-07']);

/** The schema of an MCP tool's arguments: validates them, and gives the server's JSON Schema. */
export type McpInputSchema = StandardSchemaV1<JsonObject, JsonObject> & StandardJSONSchemaV1<JsonObject, JsonObject>;

/** The server's `inputSchema` copied as plain JSON, or why it cannot be used. */
export function readSchema(raw: unknown): { ok: true; schema: JsonObject } | { ok: false; why: string } {
  const json = toJson(raw, 'inputSchema');
  if (!json.ok) return { ok: false, why: `its inputSchema is not JSON: ${json.reason}` };
  if (!isPlainObject(json.value))
    return { ok: false, why: `its inputSchema is ${showValue(json.value)}, not an object` };
  const schema = json.value as JsonObject;
  if (schema.type !== 'object') {
    return { ok: false, why: `its inputSchema's type is ${showValue(schema.type)}, not "object"` };
  }
  const length = JSON.stringify(schema).length;
  if (length > MAX_SCHEMA_LENGTH) {
    return { ok: false, why: `its inputSchema is ${length} characters of JSON, more than ${MAX_SCHEMA_LENGTH}` };
  }
  return { ok: true, schema };
}

type Check = (value: unknown) => string | null;

/** The validator's check of one schema, or why the validator refused the schema. */
export function compile(
  validator: jsonSchemaValidator,
  schema: JsonObject,
): { ok: true; check: Check } | { ok: false; why: string } {
  try {
    const validate = validator.getValidator(structuredClone(schema) as JsonSchemaType);
    return {
      ok: true,
      check: (value) => {
        const result = validate(value);
        if (result.valid) return null;
        const message = String(result.errorMessage);
        return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
      },
    };
  } catch (error) {
    return {
      ok: false,
      why: `the validator refused its inputSchema (${error instanceof Error ? error.message : String(error)})`,
    };
  }
}

/**
 * The Standard Schema of a tool whose arguments' JSON Schema is `schema`. It passes on any plain
 * object, checked by `check` when there is one (the server checks the arguments again: the
 * protocol asks it to), and hands out a fresh copy of `schema` for each declaration.
 */
export function inputSchemaOf(schema: JsonObject, check: Check | null): McpInputSchema {
  const jsonSchema = ({ target }: StandardJSONSchemaV1.Options): Record<string, unknown> => {
    if (!TARGETS.has(target)) {
      throw new Error(`an MCP tool's JSON Schema is the server's own; it is not converted to ${target}`);
    }
    return structuredClone(schema);
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'tollgate/mcp',
      validate(value: unknown): StandardSchemaV1.Result<JsonObject> {
        if (!isPlainObject(value))
          return { issues: [{ message: `arguments must be an object, got ${showValue(value)}` }] };
        const problem = check?.(value) ?? null;
        return problem === null ? { value: value as JsonObject } : { issues: [{ message: problem }] };
      },
      jsonSchema: { input: jsonSchema, output: jsonSchema },
    },
  };
}
