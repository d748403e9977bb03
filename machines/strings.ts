/**
 * Well-formed strings. RFC 8785 canonical JSON, the checkpoint's encoding, cannot write a lone
 * UTF-16 surrogate, so no string with one may enter a run: strings from callers are refused,
 * strings the runtime makes from thrown errors are repaired.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** True when `s` holds a lone surrogate (a string the checkpoint cannot write). */
export function hasLoneSurrogate(s: string): boolean {
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(s);
}

/** `s` with every lone surrogate replaced by U+FFFD, as `String.prototype.toWellFormed` does. */
export function wellFormed(s: string): string {
  return s.replace(LONE_SURROGATE, '\uFFFD');
}
