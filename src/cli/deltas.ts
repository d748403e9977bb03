/**
 * A streaming model's progress in the terminal: text and tool-call pieces written as they arrive,
 * on a `model` line of their own, ended before any other line is printed. What a model streams is
 * hostile input: control characters (an escape sequence that clears the screen or rewrites a
 * line the human approves from) and bidirectional overrides are shown escaped, never sent as is.
 */
import type { PolicyDelta } from '../types.js';
import { type Colors, terminalSafe } from './format.js';

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
    const piece = delta.kind === 'call' ? `call ${delta.index}` : delta.kind;
    if (this.#open !== piece) {
      this.end();
      const label =
        delta.kind === 'call'
          ? `${this.#c.dim('calls')} `
          : delta.kind === 'reasoning'
            ? `${this.#c.dim('thinks')} `
            : '';
      this.#write(`${this.#c.dim('model')}     ${label}`);
      this.#open = piece;
    }
    if (delta.kind !== 'call') {
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
