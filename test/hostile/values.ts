/**
 * The hostile steps of test/hostile: what a prompt-injected policy hands the runtime, for the
 * world of properties.test.ts (its tools pay, mail and lookup). The hostile values themselves are
 * tollgate/testing/fast-check's (src/testing/arbitraries.ts).
 */
import fc from 'fast-check';
import { hostileArgs, hostileObject, hostileValue, type Make } from '../../src/testing/arbitraries.js';

export { hostileValue, type Make };

const plain: fc.Arbitrary<Make> = fc.jsonValue({ maxDepth: 3 }).map((v) => () => structuredClone(v));

/** What a policy does on one call: an action of any shape, or a throw. */
export const hostileStep: fc.Arbitrary<{ kind: 'return' | 'throw'; make: Make }> = fc.oneof(
  // Well-formed calls of the side effects, with prototype tricks in their arguments: the runs
  // that reach the approval gate.
  fc
    .record({
      tool: fc.constantFrom('pay', 'mail'),
      args: fc.oneof(
        hostileObject,
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
