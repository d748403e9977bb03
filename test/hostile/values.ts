/**
 * Hostile values, as fast-check arbitraries: what a prompt-injected policy or a broken tool can
 * hand the runtime. Each is built fresh per use (Proxies and cycles cannot be shared safely).
 */
import fc from 'fast-check';

export type Make = () => unknown;

const thrower = (what: string) => () => {
  throw new Error(`hostile ${what}`);
};

function nested(depth: number, wrap: 'array' | 'object'): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = wrap === 'array' ? [value] : { k: value };
  return value;
}

/** Keys that mean something to JavaScript objects. */
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'then', 'toJSON'];

/** An object whose own keys include prototype-ish ones, as JSON.parse makes them. */
const protoObject: fc.Arbitrary<Make> = fc
  .record({
    key: fc.constantFrom(...PROTO_KEYS),
    inner: fc.jsonValue({ maxDepth: 2 }),
    flag: fc.boolean(),
  })
  .map(
    ({ key, inner, flag }) =>
      () =>
        JSON.parse(`{${JSON.stringify(key)}:{"dryRun":${flag}},"v":${JSON.stringify(inner) ?? 'null'}}`),
  );

const exotic: fc.Arbitrary<Make> = fc.constantFrom<Make>(
  () => 10n,
  () => Symbol('s'),
  () => () => 1,
  () => undefined,
  () => Number.NaN,
  () => Number.POSITIVE_INFINITY,
  () => -0,
  () => Number.MAX_VALUE,
  () => 5e-324,
  () => new Date(0),
  () => new Map([[1, 2]]),
  () => new Uint8Array(3),
  () => Object.create({ inherited: true }),
  () => Object.create(null),
  () => new Array(2 ** 32 - 1),
  () => new Array(5),
  () => 'lone \ud800 high',
  () => 'lone \udc00 low',
  () => ({ 'k\ud800': 1 }),
  () => ({ [Symbol('k')]: 1 }),
  () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    return cycle;
  },
  () => {
    const list: unknown[] = [1];
    list.push({ back: list });
    return list;
  },
  () => ({
    get boom() {
      throw new Error('hostile getter');
    },
  }),
  () => ({ toJSON: () => ({ forged: true }) }),
  () => ({
    toString: thrower('toString'),
    valueOf: thrower('valueOf'),
  }),
  () => {
    let reads = 0;
    return {
      get cents() {
        reads++;
        return reads === 1 ? 1 : 1_000_000;
      },
    };
  },
  () => new Proxy({}, { get: thrower('get'), has: thrower('has'), ownKeys: thrower('ownKeys') }),
  () => new Proxy({}, { getPrototypeOf: thrower('getPrototypeOf') }),
  () => new Proxy([1, 2], { get: (t, k) => (k === 'length' ? 1e9 : Reflect.get(t, k)) }),
  () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  },
  () => {
    // Rejected, and marked handled: only the runtime's await may see the rejection.
    const rejected = Promise.reject(new Error('hostile rejection'));
    rejected.catch(() => {});
    return rejected;
  },
  // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise is the point
  () => ({ then: (resolve: (v: unknown) => void) => resolve({ final: 'from a thenable' }) }),
);

const deep: fc.Arbitrary<Make> = fc
  .record({ depth: fc.integer({ min: 400, max: 3_000 }), wrap: fc.constantFrom('array' as const, 'object' as const) })
  .map(
    ({ depth, wrap }) =>
      () =>
        nested(depth, wrap),
  );

const sparse: fc.Arbitrary<Make> = fc
  .sparseArray(fc.jsonValue({ maxDepth: 1 }), { maxLength: 20 })
  .map((a) => () => a.slice());

const plain: fc.Arbitrary<Make> = fc.jsonValue({ maxDepth: 3 }).map((v) => () => structuredClone(v));

/** Any hostile value (plain JSON among them, so that some runs go on). */
export const hostileValue: fc.Arbitrary<Make> = fc.oneof(
  { weight: 3, arbitrary: plain },
  { weight: 2, arbitrary: protoObject },
  { weight: 3, arbitrary: exotic },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: sparse },
);

/** A hostile value in an object, where arguments must be. */
const hostileArgs: fc.Arbitrary<Make> = fc.oneof(
  hostileValue,
  hostileValue.map((make) => () => ({ v: make() })),
  protoObject,
);

/** What a policy does on one call: an action of any shape, or a throw. */
export const hostileStep: fc.Arbitrary<{ kind: 'return' | 'throw'; make: Make }> = fc.oneof(
  // Well-formed calls of the side effects, with prototype tricks in their arguments: the runs
  // that reach the approval gate.
  fc
    .record({
      tool: fc.constantFrom('pay', 'mail'),
      args: fc.oneof(
        protoObject,
        plain.map((m) => () => ({ v: m() })),
      ),
    })
    .map(({ tool, args }) => ({ kind: 'return' as const, make: () => ({ tool, args: args() }) })),
  fc
    .record({
      tool: fc.constantFrom('lookup', 'pay', 'mail', 'nope', '', 'pay\ud800'),
      args: hostileArgs,
    })
    .map(({ tool, args }) => ({ kind: 'return' as const, make: () => ({ tool, args: args() }) })),
  hostileValue.map((make) => ({ kind: 'return' as const, make: () => ({ final: make() }) })),
  hostileValue.map((make) => ({ kind: 'return' as const, make })),
  hostileValue.map((make) => ({ kind: 'throw' as const, make })),
  hostileValue.map((make) => ({ kind: 'return' as const, make: () => ({ tool: 'lookup', usage: make() }) })),
);
