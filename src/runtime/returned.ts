/**
 * What a policy or tool hands back, taken safely: a returned value awaited only when it is a
 * promise, and a thrown value given the time spent before it, whatever it is.
 */
import { describeError } from '../../machines/describe-error.js';

/**
 * What a policy or tool returned, awaited only when it is a promise, and boxed: awaiting or
 * resolving with a value reads its `then`, which a hostile value (a revoked Proxy, a throwing
 * getter) turns into a throw. Unread, it reaches the JSON copy, which reports it as data.
 */
export async function unwrap(returned: unknown): Promise<{ value: unknown }> {
  let thenable = false;
  try {
    thenable =
      returned !== null &&
      (typeof returned === 'object' || typeof returned === 'function') &&
      typeof (returned as { then?: unknown }).then === 'function';
  } catch {
    thenable = false;
  }
  return { value: thenable ? await returned : returned };
}

/**
 * An error that carries the active time spent before it, so the budget still counts it. Total:
 * a frozen, hostile or primitive throw becomes a stand-in with the same name and message.
 */
export function withElapsed(error: unknown, elapsedMs: number): unknown {
  try {
    if (error !== null && typeof error === 'object' && Object.isExtensible(error)) {
      try {
        Object.assign(error, { elapsedMs });
        if ((error as { elapsedMs?: unknown }).elapsedMs === elapsedMs) return error;
      } catch {
        /* a read-only or trapped elapsedMs: fall through */
      }
    }
  } catch {
    /* a Proxy whose traps throw: fall through */
  }
  // The stand-in is described as the original would be ('<name>: <message>', once).
  const described = describeError(error);
  const colon = described.indexOf(': ');
  const standIn = Object.assign(new Error(described.slice(colon + 2), { cause: error }), { elapsedMs });
  standIn.name = described.slice(0, colon);
  return standIn;
}
