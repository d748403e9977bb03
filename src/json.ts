/**
 * JSON safety: the one copy every value from outside goes through before it enters a run (a
 * policy's arguments and final answer, a tool's result). Whatever a policy or tool returns ends up
 * in the checkpoint, so it must be plain JSON that survives a round trip unchanged (invariants 5
 * and 6) — and a policy's output is attacker-controlled (prompt injection), so the copy is also
 * where hostile shapes stop. `toJson` never throws for bad data; it reports where it went wrong.
 *
 * What the copy guarantees, for any input:
 * - plain objects with `Object.prototype`, whose keys are own data keys: `__proto__`,
 *   `constructor` and `prototype` are kept as ordinary keys (never a prototype: a predicate
 *   reading `args.dryRun` cannot see a value the tool would not get);
 * - arrays without holes (a hole becomes `null`, as `JSON.stringify` writes it);
 * - nesting at most `MAX_JSON_DEPTH` deep and at most `MAX_JSON_VALUES` values, so the canonical
 *   encoder and `structuredClone` never overflow the stack or stall on `new Array(2 ** 32 - 1)`;
 * - finite numbers (`-0` becomes `0`), strings without lone surrogates (RFC 8785 cannot write
 *   them), no cycles, symbols, functions, BigInts or class instances;
 * - every getter, trap and `toJSON` is ignored or read exactly once: what was checked is what is kept.
 */
import { hasLoneSurrogate } from '../machines/strings.js';
import type { Json } from '../machines/types.js';

/** How deep a value may nest (objects and arrays); deeper is refused. */
export const MAX_JSON_DEPTH = 512;

/** How many values (scalars, arrays and objects) one value may hold; more is refused. */
export const MAX_JSON_VALUES = 1_000_000;

export type JsonCheck = { ok: true; value: Json } | { ok: false; reason: string };

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name ? `an instance of ${name}` : 'an object';
  }
  if (typeof value === 'number') return String(value);
  return typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`;
}

class NotJson extends Error {}

/** Path segments an error names before it elides the middle of a deep path. */
const MAX_PATH_SHOWN = 8;

/** A key as a path segment: `.name` when it reads as one, `["odd key"]` otherwise. */
function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** One copy of one value. The path is kept as a stack of keys and only joined for an error. */
class Copier {
  readonly #name: string;
  readonly #path: (string | number)[] = [];
  readonly #seen = new Set<object>();
  #values = 0;

  constructor(name: string) {
    this.#name = name;
  }

  /** The path to the value in hand, shortened in the middle when deep: `args.a[0][0]…[0]`. */
  where(): string {
    const path = this.#path;
    if (path.length <= MAX_PATH_SHOWN) return this.#name + path.map(segment).join('');
    const head = path
      .slice(0, MAX_PATH_SHOWN - 3)
      .map(segment)
      .join('');
    return `${this.#name}${head}…${path.slice(-3).map(segment).join('')}`;
  }

  #refuse(what: string): never {
    throw new NotJson(`${this.where()} ${what}`);
  }

  copy(value: unknown): Json {
    if (++this.#values > MAX_JSON_VALUES) this.#refuse(`holds more than ${MAX_JSON_VALUES} values`);
    switch (typeof value) {
      case 'string':
        if (hasLoneSurrogate(value)) this.#refuse('is a string with a lone surrogate');
        return value;
      case 'boolean':
        return value;
      case 'number':
        if (!Number.isFinite(value)) this.#refuse(`is ${value}`);
        // -0 would come back from a checkpoint as 0.
        return value === 0 ? 0 : value;
      case 'object':
        if (value === null) return null;
        return this.#container(value);
      default:
        return this.#refuse(`is ${describe(value)}`);
    }
  }

  #container(value: object): Json {
    if (this.#seen.has(value)) this.#refuse('is a cycle');
    if (this.#seen.size >= MAX_JSON_DEPTH) this.#refuse(`nests deeper than ${MAX_JSON_DEPTH} levels`);
    this.#seen.add(value);
    const out = Array.isArray(value) ? this.#array(value) : this.#object(value);
    this.#seen.delete(value);
    return out;
  }

  #array(value: unknown[]): Json[] {
    const length = value.length;
    if (length > MAX_JSON_VALUES) this.#refuse(`holds more than ${MAX_JSON_VALUES} values`);
    const out: Json[] = new Array(length);
    for (let i = 0; i < length; i++) {
      this.#path.push(i);
      // A hole reads as undefined: written as null, as JSON.stringify does.
      out[i] = i in value ? this.copy(value[i]) : null;
      this.#path.pop();
    }
    return out;
  }

  #object(value: object): { [key: string]: Json } {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) this.#refuse(`is ${describe(value)}, not a plain object`);
    if (Object.getOwnPropertySymbols(value).length > 0) this.#refuse('has symbol keys');
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(value)) {
      if (hasLoneSurrogate(key)) this.#refuse('has a key with a lone surrogate');
      this.#path.push(key);
      const copied = this.copy((value as Record<string, unknown>)[key]);
      this.#path.pop();
      // `out[key] = …` with key '__proto__' would set the copy's prototype instead of a key.
      if (key === '__proto__') {
        Object.defineProperty(out, key, { value: copied, enumerable: true, writable: true, configurable: true });
      } else {
        out[key] = copied;
      }
    }
    return out;
  }
}

/**
 * Checks that `value` is plain JSON within Tollgate's limits (see the module comment) and returns
 * a deep copy of it, or the reason it is not, naming where (`args.items[3]`).
 */
export function toJson(value: unknown, name = 'value'): JsonCheck {
  const copier = new Copier(name);
  try {
    return { ok: true, value: copier.copy(value) };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, reason: error.message };
    // A getter that throws, a Proxy that misbehaves, a stack overflow in a trap: still not JSON.
    return { ok: false, reason: `${copier.where()} could not be read: ${safeString(error)}` };
  }
}

/** `String(value)`, for a value that may throw when turned into a string. */
export function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return 'an unreadable value';
  }
}

/** True for a plain (non-array, non-null) object. Never throws (a revoked Proxy is not plain). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null;
  } catch {
    return false;
  }
}
