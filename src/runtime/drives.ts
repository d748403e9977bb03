/**
 * The drives of one run, as spans: a drive begins with a user's event (or `run()` on a run
 * restored mid-call) and ends when the run settles. One drive is open at a time; an event sent
 * while one is open (a cancel, a decision racing a settle) is recorded on its span.
 */
import { describeError } from '../../machines/describe-error.js';
import type { AgentContext, AgentEvent, Status, Usage } from '../../machines/types.js';
import type { TracerLike } from '../tracer.js';
import { endRunSpan, recordRunEvent, startRunSpan } from './spans.js';
import type { Span } from './tracing.js';

/** A drive in progress: its span, and the tokens the run had used before it began. */
export interface Drive {
  span: Span;
  usedBefore: Usage;
}

export class Drives {
  readonly #tracer: TracerLike | undefined;
  readonly #agent: string | null;
  readonly #read: () => { context: AgentContext; status: Status };
  #open: Drive | null = null;

  constructor(
    tracer: TracerLike | undefined,
    agent: string | null,
    read: () => { context: AgentContext; status: Status },
  ) {
    this.#tracer = tracer;
    this.#agent = agent;
    this.#read = read;
  }

  /** The open drive's span, which parents the policy and tool calls' spans; null: none. */
  get span(): Span | null {
    return this.#open?.span ?? null;
  }

  /**
   * Starts a drive, unless one is open (its span then records the event); null without a tracer,
   * or when the open drive is another caller's to end.
   */
  open(event: AgentEvent | null): Drive | null {
    if (this.#tracer === undefined) return null;
    try {
      const { context } = this.#read();
      if (this.#open !== null) {
        recordRunEvent(this.#open.span, context, event);
        return null;
      }
      const { inputTokens, outputTokens } = context.usage;
      const span = startRunSpan(this.#tracer, this.#agent, context, event);
      this.#open = { span, usedBefore: { inputTokens, outputTokens } };
      return this.#open;
    } catch {
      return null; // tracing never changes a run
    }
  }

  /** Resolves as `settling` does, and ends `drive` (when the caller opened one) either way. */
  async traced(drive: Drive | null, settling: Promise<Status>): Promise<Status> {
    if (drive === null) return settling;
    try {
      const status = await settling;
      this.#end(drive);
      return status;
    } catch (error) {
      this.#end(drive, describeError(error));
      throw error;
    }
  }

  #end(drive: Drive, fault?: string): void {
    if (this.#open === drive) this.#open = null;
    try {
      const { context, status } = this.#read();
      endRunSpan(drive.span, context, status, drive.usedBefore, fault);
    } catch {
      // Tracing never changes a run.
    }
  }
}
