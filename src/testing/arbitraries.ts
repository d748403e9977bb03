/**
 * fast-check arbitraries for testing an agent (`tollgate/testing/fast-check`): what a policy may
 * answer (calls of your tools, several per step, answers, malformed actions, hostile values), the
 * usage it reports (missing and hostile too), what a tool may do (results, throws, hangs) and what
 * an approver may decide. Pass them to your own `fc.assert`; they need fast-check 4.
 */
import fc from 'fast-check';
import type { Json, JsonObject } from '../../machines/types.js';
import type { Action, CallDecisionInput, Tool } from '../types.js';

/**
 * Makes one hostile value, fresh each time: Proxies and cycles cannot be shared safely, and
 * fast-check itself reads what an arbitrary generates, which a throwing Proxy would not survive.
 */
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

/** An object whose own keys include prototype-ish ones (`__proto__`, `then`, `toJSON`), as JSON.parse makes them. */
export const hostileObject: fc.Arbitrary<Make> = fc
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

/**
 * Any hostile value: prototype keys, BigInt, symbols, functions, NaN, cycles, lone surrogates,
 * throwing getters and Proxies, revoked Proxies, thenables, 3,000 levels of nesting, sparse
 * arrays — and plain JSON among them, so that some runs go on.
 */
export const hostileValue: fc.Arbitrary<Make> = fc.oneof(
  { weight: 3, arbitrary: plain },
  { weight: 2, arbitrary: hostileObject },
  { weight: 3, arbitrary: exotic },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: sparse },
);

/** A hostile value, or one inside an object (where arguments must be), or an object with prototype keys. */
export const hostileArgs: fc.Arbitrary<Make> = fc.oneof(
  hostileValue,
  hostileValue.map((make) => () => ({ v: make() })),
  hostileObject,
);

/** What `action` generates: your tools, and how their arguments are made. */
export interface ActionOptions {
  /** The tools a call may name (a few calls name none of them: an unknown tool). */
  tools: readonly Pick<Tool, 'name'>[];
  /** Arguments by tool name; a tool without one gets small JSON objects (which its schema may refuse). */
  args?: Record<string, fc.Arbitrary<JsonObject>>;
  /** The most calls in one step. @default 3 */
  maxCalls?: number;
  /** The answers a `{ final }` holds. @default small JSON values */
  final?: fc.Arbitrary<Json>;
  /** Weight of answers (`{ final }`, which end the run) among the other shapes. @default 2 (of 10) */
  answers?: number;
  /** Weight of malformed and hostile actions (0: none). @default 1 (of 10) */
  hostile?: number;
}

/** Small JSON objects: what a tool without an `args` arbitrary is called with. */
const someArgs: fc.Arbitrary<JsonObject> = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 3,
}) as fc.Arbitrary<JsonObject>;

/** A model's tool-call id, or none (the runtime then pairs calls by their keys). */
const callId = fc.option(fc.stringMatching(/^call_[a-z0-9]{4,12}$/), { nil: undefined });

/**
 * What a policy may answer: one call of a tool, several calls in one step (distinct ids), an
 * answer, and — with weight `hostile` — malformed and hostile actions (unknown tools, arguments
 * that are not objects, both `tool` and `final`, hostile values). Each comes with a usage report
 * (`usageReport`). The runtime must handle every one without crashing and without opening the gate.
 *
 * @example
 * fc.assert(fc.asyncProperty(fc.array(action({ tools })), async (actions) => { ... scriptedPolicy(actions) ... }));
 */
export function action(options: ActionOptions): fc.Arbitrary<Action> {
  const names = options.tools.map((t) => t.name);
  if (names.length === 0) throw new TypeError('action: give at least one tool');
  const argsOf = (name: string) => options.args?.[name] ?? someArgs;
  const call = fc
    .oneof({ weight: 9, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.constant('no_such_tool') })
    .chain((tool) => fc.record({ tool: fc.constant(tool), args: argsOf(tool), id: callId }))
    .map(({ tool, args, id }) => (id === undefined ? { tool, args } : { tool, args, id }));
  const several = fc
    .uniqueArray(call, {
      minLength: 2,
      maxLength: Math.max(2, options.maxCalls ?? 3),
      selector: (c) => ('id' in c ? c.id : Symbol()),
    })
    .map((calls) => ({ calls }));
  const final = (options.final ?? fc.jsonValue({ maxDepth: 2 })).map((value) => ({ final: value as Json }));
  // fast-check reads what it generates (`cloneMethod in value`): a hostile value is made inside
  // an action, never as the action itself, which is a plain object or a primitive.
  const hostile = fc.oneof(
    hostileArgs.map((make) => ({ tool: names[0] as string, args: make() as JsonObject })),
    hostileValue.map((make) => ({ final: make() as Json })),
    hostileValue.map((make) => ({ tool: names[0] as string, args: {}, usage: make() }) as Action),
    fc.constantFrom<Action>(
      { tool: names[0] as string, final: 'both' } as unknown as Action,
      {} as Action,
      { calls: [] } as unknown as Action,
      null as unknown as Action,
      'do the refund' as unknown as Action,
      [] as unknown as Action,
    ),
  );
  // Each well-formed action carries a usage report; a hostile one is left as it was made.
  const reported = (shape: fc.Arbitrary<Action>) =>
    fc.tuple(shape, usageReport()).map(([a, usage]) => (usage === undefined ? a : ({ ...a, usage } as Action)));
  const weight = options.hostile ?? 1;
  const shapes: fc.WeightedArbitrary<Action>[] = [
    { weight: 5, arbitrary: reported(call) },
    { weight: (options.maxCalls ?? 3) > 1 ? 2 : 0, arbitrary: reported(several) },
    { weight: options.answers ?? 2, arbitrary: reported(final) },
    { weight, arbitrary: hostile },
  ];
  return fc.oneof(...shapes.filter((s) => s.weight > 0));
}

