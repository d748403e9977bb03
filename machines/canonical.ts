/**
 * Canonical JSON (RFC 8785) for the values Tollgate writes: keys sorted by UTF-16 code units,
 * numbers and strings as `JSON.stringify` writes them (the RFC's own rule). It gives exactly the
 * text of the `canonicalize` package — a property test holds it to that, value by value,
 * errors included — at a fraction of its cost on long histories: strings are checked by
 * `isWellFormed` rather than character by character, and no set of visited objects is kept.
 * The values given are JSON copies (`src/json.ts`: acyclic, bounded in depth), so no cycle can
 * reach it; one would end in a `RangeError`, never a hang. (Where the package writes text that is
 * not JSON — a function inside an array, a sparse array — this writes what `JSON.stringify`
 * would; no run holds either.)
 */

/** ES2024's `String.prototype.isWellFormed` (in Node from 20; the project's lib is ES2022). */
type WellFormed = string & { isWellFormed(): boolean };

/** `value` as canonical JSON; `undefined` for a value JSON cannot hold (a function, a symbol). */
export function canonicalJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      if (!(value as WellFormed).isWellFormed()) throw new Error('Lone surrogate is not allowed');
      return JSON.stringify(value);
    case 'number':
      if (Number.isNaN(value)) throw new Error('NaN is not allowed');
      if (!Number.isFinite(value)) throw new Error('Infinity is not allowed');
      return JSON.stringify(value);
    case 'object':
      return value === null ? 'null' : objectText(value);
    default:
      return JSON.stringify(value);
  }
}

/** What JSON has no value for: `null` in an array, left out of an object (as `JSON.stringify` does). */
const absent = (item: unknown) => item === undefined || typeof item === 'symbol' || typeof item === 'function';

/** Keys longer than this are not kept in `keyTexts` (a hostile run cannot fill memory with them). */
const MAX_CACHED_KEY = 64;
/** How many key texts `keyTexts` keeps: a run's keys repeat (`role`, `tool`, `args`...). */
const MAX_CACHED_KEYS = 4096;
/** Each short key's text, made once: writing the same few keys again was a third of an entry's cost. */
const keyTexts = new Map<string, string>();

function keyText(key: string): string {
  const cached = keyTexts.get(key);
  if (cached !== undefined) return cached;
  const text = canonicalJson(key) as string;
  if (key.length <= MAX_CACHED_KEY && keyTexts.size < MAX_CACHED_KEYS) keyTexts.set(key, text);
  return text;
}

/**
 * An object's own keys in canonical order (UTF-16 code units), sorted only when they are not in
 * order already (a parsed checkpoint's are).
 */
export function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) {
    if ((keys[i - 1] as string) > (keys[i] as string)) return keys.sort();
  }
  return keys;
}

function objectText(value: object): string | undefined {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return canonicalJson(toJSON.call(value));
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (i > 0) text += ',';
      text += canonicalJson(absent(item) ? null : item);
    }
    return `${text}]`;
  }
  const keys = sortedKeys(value);
  let text = '{';
  let first = true;
  for (const key of keys) {
    const item: unknown = (value as Record<string, unknown>)[key];
    if (absent(item)) continue;
    text += `${first ? '' : ','}${keyText(key)}:${canonicalJson(item)}`;
    first = false;
  }
  return `${text}}`;
}
