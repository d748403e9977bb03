/**
 * Tools' argument schemas (issue 12): validating a call's arguments with any Standard Schema v1
 * value (zod 4, valibot, hand-made ones), failing closed on every broken schema, and typing tools
 * from their schemas. The arguments are attacker data: prototype keys, deep and huge values; the
 * schemas may be broken: throwing, rejecting, answering nonsense, hanging.
 */
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import * as zm from 'zod/mini';
import { hasLoneSurrogate } from '../machines/strings.js';
import type { JsonObject } from '../machines/types.js';
import { OptionsError } from '../src/errors.js';
import { checkToolSchema, defineTool, MAX_ARGS_ERROR_LENGTH, validateArgs } from '../src/tool-schema.js';
import { hostileValue } from './hostile/values.js';

const fn = () => 'ok';

/** A hand-made Standard Schema whose validate is `validate`. */
function fake(validate: (value: unknown) => unknown, extra: Record<string, unknown> = {}) {
  return { '~standard': { version: 1, vendor: 'fake', validate, ...extra } } as never;
}

async function error(input: unknown, args: JsonObject = {}): Promise<string> {
  const check = await validateArgs({ input: input as never }, args);
  if (check.ok) throw new Error(`expected an error, got ${JSON.stringify(check.value)}`);
  return check.error;
}

