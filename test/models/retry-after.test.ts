import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/runtime/retry-after.js';

const now = Date.parse('2026-01-01T00:00:00Z');
const withHeaders = (headers: Record<string, string>) =>
  Object.assign(new Error('429'), { headers: new Headers(headers) });

describe('retryAfterMs', () => {
  it('reads retry-after-ms first, then retry-after in seconds or as a date', () => {
    expect(retryAfterMs(withHeaders({ 'retry-after-ms': '20', 'retry-after': '1' }), now)).toBe(20);
    expect(retryAfterMs(withHeaders({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterMs(withHeaders({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(retryAfterMs(withHeaders({ 'retry-after': 'Thu, 01 Jan 2025 00:00:05 GMT' }), now)).toBe(0);
  });

  it("reads the AI SDK's responseHeaders record", () => {
    expect(retryAfterMs({ responseHeaders: { 'retry-after': '3' } }, now)).toBe(3000);
  });

  it('is null for anything else, and never throws', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('no');
        },
      },
    );
    for (const error of [
      null,
      'x',
      new Error('plain'),
      withHeaders({}),
      withHeaders({ 'retry-after': 'soon' }),
      withHeaders({ 'retry-after': '-1' }),
      withHeaders({ 'retry-after-ms': '' }),
      { headers: hostile },
      hostile,
    ]) {
      expect(retryAfterMs(error, now)).toBeNull();
    }
  });
});
