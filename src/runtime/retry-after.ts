/**
 * How long a failed policy call's server asked to be left alone: the `retry-after-ms` or
 * `retry-after` header of the HTTP error a model SDK threw. The runtime is the one layer that
 * retries a policy (the model adapters turn their SDKs' retries off), so it honours the header,
 * as the SDKs would have. Read from the error's headers as the SDKs keep them: a fetch `Headers`
 * (`error.headers` of openai and @anthropic-ai/sdk) or a plain record (`responseHeaders` of the
 * AI SDK's `APICallError`). Anything unreadable is no delay: an error's shape is not trusted.
 */

/** One header of an error's response, or undefined. */
function header(error: unknown, name: string): string | undefined {
  try {
    if (typeof error !== 'object' || error === null) return undefined;
    const { headers, responseHeaders } = error as { headers?: unknown; responseHeaders?: unknown };
    for (const source of [headers, responseHeaders]) {
      if (typeof source !== 'object' || source === null) continue;
      const get = (source as { get?: unknown }).get;
      const value =
        typeof get === 'function'
          ? (get as (key: string) => unknown).call(source, name)
          : (source as Record<string, unknown>)[name];
      if (typeof value === 'string') return value;
    }
  } catch {
    // A throwing getter or a revoked proxy: no header.
  }
  return undefined;
}

/**
 * The delay a thrown error asks for, in ms, or null: `retry-after-ms`, else `retry-after` in
 * seconds or as an HTTP date (against `now`).
 */
export function retryAfterMs(error: unknown, now: number): number | null {
  const ms = header(error, 'retry-after-ms')?.trim();
  if (ms !== undefined && ms !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const after = header(error, 'retry-after')?.trim();
  if (after === undefined || after === '') return null;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : null;
  const date = Date.parse(after);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
