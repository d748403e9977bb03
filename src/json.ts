/**
 * JSON safety. Whatever a policy or tool returns ends up in the checkpoint, so it must be plain
 * JSON that survives a round trip unchanged (invariants 5 and 6). `toJson` checks and copies;
 * it never throws for bad data, it reports where the data went wrong.
 */
import type { Json } from '../machines/types.js';

export type JsonCheck = { ok: true; value: Json } | { ok: false; reason: string };

function hasLoneSurrogate(s: string): boolean {
  // RFC 8785 canonical JSON (our checkpoint encoding) cannot represent lone surrogates.
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name ? `an instance of ${name}` : 'an object';
  }
  return typeof value === 'number' ? String(value) : `a ${typeof value}`;
}

class NotJson extends Error {}

function copy(value: unknown, path: string, seen: Set<object>): Json {
  switch (typeof value) {
    case 'string':
      if (hasLoneSurrogate(value)) throw new NotJson(`${path} is a string with a lone surrogate`);
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(`${path} is ${value}`);
      // -0 would come back from a checkpoint as 0.
      return value === 0 ? 0 : value;
    case 'object': {
      if (value === null) return null;
      if (seen.has(value)) throw new NotJson(`${path} is a cycle`);
      const proto = Object.getPrototypeOf(value);
      if (Array.isArray(value)) {
        seen.add(value);
        const out = value.map((v, i) => copy(v, `${path}[${i}]`, seen));
        seen.delete(value);
        return out;
      }
      if (proto !== Object.prototype && proto !== null) {
        throw new NotJson(`${path} is ${describe(value)}, not a plain object`);
      }
      seen.add(value);
      const out: { [key: string]: Json } = {};
      for (const key of Object.keys(value)) {
        if (hasLoneSurrogate(key)) throw new NotJson(`${path} has a key with a lone surrogate`);
        out[key] = copy((value as Record<string, unknown>)[key], `${path}.${key}`, seen);
      }
      if (Object.getOwnPropertySymbols(value).length > 0) {
        throw new NotJson(`${path} has symbol keys`);
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new NotJson(`${path} is ${describe(value)}`);
  }
}

/**
 * Checks that `value` is plain JSON (null, booleans, finite numbers, strings without lone
 * surrogates, arrays, plain objects; no cycles) and returns a deep copy of it.
 */
export function toJson(value: unknown, name = 'value'): JsonCheck {
  try {
    return { ok: true, value: copy(value, name, new Set()) };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, reason: error.message };
    // A getter that throws, a Proxy that misbehaves: still not JSON we can keep.
    return { ok: false, reason: `${name} could not be read: ${String(error)}` };
  }
}

/** True for a plain (non-array, non-null) object. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