describe('validateArgs', () => {
  it('returns the arguments as they are when the tool has no schema', async () => {
    const args = { anything: [1, { deep: true }] };
    const check = await validateArgs({}, args);
    expect(check).toEqual({ ok: true, value: args });
    expect(check.ok && check.value).toBe(args);
  });

  it("returns the schema's output (transforms, defaults), leaving the model's arguments as they were", async () => {
    const input = z.object({ q: z.string().trim(), limit: z.number().int().default(5) });
    const args = { q: '  refunds  ' };
    expect(await validateArgs({ input }, args)).toEqual({ ok: true, value: { q: 'refunds', limit: 5 } });
    expect(args).toEqual({ q: '  refunds  ' });
  });

  it('names every issue by its path, as items[2].qty', async () => {
    const input = z.object({ to: z.email(), items: z.array(z.object({ qty: z.number().positive() })) });
    expect(await error(input, { to: 'nobody', items: [{ qty: 1 }, { qty: 2 }, { qty: -1 }] })).toBe(
      'invalid arguments: to: Invalid email address; items[2].qty: Too small: expected number to be >0',
    );
  });

  it('quotes keys that are not identifiers, and gives a root issue without a path', async () => {
    const input = z.strictObject({ 'ship to': z.object({ 'zip-code': z.string() }) });
    expect(await error(input, { 'ship to': { 'zip-code': 1 } })).toBe(
      'invalid arguments: ["ship to"]["zip-code"]: Invalid input: expected string, received number',
    );
    expect(await error(input, { 'ship to': { 'zip-code': '1' }, extra: 1 })).toBe(
      'invalid arguments: Unrecognized key: "extra"',
    );
  });

  it('reports refinements with their own path and message', async () => {
    const input = z
      .object({ from: z.string(), to: z.string() })
      .refine((a) => a.from !== a.to, { message: 'from and to must differ', path: ['to'] });
    expect(await error(input, { from: 'a', to: 'a' })).toBe('invalid arguments: to: from and to must differ');
    expect(await validateArgs({ input }, { from: 'a', to: 'b' })).toEqual({ ok: true, value: { from: 'a', to: 'b' } });
  });

  it('awaits async refinements', async () => {
    const taken = new Set(['alice']);
    const input = z.object({
      user: z.string().refine(async (name) => !taken.has(name), { message: 'is taken' }),
    });
    expect(await error(input, { user: 'alice' })).toBe('invalid arguments: user: is taken');
    expect(await validateArgs({ input }, { user: 'bob' })).toEqual({ ok: true, value: { user: 'bob' } });
  });

  it('refuses an output that is not JSON (a transform into a Date) or not an object', async () => {
    const toDate = z.object({ when: z.string().transform((s) => new Date(s)) });
    expect(await error(toDate, { when: '2026-01-01' })).toBe(
      "argument schema's output is not JSON: output.when is an instance of Date, not a plain object",
    );
    const toBig = z.object({ n: z.number().transform((n) => BigInt(n)) });
    expect(await error(toBig, { n: 1 })).toBe("argument schema's output is not JSON: output.n is a bigint");
    expect(
      await error(
        z.any().transform(() => [1, 2]),
        {},
      ),
    ).toBe("argument schema's output must be an object, got an array");
  });

  it('lists ten issues, then says how many more', async () => {
    const input = z.object({ ids: z.array(z.number()) });
    const message = await error(input, { ids: Array.from({ length: 25 }, (_, i) => `id-${i}`) });
    expect(message.match(/ids\[\d+\]: Invalid input/g)).toHaveLength(10);
    expect(message).toContain('ids[9]: Invalid input: expected number, received string; and 15 more');
    expect(message).not.toContain('ids[10]');
  });

  it('reads valibot issues, whose paths are segments with a key', async () => {
    const input = v.object({ items: v.array(v.object({ qty: v.number() })) });
    expect(await error(input, { items: [{ qty: 1 }, { qty: 'a' }] })).toBe(
      'invalid arguments: items[1].qty: Invalid type: Expected number but received "a"',
    );
  });

  it('keeps the error bounded when the model sends huge values the messages repeat', async () => {
    const input = v.object({ to: v.array(v.pipe(v.string(), v.email())) });
    const huge = 'x'.repeat(200_000);
    const message = await error(input, { to: Array.from({ length: 50 }, () => huge) });
    expect(message.length).toBeLessThanOrEqual(MAX_ARGS_ERROR_LENGTH + 40);
    expect(message).toMatch(/^invalid arguments: to\[0\]: Invalid email: Received "x+…; to\[1\]/);
    expect(message).toContain('and 40 more');
  });

  it('cuts the whole error at MAX_ARGS_ERROR_LENGTH, saying how much was left out', async () => {
    const key = 'k-'.repeat(40);
    const issues = Array.from({ length: 12 }, () => ({ message: 'm'.repeat(500), path: Array(8).fill(key) }));
    const message = await error(fake(() => ({ issues })));
    expect(message.length).toBeLessThan(MAX_ARGS_ERROR_LENGTH + 40);
    expect(message).toMatch(/… \(\d+ more characters\)$/);
    expect(message.startsWith(`invalid arguments: [${JSON.stringify(`${key.slice(0, 60)}…`)}]`)).toBe(true);
  });

  it('cuts the error only past MAX_ARGS_ERROR_LENGTH, and says by how much', async () => {
    // Six issues of 8-segment paths (60-character keys): 6 × 689 + 5 × 2 + 19 = 4,163 characters.
    const issue = (length: number) => ({ message: 'm'.repeat(length), path: Array(8).fill('k'.repeat(60)) });
    const exactly = [...Array.from({ length: 5 }, () => issue(200)), issue(37)];
    const full = await error(fake(() => ({ issues: exactly })));
    expect(full.length).toBe(MAX_ARGS_ERROR_LENGTH);
    expect(full.endsWith('m')).toBe(true);
    const over = await error(fake(() => ({ issues: [...exactly.slice(0, 5), issue(38)] })));
    expect(over.endsWith('… (1 more characters)')).toBe(true);
  });

  it('cuts a message past 200 characters, and keys of identifiers past 60', async () => {
    const at = (message: string, key: string) => error(fake(() => ({ issues: [{ message, path: [key, key] }] })));
    expect(await at('m'.repeat(200), 'k'.repeat(60))).toBe(
      `invalid arguments: ${'k'.repeat(60)}.${'k'.repeat(60)}: ${'m'.repeat(200)}`,
    );
    const long = `"${'k'.repeat(60)}…"`;
    expect(await at('m'.repeat(201), 'k'.repeat(61))).toBe(
      `invalid arguments: [${long}][${long}]: ${'m'.repeat(200)}…`,
    );
  });

  it('shows a path of eight segments whole, and elides a longer one', async () => {
    const at = (path: unknown[]) => error(fake(() => ({ issues: [{ message: 'm', path }] })));
    expect(await at(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'])).toBe('invalid arguments: a.b.c.d.e.f.g.h: m');
    expect(await at(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'])).toBe('invalid arguments: a.b.c.d.e….g.h.i: m');
    expect(await at([null, 0, { key: 'k' }])).toBe('invalid arguments: [?][0].k: m');
  });

  it('says "and N more" only past ten issues', async () => {
    const issues = (count: number) => Array.from({ length: count }, (_, i) => ({ message: `m${i}` }));
    expect(await error(fake(() => ({ issues: issues(10) })))).toBe(
      'invalid arguments: m0; m1; m2; m3; m4; m5; m6; m7; m8; m9',
    );
    expect(await error(fake(() => ({ issues: issues(11) })))).toBe(
      'invalid arguments: m0; m1; m2; m3; m4; m5; m6; m7; m8; m9; and 1 more',
    );
  });

  it('refuses arguments that are not JSON (a caller that did not copy them first)', async () => {
    expect(await error(z.object({}), { when: new Date(0) } as never)).toBe(
      'invalid arguments: args.when is an instance of Date, not a plain object',
    );
  });

  it('takes any falsy issues as success, as the Standard Schema says', async () => {
    for (const issues of [undefined, null, 0, '']) {
      expect(await validateArgs({ input: fake(() => ({ issues, value: { ok: 1 } })) }, {})).toEqual({
        ok: true,
        value: { ok: 1 },
      });
    }
  });

  it('elides the middle of a deep path', async () => {
    type Tree = { child?: Tree; leaf?: number };
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ child: tree.optional(), leaf: z.number().optional() }));
    let args: JsonObject = { leaf: 'bad' };
    for (let i = 0; i < 300; i++) args = { child: args };
    const message = await error(tree, args);
    expect(message).toBe(
      'invalid arguments: child.child.child.child.child….child.child.leaf: Invalid input: expected number, received string',
    );
  });

  it('passes deep valid arguments through', async () => {
    const list: z.ZodType<unknown[]> = z.lazy(() => z.array(list));
    const input = z.object({ list });
    let deep: JsonObject[] | never[] = [];
    for (let i = 0; i < 400; i++) deep = [deep as never];
    expect(await validateArgs({ input }, { list: deep })).toEqual({ ok: true, value: { list: deep } });
  });

  describe('hostile arguments', () => {
    const proto = () => JSON.parse('{"q":"x","__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}}}');

    it('a __proto__ key never becomes a prototype, nor pollutes Object.prototype', async () => {
      for (const input of [z.looseObject({ q: z.string() }), z.record(z.string(), z.unknown())]) {
        const check = await validateArgs({ input }, proto());
        expect(check.ok).toBe(true);
        const value = (check as { value: Record<string, unknown> }).value;
        expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
        expect(value.admin).toBeUndefined();
        expect(({} as Record<string, unknown>).admin).toBeUndefined();
      }
      // zod's strict object names the key rather than take it.
      expect(await error(z.strictObject({ q: z.string() }), proto())).toBe(
        'invalid arguments: Unrecognized keys: "__proto__", "constructor"',
      );
    });

    it('gives the schema a copy that keeps __proto__ as a plain key', async () => {
      const seen: unknown[] = [];
      const input = fake((value) => {
        seen.push(value);
        return { value: { ok: true } };
      });
      const args = proto();
      await validateArgs({ input }, args);
      expect(seen[0]).not.toBe(args);
      expect(Object.getPrototypeOf(seen[0])).toBe(Object.prototype);
      expect(Object.hasOwn(seen[0] as object, '__proto__')).toBe(true);
    });

    it('fails closed when a schema turns the key into a prototype', async () => {
      const input = z
        .looseObject({})
        .transform((value) => Object.assign({}, JSON.parse('{"__proto__":{"admin":true}}'), value));
      expect(await error(input, { q: 'x' })).toBe(
        "argument schema's output is not JSON: output is an instance of Object, not a plain object",
      );
    });

    it('a schema that changes its input does not change the arguments the history keeps', async () => {
      const input = z.preprocess(
        (value) => {
          (value as Record<string, unknown>).q = 'rewritten';
          return value;
        },
        z.object({ q: z.string() }),
      );
      const args = { q: 'original' };
      expect(await validateArgs({ input }, args)).toEqual({ ok: true, value: { q: 'rewritten' } });
      expect(args).toEqual({ q: 'original' });
    });
  });

  describe('broken schemas fail closed', () => {
    it('a validate that throws or rejects', async () => {
      const boom = () => {
        throw new TypeError('boom');
      };
      expect(await error(fake(boom))).toBe('argument schema failed: TypeError: boom');
      expect(await error(fake(async () => Promise.reject(new RangeError('late'))))).toBe(
        'argument schema failed: RangeError: late',
      );
      expect(
        await error(
          fake(() => {
            throw 'a string';
          }),
        ),
      ).toBe('argument schema failed: Error: a string');
      const thrown = async (value: unknown) =>
        error(
          fake(() => {
            throw value;
          }),
        );
      expect(await thrown(null)).toBe('argument schema failed: Error: null');
      expect(await thrown(Symbol('s'))).toBe('argument schema failed: Error: Symbol(s)');
      expect(await thrown({ message: 'no name' })).toBe('argument schema failed: Error: no name');
      expect(await thrown({ name: 'Odd', message: {} })).toBe('argument schema failed: Odd: <an object>');
      const unreadable = new Proxy({}, { get: boom, has: boom, getPrototypeOf: boom });
      expect(
        await error(
          fake(() => {
            throw unreadable;
          }),
        ),
      ).toBe('argument schema failed: Error: <unreadable thrown value>');
    });

    it('a result that is not one', async () => {
      expect(await error(fake(() => null))).toBe('argument schema failed: validate returned null, not a result');
      expect(await error(fake(() => 'valid'))).toBe('argument schema failed: validate returned "valid", not a result');
      expect(await error(fake(() => ({ issues: 'bad' })))).toBe(
        'argument schema failed: its issues are "bad", not a list',
      );
      expect(await error(fake(() => ({ issues: [] })))).toBe('invalid arguments (the schema gave no reason)');
      const getter = {
        get issues() {
          throw new Error('trap');
        },
      };
      expect(await error(fake(() => getter))).toBe(
        'argument schema failed: its result could not be read (Error: trap)',
      );
      expect(await error(fake(() => ({})))).toBe("argument schema's output is not JSON: output is undefined");
      const trapList = new Proxy([], {
        get() {
          throw new Error('trap');
        },
      });
      expect(await error(fake(() => ({ issues: trapList })))).toBe(
        'argument schema failed: its issues could not be read (Error: trap)',
      );
      const { proxy, revoke } = Proxy.revocable([], {});
      revoke();
      expect(await error(fake(() => ({ issues: proxy })))).toMatch(
        /^argument schema failed: its issues could not be read \(TypeError: .*revoked/,
      );
    });

    it('issues that are odd: no message, odd paths, unreadable', async () => {
      const issues = [
        { message: 42, path: ['a'] },
        { message: 'symbol key', path: [Symbol('s'), 0] },
        { message: 'path is not a list', path: 'a.b' },
        { message: 'segment without key', path: [{}, { key: 'b' }] },
        {
          get message() {
            throw new Error('trap');
          },
        },
      ];
      expect(await error(fake(() => ({ issues })))).toBe(
        'invalid arguments: a: (no message: 42); [Symbol(s)][0]: symbol key; path is not a list; ' +
          '[?].b: segment without key; (an issue that could not be read: Error: trap)',
      );
    });

    it('a message with a lone surrogate is repaired', async () => {
      const message = await error(fake(() => ({ issues: [{ message: 'bad \ud800 text' }] })));
      expect(message).toBe('invalid arguments: bad \ufffd text');
    });

    it('an input that is not a Standard Schema v1 value', async () => {
      const why = (text: string) => `argument schema is not a Standard Schema v1 value: ${text}`;
      expect(await error(42)).toBe(why('got 42'));
      expect(await error({})).toBe(why('it has no "~standard" object'));
      expect(await error({ '~standard': null })).toBe(why('it has no "~standard" object'));
      expect(await error({ '~standard': { version: 2, validate: fn } })).toBe(
        why('its "~standard".version is 2, not 1'),
      );
      expect(await error({ '~standard': { version: 1, validate: 'yes' } })).toBe(
        why('its "~standard".validate is not a function'),
      );
      const trap = Object.defineProperty({}, '~standard', {
        get() {
          throw new Error('trap');
        },
      });
      expect(await error(trap)).toBe(why('it could not be read (Error: trap)'));
      const tool = Object.defineProperty({}, 'input', {
        get() {
          throw new Error('trap');
        },
      });
      expect(await validateArgs(tool, {})).toEqual({
        ok: false,
        error: 'argument schema could not be read: Error: trap',
      });
    });

    it('a validate that never settles stops at the signal', async () => {
      const controller = new AbortController();
      const pending = validateArgs({ input: fake(() => new Promise(() => {})) }, {}, { signal: controller.signal });
      controller.abort();
      expect(await pending).toEqual({ ok: false, error: 'argument validation was aborted' });
      const validate = vi.fn(() => ({ value: {} }));
      expect(await validateArgs({ input: fake(validate) }, {}, { signal: AbortSignal.abort() })).toEqual({
        ok: false,
        error: 'argument validation was aborted',
      });
      expect(validate).not.toHaveBeenCalled();
    });

    it('leaves no listener on a signal that outlives the validation', async () => {
      const { signal } = new AbortController();
      expect(await validateArgs({ input: fake(async () => ({ value: { a: 1 } })) }, {}, { signal })).toEqual({
        ok: true,
        value: { a: 1 },
      });
      const rejected = await validateArgs({ input: fake(async () => Promise.reject(new Error('no'))) }, {}, { signal });
      expect(rejected).toEqual({ ok: false, error: 'argument schema failed: Error: no' });
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    });

    it('a hand-made Standard Schema is called as a method of its "~standard"', async () => {
      const props = {
        version: 1,
        vendor: 'hand',
        validate(this: unknown, value: unknown) {
          return this === props ? { value: { got: value as JsonObject } } : { issues: [{ message: 'unbound' }] };
        },
      };
      expect(await validateArgs({ input: { '~standard': props } as never }, { a: 1 })).toEqual({
        ok: true,
        value: { got: { a: 1 } },
      });
    });

    it('never throws, and its error is well-formed and bounded, whatever the schema answers or throws', async () => {
      await fc.assert(
        fc.asyncProperty(
          hostileValue,
          fc.constantFrom('return', 'throw', 'issues', 'issue', 'path'),
          async (make, how) => {
            const validate = () => {
              const value = make();
              if (how === 'throw') throw value;
              if (how === 'issues') return { issues: value };
              if (how === 'issue') return { issues: [value, { message: value }] };
              if (how === 'path')
                return {
                  issues: [
                    { message: 'm', path: value },
                    { message: 'm', path: [value] },
                  ],
                };
              return value;
            };
            const check = await validateArgs({ input: fake(validate) }, { a: 1 });
            if (!check.ok) {
              expect(typeof check.error).toBe('string');
              expect(hasLoneSurrogate(check.error)).toBe(false);
              expect(check.error.length).toBeLessThanOrEqual(MAX_ARGS_ERROR_LENGTH + 40);
            }
          },
        ),
        { seed: 20_261_203, numRuns: 300 },
      );
    });
  });
});

describe('checkToolSchema', () => {
  it('accepts no schema and Standard Schema v1 values of any library', () => {
    expect(checkToolSchema({})).toBeNull();
    expect(checkToolSchema({ input: z.object({ a: z.string() }) })).toBeNull();
    expect(checkToolSchema({ input: zm.object({ a: zm.string() }) })).toBeNull();
    expect(checkToolSchema({ input: v.object({ a: v.string() }) })).toBeNull();
    expect(checkToolSchema({ input: fake(fn) })).toBeNull();
    // arktype's types are functions carrying "~standard".
    const callable = Object.assign(() => true, { '~standard': { version: 1, vendor: 'fn', validate: fn } });
    expect(checkToolSchema({ input: callable as never })).toBeNull();
  });

  it('says what is wrong with anything else', () => {
    const must = 'input must be a Standard Schema v1 value (zod 4, valibot, arktype…): ';
    expect(checkToolSchema({ input: null as never })).toBe(`${must}got null`);
    expect(checkToolSchema({ input: { parse: fn } as never })).toBe(`${must}it has no "~standard" object`);
    expect(checkToolSchema({ input: { '~standard': { version: '1', validate: fn } } as never })).toBe(
      `${must}its "~standard".version is "1", not 1`,
    );
    expect(checkToolSchema({ input: { '~standard': { version: 1 } } as never })).toBe(
      `${must}its "~standard".validate is not a function`,
    );
    const tool = Object.defineProperty({}, 'input', {
      get() {
        throw new Error('trap');
      },
    });
    expect(checkToolSchema(tool)).toBe('input could not be read (Error: trap)');
  });
});

describe('defineTool', () => {
  it('returns the tool itself', () => {
    const tool = { name: 'search', input: z.object({ q: z.string() }), fn: ({ q }: { q: string }) => q };
    expect(defineTool(tool)).toBe(tool);
    const plain = { name: 'clock', fn };
    expect(defineTool(plain)).toBe(plain);
  });

  it('checks its schema up front', () => {
    expect(() => defineTool({ name: 'bad', input: { parse: fn } as never, fn })).toThrow(
      new OptionsError(
        'defineTool: tool "bad": input must be a Standard Schema v1 value (zod 4, valibot, arktype…): it has no "~standard" object',
      ),
    );
  });
});
