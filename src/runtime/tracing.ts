/**
 * Spans that can never change a run: every call into the user's tracer is caught (a tracer that
 * throws, or an exporter that does, costs the trace, never the run), and every string a policy,
 * tool or model produced is bounded and made well-formed before it reaches an attribute.
 */
import { wellFormed } from '../../machines/strings.js';
import type { TraceAttributes, TraceAttributeValue, TraceContext, TracerLike, TraceSpan } from '../tracer.js';

/**
 * OpenTelemetry's context key of the active span. The API makes its keys with `Symbol.for`, so
 * that every copy and 1.x version of `@opentelemetry/api` agrees on them: a context Tollgate makes
 * with it parents a span in any SDK, with no import of the API.
 */
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

/** The longest text put in an attribute or an exception event: model and tool text is hostile input. */
export const MAX_TRACE_TEXT = 1_024;

/** OpenTelemetry's `SpanKind` and `SpanStatusCode` values (their enums live in the API). */
export const SPAN_KIND = { internal: 0, client: 2 } as const;
const STATUS_ERROR = 2;

/** An immutable context, as the API's own `BaseContext` is. */
class SpanContext implements TraceContext {
  readonly #values: Map<symbol, unknown>;
  constructor(values: Map<symbol, unknown>) {
    this.#values = values;
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key);
  }
  setValue(key: symbol, value: unknown): TraceContext {
    return new SpanContext(new Map(this.#values).set(key, value));
  }
  deleteValue(key: symbol): TraceContext {
    const values = new Map(this.#values);
    values.delete(key);
    return new SpanContext(values);
  }
}

/** `text` cut to `MAX_TRACE_TEXT` characters (noting how many more there were), well-formed. */
export function traceText(text: string): string {
  const cut =
    text.length > MAX_TRACE_TEXT ? `${text.slice(0, MAX_TRACE_TEXT)}… (${text.length - MAX_TRACE_TEXT} more)` : text;
  return wellFormed(cut);
}

/** What may go in a span: finite numbers, booleans and bounded text; anything else is left out. */
function attributesOf(attributes: Record<string, TraceAttributeValue | null | undefined>): TraceAttributes {
  const out: TraceAttributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value === 'string') out[key] = traceText(value);
    else if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) out[key] = value;
  }
  return out;
}

/** The error type of a `'<ErrorName>: <message>'` text (semantic conventions' `error.type`). */
export function errorTypeOf(error: string): string {
  return /^([A-Za-z_$][\w$.]{0,63}):/.exec(error)?.[1] ?? '_OTHER';
}

/** A span, or nothing: every method is a no-op without a tracer and swallows the tracer's errors. */
export class Span {
  static readonly none = new Span(null);
  readonly #span: TraceSpan | null;
  #ended = false;

  constructor(span: TraceSpan | null) {
    this.#span = span;
  }

  /** A context holding this span, to parent another; undefined without one. */
  get context(): TraceContext | undefined {
    return this.#span ? new SpanContext(new Map()).setValue(SPAN_KEY, this.#span) : undefined;
  }

  set(attributes: Record<string, TraceAttributeValue | null | undefined>): void {
    this.#safely((span) => {
      for (const [key, value] of Object.entries(attributesOf(attributes))) span.setAttribute(key, value);
    });
  }

  event(name: string, attributes: Record<string, TraceAttributeValue | null | undefined> = {}): void {
    this.#safely((span) => span.addEvent(name, attributesOf(attributes)));
  }

  /** Status ERROR and an exception event, from the run's own error text (already total and bounded). */
  fail(error: string): void {
    const message = traceText(error);
    const type = errorTypeOf(error);
    this.#safely((span) => {
      span.setAttribute('error.type', type);
      span.setStatus({ code: STATUS_ERROR, message });
      span.recordException({ name: type, message });
    });
  }

  /** Ends the span once; later calls do nothing. */
  end(): void {
    this.#safely((span) => span.end());
    this.#ended = true;
  }

  #safely(use: (span: TraceSpan) => unknown): void {
    if (this.#span === null || this.#ended) return;
    try {
      use(this.#span);
    } catch {
      // Tracing never changes a run: a throwing tracer or exporter costs the trace only.
    }
  }
}

/** Starts a span on `tracer` (under `parent`, when given); `Span.none` without a tracer or if it throws. */
export function startSpan(
  tracer: TracerLike | undefined,
  name: string,
  kind: number,
  parent: Span | null,
  attributes: Record<string, TraceAttributeValue | null | undefined>,
): Span {
  if (tracer === undefined) return Span.none;
  try {
    const span = tracer.startSpan(traceText(name), { kind, attributes: attributesOf(attributes) }, parent?.context);
    // A tracer returning something that is not a span is as good as none.
    return span !== null && typeof span === 'object' ? new Span(span) : Span.none;
  } catch {
    return Span.none;
  }
}
