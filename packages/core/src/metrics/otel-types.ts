/**
 * The parts of the OpenTelemetry API that `openTelemetryMetrics` calls, declared structurally:
 * a real `Meter` and `Tracer` from @opentelemetry/api fit them, and an application that does
 * not use OpenTelemetry never needs its types to type-check against @sluice/core.
 */

/** Attribute values as OpenTelemetry takes them. */
export type OtelAttributes = Record<string, string | number | boolean>

export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void
}

export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void
}

export interface OtelObservableResult {
  observe(value: number, attributes?: OtelAttributes): void
}

export interface OtelObservable {
  addCallback(callback: (result: OtelObservableResult) => void): void
}

export interface OtelInstrumentOptions {
  description?: string
  unit?: string
  advice?: { explicitBucketBoundaries?: number[] }
}

/** What a `Meter` of @opentelemetry/api offers that Sluice uses. */
export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservable
  createObservableCounter(name: string, options?: OtelInstrumentOptions): OtelObservable
}

export interface OtelSpan {
  setStatus(status: { code: number; message?: string }): unknown
  end(endTime?: number): void
}

/** What a `Tracer` of @opentelemetry/api offers that Sluice uses. */
export interface OtelTracer {
  startSpan(name: string, options?: { startTime?: number; attributes?: OtelAttributes }): OtelSpan
}

/** The @opentelemetry/api module, as far as its default meter and tracer go. */
export interface OtelApi {
  metrics: { getMeter(name: string): OtelMeter }
  trace: { getTracer(name: string): OtelTracer }
}
