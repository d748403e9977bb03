/**
 * The part of an OpenTelemetry `Tracer` that Tollgate uses, as plain structural types: the
 * tracer `trace.getTracer(name)` of `@opentelemetry/api` 1.x is one. Tollgate imports nothing
 * of OpenTelemetry, not even its types: the API is an optional peer, and a user who traces
 * nothing installs nothing (test/types/tracer.test.ts pins the two types together).
 */

/** An attribute value, as OpenTelemetry takes it. */
export type TraceAttributeValue = string | number | boolean;

/** A set of span attributes. */
export type TraceAttributes = Record<string, TraceAttributeValue>;

/** OpenTelemetry's `Context`: Tollgate makes one holding the run span, to parent its calls' spans. */
export interface TraceContext {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): TraceContext;
  deleteValue(key: symbol): TraceContext;
}

/** The methods of an OpenTelemetry `Span` that Tollgate calls. */
export interface TraceSpan {
  setAttribute(key: string, value: TraceAttributeValue): unknown;
  addEvent(name: string, attributes?: TraceAttributes): unknown;
  /** `code`: 2 is `SpanStatusCode.ERROR`. */
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: { name: string; message: string }): void;
  end(): void;
}

/**
 * An OpenTelemetry `Tracer` (`trace.getTracer('my-service')` of `@opentelemetry/api`), as the
 * `tracer` option of `Agent` and `Worker` takes it.
 */
export interface TracerLike {
  /** `kind`: 0 is `SpanKind.INTERNAL`, 2 is `SpanKind.CLIENT`. */
  startSpan(name: string, options?: { kind?: number; attributes?: TraceAttributes }, context?: TraceContext): TraceSpan;
}