/**
 * The usage a policy reports: real token counts (with a model name or a cost, sometimes cached
 * tokens), none at all (`undefined`), or hostile counts (`-1`, `NaN`, `'lots'`, `1e300`, a hostile
 * value inside). A budget must hold whatever is reported: a missing or unreadable usage is charged its
 * estimate, never nothing.
 */
export function usageReport(): fc.Arbitrary<unknown> {
  const count = fc.integer({ min: 0, max: 5_000 });
  const real = fc
    .record(
      {
        inputTokens: count,
        outputTokens: count,
        cachedInputTokens: count,
        model: fc.constantFrom('gpt-4.1', 'claude-sonnet-4', 'unpriced-model'),
        costUsd: fc.integer({ min: 0, max: 50_000 }).map((micro) => micro / 1e6),
      },
      { requiredKeys: ['inputTokens', 'outputTokens'] },
    )
    .map((u) => ({ ...u, cachedInputTokens: Math.min(u.cachedInputTokens ?? 0, u.inputTokens) }));
  const bad = fc.constantFrom<unknown>(-1, Number.NaN, 'lots', 1e300, Number.POSITIVE_INFINITY, 0.5, null);
  const hostile = fc.oneof(
    fc.record({ inputTokens: bad, outputTokens: fc.oneof(count, bad) }),
    hostileValue.map((make) => ({ inputTokens: make(), outputTokens: 1 })),
    fc.constantFrom<unknown>('lots', -1, null, []),
  );
  return fc.oneof(
    { weight: 6, arbitrary: real },
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: hostile },
  );
}

/** What an approver may decide on a call: approve, deny (with a note), edit, approve for good. */
export function decision(options: { edit?: fc.Arbitrary<JsonObject> } = {}): fc.Arbitrary<CallDecisionInput> {
  const note = fc.string({ maxLength: 40 });
  const choices: fc.Arbitrary<CallDecisionInput>[] = [
    note.map((n) => ({ approve: true, note: n })),
    note.map((n) => ({ approve: false, note: n })),
    fc.constant({ approve: true, always: true }),
  ];
  if (options.edit) choices.push(options.edit.map((args) => ({ approve: true, note: 'edited', args })));
  return fc.oneof(...choices);
}

/** What a tool does on one call: return a value, throw, hang, or return a hostile value. */
export type ToolOutcome =
  | { kind: 'result'; value: Json }
  | { kind: 'throw'; message: string }
  | { kind: 'hang' }
  | { kind: 'hostile'; make: Make };

/** Tool outcomes: mostly results, then throws, hangs (give the tool a `timeoutMs`) and hostile values. */
export function toolOutcome(options: { result?: fc.Arbitrary<Json> } = {}): fc.Arbitrary<ToolOutcome> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: (options.result ?? fc.jsonValue({ maxDepth: 2 })).map((value) => ({
        kind: 'result' as const,
        value: value as Json,
      })),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }).map((message) => ({ kind: 'throw' as const, message })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'hang' as const }) },
    { weight: 1, arbitrary: hostileValue.map((make) => ({ kind: 'hostile' as const, make })) },
  );
}

/**
 * Plays an outcome in a tool's `fn`: the value, a throw, a hang (which ends only when `signal`
 * aborts: a timeout, a cancel, a lost lease), or a hostile value.
 *
 * @example
 * const outcomes = [...]; // from fc.array(toolOutcome())
 * const tool = { name: 'lookup', timeoutMs: 50, fn: (_args, _key, ctx) => play(outcomes.shift() ?? { kind: 'result', value: 'ok' }, ctx.signal) };
 */
export function play(outcome: ToolOutcome, signal?: AbortSignal): unknown {
  switch (outcome.kind) {
    case 'result':
      return structuredClone(outcome.value);
    case 'throw':
      throw new Error(outcome.message);
    case 'hostile':
      return outcome.make();
    case 'hang':
      return new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
  }
}
