/**
 * A streaming model's progress in the terminal: text and tool-call pieces written as they arrive,
 * on a `model` line of their own, ended before any other line is printed. What a model streams is
 * hostile input: control characters (an escape sequence that clears the screen or rewrites a
 * line the human approves from) and bidirectional overrides are shown escaped, never sent as is.
 */
import type { PolicyDelta } from '../types.js';
import type { Colors } from './format.js';

/** Indent of a continued line, under the text after the 10-character labels (`model     `). */
const INDENT = ' '.repeat(10);

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` as a terminal may show it: escapes for control and direction characters, lines indented. */
export function terminalSafe(text: unknown): string {
  if (typeof text !== 'string') return '';
  return text
    .replace(LONE_SURROGATE, '\uFFFD')
    .replace(UNSAFE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/\n/g, `\n${INDENT}`);
}

/** Writes deltas as they arrive; `end()` closes the line being written. */
export class LiveDeltas {
  readonly #write: (text: string) => void;
  readonly #c: Colors;
  /** What the open line shows: `text`, or `call <index>`; null: no line open. */
  #open: string | null = null;

  constructor(write: (text: string) => void, c: Colors) {
    this.#write = write;
    this.#c = c;
  }

  /** Whether a streamed line is open (a spinner must not draw over it). */
  get open(): boolean {
    return this.#open !== null;
  }

  delta(delta: PolicyDelta): void {
    const piece = delta.kind === 'text' ? 'text' : `call ${delta.index}`;
    if (this.#open !== piece) {
      this.end();
      this.#write(`${this.#c.dim('model')}     ${delta.kind === 'call' ? `${this.#c.dim('calls')} ` : ''}`);
      this.#open = piece;
    }
    if (delta.kind === 'text') {
      this.#write(this.#c.dim(terminalSafe(delta.text)));
      return;
    }
    if (delta.tool !== undefined) this.#write(`${terminalSafe(delta.tool)} `);
    if (delta.argsText !== undefined) this.#write(this.#c.dim(terminalSafe(delta.argsText)));
  }

  end(): void {
    if (this.#open === null) return;
    this.#open = null;
    this.#write('\n');
  }
}
