/**
 * The two rules every options object of Tollgate follows (Agent, resume, load, tools, decide,
 * extendBudget, stores, defineAgent): an unknown key is an error, never ignored — in JavaScript
 * `{ sideEfect: true }` would otherwise silently drop the approval gate — and an error names the
 * call, the option and the bad value.
 */
import leven from 'leven';
import { type ErrorDetails, OptionsError } from './errors.js';

const MAX_SHOWN = 60;

/** A value as an error message shows it: short, typed, and never throwing (a hostile getter, a Proxy). */
export function showValue(value: unknown): string {
  try {
    switch (typeof value) {
      case 'string': {
        const text = JSON.stringify(value);
        return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 4)}…" (${value.length} characters)` : text;
      }
      case 'number':
        return Object.is(value, -0) ? '-0' : String(value);
      case 'bigint':
        return `${value}n`;
      case 'function':
        return 'a function';
      case 'symbol':
        return 'a symbol';
      case 'undefined':
        return 'undefined';
      case 'boolean':
        return String(value);
      default:
        if (value === null) return 'null';
        return Array.isArray(value) ? 'an array' : 'an object';
    }
  } catch {
    return 'an unreadable value';
  }
}

/** The known key closest to `key`, if it is close enough to be a typo of it. */
export function closestKey(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = leven(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  // A third of the name (at least 1, at most 3 edits): `maxStep` → maxSteps, not `x` → maxSteps.
  const allowed = Math.min(3, Math.max(1, Math.floor(key.length / 3)));
  return bestDistance <= allowed ? best : null;
}

/**
 * Throws `OptionsError` unless `value` is a plain object whose own keys are all in `known`:
 * `new Agent: unknown option "maxStep" (did you mean "maxSteps"?)`.
 */
export function checkKeys(
  call: string,
  value: unknown,
  known: readonly string[],
  noun = 'option',
  details: ErrorDetails = {},
): void {
  let keys: string[];
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new OptionsError(`${call}: options must be an object, got ${showValue(value)}`, details);
    }
    // Symbol keys are not options (a `defineAgent` brand is one); only names can be typos.
    keys = Object.keys(value);
  } catch (error) {
    if (error instanceof OptionsError) throw error;
    throw new OptionsError(`${call}: options could not be read (${String(error)})`, { ...details, cause: error });
  }
  for (const key of keys) {
    if (known.includes(key)) continue;
    const meant = closestKey(key, known);
    const hint = meant ? ` (did you mean ${JSON.stringify(meant)}?)` : ` (known: ${known.join(', ')})`;
    throw new OptionsError(`${call}: unknown ${noun} ${JSON.stringify(key)}${hint}`, details);
  }
}
