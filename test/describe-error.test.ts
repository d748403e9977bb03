/**
 * How a thrown value becomes the text a run keeps (`describeError`) and the active time it
 * carries (`elapsedOf`): total over anything a policy or tool can throw, and bounded.
 */
import { describe, expect, it } from 'vitest';
import { describeError, elapsedOf, MAX_ERROR_LENGTH } from '../machines/describe-error.js';

describe('describeError', () => {
  it('names an object, an array or a function thrown bare, never stringifies it', () => {
    expect(describeError({ toString: () => 'custom' })).toBe('Error: <an object>');
    expect(describeError(['a', 'b'])).toBe('Error: <an array>');
    expect(describeError(() => 'boom')).toBe('Error: <a function>');
    expect(describeError('plain text')).toBe('Error: plain text');
    expect(describeError(null)).toBe('Error: null');
  });

  it('an Error whose message is a value that cannot be looked at is still described', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const error = new Error('x');
    Object.defineProperty(error, 'message', { value: proxy });
    expect(describeError(error)).toBe('Error: <unreadable>');
    expect(describeError(proxy)).toBe('Error: <unreadable thrown value>');
  });

  it('keeps a text of exactly the limit whole, and cuts one character more', () => {
    const whole = new Error('m'.repeat(MAX_ERROR_LENGTH - 'Error: '.length));
    expect(describeError(whole)).toBe(`Error: ${whole.message}`);
    const over = new Error('m'.repeat(MAX_ERROR_LENGTH - 'Error: '.length + 1));
    expect(describeError(over)).toBe(`Error: ${'m'.repeat(MAX_ERROR_LENGTH - 7)}… (1 more characters)`);
  });
});

describe('elapsedOf', () => {
  it('reads a positive finite elapsedMs, and 0 for anything else, even a throwing getter', () => {
    expect(elapsedOf({ elapsedMs: 12.5 })).toBe(12.5);
    expect(elapsedOf({ elapsedMs: -1 })).toBe(0);
    expect(elapsedOf({ elapsedMs: Number.POSITIVE_INFINITY })).toBe(0);
    expect(elapsedOf({ elapsedMs: '5' })).toBe(0);
    expect(elapsedOf(null)).toBe(0);
    expect(
      elapsedOf({
        get elapsedMs(): number {
          throw new Error('no');
        },
      }),
    ).toBe(0);
  });
});
