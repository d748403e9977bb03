/**
 * Tool declarations (issue 12): the tools as JSON Schema function declarations for model
 * adapters, from the schema's own Standard JSON Schema, zod 4's converter, or a converter given;
 * every schema that cannot be declared is an `OptionsError` naming the tool.
 */
import * as v from 'valibot';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import * as zm from 'zod/mini';
import { OptionsError } from '../src/errors.js';
import { toolDeclarations } from '../src/tool-declarations.js';
import type { Tool } from '../src/types.js';

const fn = () => 'ok';

/** A hand-made Standard Schema whose validate is `validate`. */
function fake(validate: (value: unknown) => unknown, extra: Record<string, unknown> = {}) {
  return { '~standard': { version: 1, vendor: 'fake', validate, ...extra } } as never;
}

describe('toolDeclarations', () => {
  const sendEmail: Tool = {
    name: 'send_email',
    description: 'Send an email',
    input: z.object({ to: z.email(), body: z.string(), retries: z.number().int().default(1) }),
    fn,
  };

  it("uses the schema's own JSON Schema of its input side, without $schema", () => {
    const [declaration] = toolDeclarations([sendEmail]);
    expect(declaration).toEqual({
      name: 'send_email',
      description: 'Send an email',
      parameters: {
        type: 'object',
        properties: {
          to: expect.objectContaining({ type: 'string', format: 'email' }),
          body: { type: 'string' },
          retries: expect.objectContaining({ type: 'integer', default: 1 }),
        },
        // The model may leave out what has a default: the input side, not the output.
        required: ['to', 'body'],
      },
    });
  });

  it('asks the schema for the target given (Standard JSON Schema)', () => {
    const input = z.object({ n: z.number().gt(0) });
    const spy = vi.spyOn(input['~standard'].jsonSchema, 'input');
    const [openapi] = toolDeclarations([{ name: 'n', input, fn }], { target: 'openapi-3.0' });
    expect(spy).toHaveBeenCalledWith({ target: 'openapi-3.0' });
    // OpenAPI 3.0 writes an exclusive bound as a boolean beside the minimum.
    expect(openapi?.parameters.properties).toEqual({ n: { type: 'number', minimum: 0, exclusiveMinimum: true } });
    toolDeclarations([{ name: 'n', input, fn }]);
    expect(spy).toHaveBeenLastCalledWith({ target: 'draft-2020-12' });
  });

  it('declares a tool with no schema as taking any object, and leaves out a missing description', () => {
    expect(toolDeclarations([{ name: 'clock', fn }])).toStrictEqual([
      { name: 'clock', parameters: { type: 'object' } },
    ]);
    const odd = { name: 'clock', description: 42, fn } as unknown as Tool;
    expect(toolDeclarations([odd])).toStrictEqual([{ name: 'clock', parameters: { type: 'object' } }]);
  });

  it("converts zod 4 schemas that lack Standard JSON Schema (zod/mini) with zod's toJSONSchema", () => {
    const input = zm.object({ q: zm.string(), limit: zm.optional(zm.number()) });
    expect('jsonSchema' in input['~standard']).toBe(false);
    expect(toolDeclarations([{ name: 'search', input, fn }])).toEqual([
      {
        name: 'search',
        parameters: {
          type: 'object',
          properties: { q: { type: 'string' }, limit: { type: 'number' } },
          required: ['q'],
        },
      },
    ]);
  });

  it('declares the input side in the fallback too (a default makes a key optional)', () => {
    const input = zm.object({ q: zm.string(), limit: zm._default(zm.number(), 5) });
    expect(toolDeclarations([{ name: 'search', input, fn }])[0]?.parameters.required).toEqual(['q']);
  });

  it('accepts a schema with no top-level type (a union of objects)', () => {
    const input = z.union([z.object({ id: z.number() }), z.object({ email: z.email() })]);
    const parameters = toolDeclarations([{ name: 'find', input, fn }])[0]?.parameters;
    expect(parameters?.type).toBeUndefined();
    expect(parameters?.anyOf).toHaveLength(2);
  });

  it('takes a converter for schemas with no JSON Schema of their own (valibot)', () => {
    const input = v.object({ q: v.string() });
    const toJsonSchema = vi.fn((schema: unknown) =>
      schema === input ? { type: 'object', properties: { q: { type: 'string' } } } : undefined,
    );
    const tools: Tool[] = [{ name: 'search', input, fn }, { name: 'clock', fn }, sendEmail];
    const declarations = toolDeclarations(tools, { toJsonSchema });
    expect(declarations[0]).toEqual({
      name: 'search',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
    });
    // Tried first; undefined falls back to the built-in conversion.
    expect(declarations[2]?.parameters.required).toEqual(['to', 'body']);
    expect(toJsonSchema).toHaveBeenCalledTimes(2);
    expect(toJsonSchema).toHaveBeenCalledWith(input, tools[0]);
  });

  it('throws OptionsError naming the tool when a schema cannot be converted', () => {
    const cases: [Tool, string][] = [
      [
        { name: 'tag', input: v.object({ q: v.string() }), fn },
        'toolDeclarations: tools[0] ("tag"): its "valibot" schema offers no JSON Schema (Standard JSON Schema): give toolDeclarations a toJsonSchema option',
      ],
      [
        { name: 'big', input: z.object({ n: z.bigint() }), fn },
        'toolDeclarations: tools[0] ("big"): its input schema cannot be written as JSON Schema (draft-2020-12): Error: BigInt cannot be represented in JSON Schema',
      ],
      [
        { name: 'bigmini', input: zm.object({ n: zm.bigint() }), fn },
        'toolDeclarations: tools[0] ("bigmini"): its input schema cannot be written as JSON Schema (draft-2020-12): Error: BigInt cannot be represented in JSON Schema',
      ],
      [
        { name: 'word', input: z.string(), fn },
        'toolDeclarations: tools[0] ("word"): input must describe an object (arguments are a JSON object), its JSON Schema\'s type is "string"',
      ],
      [
        { name: 'fake', input: { parse: fn } as never, fn },
        'toolDeclarations: tools[0] ("fake"): input must be a Standard Schema v1 value (zod 4, valibot, arktype…): it has no "~standard" object',
      ],
      [
        { name: 'halfway', input: fake(fn, { jsonSchema: {} }), fn },
        'toolDeclarations: tools[0] ("halfway"): its "fake" schema offers no JSON Schema (Standard JSON Schema): give toolDeclarations a toJsonSchema option',
      ],
      [
        { name: 'lookalike', input: Object.assign(fake(fn), { _zod: { version: { major: 4 } } }), fn },
        'toolDeclarations: tools[0] ("lookalike"): its "fake" schema offers no JSON Schema (Standard JSON Schema): give toolDeclarations a toJsonSchema option',
      ],
      [
        { name: 'oddzod', input: Object.assign(fake(fn, { vendor: 'zod' }), { _zod: {} }), fn },
        'toolDeclarations: tools[0] ("oddzod"): its "zod" schema offers no JSON Schema (Standard JSON Schema): give toolDeclarations a toJsonSchema option',
      ],
      [
        { name: 'zod3', input: fake(fn, { vendor: 'zod' }), fn },
        'toolDeclarations: tools[0] ("zod3"): its "zod" schema offers no JSON Schema (Standard JSON Schema): zod 3 schemas have none: use zod 4',
      ],
    ];
    for (const [tool, message] of cases) {
      expect(() => toolDeclarations([tool])).toThrow(new OptionsError(message));
      expect(() => toolDeclarations([tool])).toThrow(OptionsError);
    }
  });

  it('refuses a converter whose schema is not JSON', () => {
    const toJsonSchema = () => ({ type: 'object', default: 10n });
    expect(() => toolDeclarations([{ name: 'n', input: v.object({}), fn }], { toJsonSchema })).toThrow(
      /tools\[0\] \("n"\): its input schema cannot be written as JSON Schema \(draft-2020-12\): TypeError: Do not know how to serialize a BigInt/,
    );
    const list = () => [{ type: 'object' }] as never;
    expect(() => toolDeclarations([{ name: 'n', input: v.object({}), fn }], { toJsonSchema: list })).toThrow(
      'toolDeclarations: tools[0] ("n"): its JSON Schema must be an object, got an array',
    );
    const lone = () => ({ type: 'object', description: 'bad \ud800' });
    expect(() => toolDeclarations([{ name: 'n', input: v.object({}), fn }], { toJsonSchema: lone })).toThrow(
      'toolDeclarations: tools[0] ("n"): its JSON Schema is not JSON: schema.description is a string with a lone surrogate',
    );
  });

  it('refuses two tools of one name, and a tool without a name', () => {
    expect(() =>
      toolDeclarations([
        { name: 'a', fn },
        { name: 'a', fn },
      ]),
    ).toThrow(new OptionsError('toolDeclarations: two tools are named "a"'));
    expect(() => toolDeclarations([{ name: 42, fn } as never])).toThrow(
      new OptionsError('toolDeclarations: tools[0] (42): name must be a non-empty string'),
    );
    expect(() => toolDeclarations([{ name: '', fn }])).toThrow(
      new OptionsError('toolDeclarations: tools[0] (""): name must be a non-empty string'),
    );
  });

  it('returns plain JSON a model API can take as it is', () => {
    const declarations = toolDeclarations([sendEmail, { name: 'clock', fn }]);
    expect(JSON.parse(JSON.stringify(declarations))).toEqual(declarations);
  });
});
