/**
 * Errors as the run keeps them: strings (an XState error snapshot persists an error as `{}`).
 * Total over anything a policy or tool can throw.
 */
import { wellFormed } from './strings.js';

/** The longest error text a run keeps: enough for a model to act on, and bounded. */
export const MAX_ERROR_LENGTH = 8_000;

/**
 * A thrown value's message as text. Primitives as `String` gives them; an object is named, not
 * stringified: its own `toString` may throw, or never end (`String(new Array(2 ** 32 - 1))`).
 */
function text(value: unknown): string {
  try {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return String(value);
    return Array.isArray(value) ? '<an array>' : typeof value === 'function' ? '<a function>' : '<an object>';
  } catch {
    return '<unreadable>';
  }
}

/**
 * `'<ErrorName>: <message>'`. Total: a thrown value with a throwing `message` getter or
 * `toString`, or a revoked Proxy, is still described; the result is a well-formed string of at
 * most `MAX_ERROR_LENGTH` characters (and a note of how many more there were).
 */
export function describeError(error: unknown): string {
  let described: string;
  try {
    if (error instanceof Error) {
      described = `${text(error.name)}: ${text(error.message)}`;
    } else if (error && typeof error === 'object' && 'message' in error) {
      const e = error as { name?: unknown; message?: unknown };
      const name = e.name;
      described = `${typeof name === 'string' ? name : 'Error'}: ${text(e.message)}`;
    } else {
      described = `Error: ${text(error)}`;
    }
  } catch {
    described = 'Error: <unreadable thrown value>';
  }
  if (described.length > MAX_ERROR_LENGTH) {
    described = `${described.slice(0, MAX_ERROR_LENGTH)}… (${described.length - MAX_ERROR_LENGTH} more characters)`;
  }
  return wellFormed(described);
}

/** The active time an actor's error carries (`elapsedMs`), or 0 when it carries none. */
export function elapsedOf(error: unknown): number {
  try {
    const ms = (error as { elapsedMs?: unknown } | null)?.elapsedMs;
    return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? ms : 0;
  } catch {
    return 0;
  }
}
