/**
 * The one way an options object is checked. Each options object has one definition: its schema, a
 * zod shape whose keys the compiler holds to the object's TypeScript interface (`OptionShape`: a
 * key in one and not the other does not compile), and from which the known keys are read. A check
 * refuses an unknown key first (option-keys.ts: `{ sideEfect: true }` must not drop the approval
 * gate), then the first bad value, in one style: `<call>: <option> must be <what>, got <value>`.
 */
import { z } from 'zod';
import { hasLoneSurrogate } from '../machines/strings.js';
import { MAX_TIMER_MS } from './clock.js';
import { type ErrorDetails, OptionsError } from './errors.js';
import { checkKeys, showValue } from './option-keys.js';

/**
 * A schema for each key of an options interface `T`, and for nothing else: written
 * `const shape = { … } satisfies OptionShape<MyOptions>`, a key missing from either side is a
 * compile error.
 */
export type OptionShape<T> = { [K in keyof Required<T>]: z.ZodType };

/** A schema whose every failure reads as `must be <what>`. */
export function must<T extends z.ZodType>(what: string, make: (e: { error: string }) => T): T {
  return make({ error: what });
}

/** Any function. */
export const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { error: 'a function' });

/** A whole number ≥ 0. */
export const count = must('a whole number ≥ 0', (e) => z.number(e).int(e).min(0, e).max(Number.MAX_SAFE_INTEGER, e));

/** A duration a timer can take: > 0 and ≤ 2^31−1 ms. */
export const timerMs = (extra = '') =>
  must(`a number of milliseconds > 0 and ≤ ${MAX_TIMER_MS}${extra}`, (e) => z.number(e).gt(0, e).max(MAX_TIMER_MS, e));

/** A string without lone surrogates (which a store or JSON text could not keep as given). */
export const text = (what: string) =>
  z.custom<string>((v) => typeof v === 'string' && !hasLoneSurrogate(v), {
    error: `${what} (without lone surrogates)`,
  });

/**
 * An option whose value is checked apart, by the code that uses it, for an error that names more
 * than a schema can (a store's missing methods, an agent definition's problem); its key is known.
 */
export const checkedApart = z.unknown().optional();

/** A clock: an object with `now()` and `sleep()`. */
export const clockSchema = z.looseObject({ now: fn, sleep: fn }, { error: 'an object with now() and sleep()' });

/** The value at `path` in `value`, read without throwing. */
export function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  try {
    for (const key of path) at = (at as Record<PropertyKey, unknown>)?.[key];
    return at;
  } catch {
    return undefined;
  }
}

/** A path as an error names it: `tools[2].timeoutMs`. */
export function pathText(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i === 0 ? '' : '.'}${String(k)}`)).join('');
}

/** Each shape's object schema and keys, made once: zod compiles a schema on its first parse. */
const compiled = new WeakMap<z.core.$ZodLooseShape, { schema: z.ZodObject; keys: readonly string[] }>();
function compile(shape: z.core.$ZodLooseShape) {
  let found = compiled.get(shape);
  if (!found) {
    found = { schema: z.looseObject(shape), keys: Object.keys(shape) };
    compiled.set(shape, found);
  }
  return found;
}

/** The keys an options object of `shape` may have. */
export function keysOf(shape: z.core.$ZodLooseShape): readonly string[] {
  return compile(shape).keys;
}

/**
 * Checks `value` against `shape` — unknown keys first, then each value — and returns it as it was:
 * zod's output is a plain copy, which would unbind methods of a class-based clock or tool. `at`
 * names where an options object nested in another sits (`compaction.when`), for the errors.
 * @throws OptionsError naming the call, the option and the bad value.
 */
export function checkOptions<T>(
  call: string,
  value: T,
  shape: z.core.$ZodLooseShape,
  details: ErrorDetails = {},
  at = '',
): T {
  const { schema, keys } = compile(shape);
  checkKeys(at ? `${call}: ${at}` : call, value, keys, 'option', details);
  const result = schema.safeParse(value);
  if (result.success) return value;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const where = [at, pathText(issue.path)].filter(Boolean).join('.');
  const got = showValue(valueAt(value, issue.path));
  throw new OptionsError(`${call}: ${where || 'options'} must be ${issue.message}, got ${got}`, details);
}
