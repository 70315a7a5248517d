// A real OpenTelemetry SDK for the tests: spans kept in memory, metrics read on demand, the
// AsyncLocalStorage context manager and the W3C propagator registered globally (as NodeSDK does).
import { createRequire } from 'node:module';
import { type Attributes, context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { AggregationTemporality, type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { PixhookInstrumentation, type PixhookInstrumentationConfig } from '../../src/index.js';

/** A reader the test collects from when it wants (cumulative temporality unless told delta). */
class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** One data point of one metric, flattened. */
export interface Point {
  name: string;
  unit: string;
  attributes: Attributes;
  value: DataPoint<unknown>['value'];
}

export interface Otel {
  instrumentation: PixhookInstrumentation;
  exporter: InMemorySpanExporter;
  tracerProvider: BasicTracerProvider;
  meterProvider: MeterProvider;
  /** Every ended span so far. */
  spans(): ReadableSpan[];
  /** Every data point of every metric, now. */
  collect(): Promise<Point[]>;
  shutdown(): Promise<void>;
}

/**
 * The SDK, registered globally, and the instrumentation registered with it (enabled). With `delta`,
 * each collection reports only what was observed since the last (a gauge's stale series drop out).
 */
export function startOtel(config: PixhookInstrumentationConfig = {}, { delta = false } = {}): Otel {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(tracerProvider);
  const reader = new TestReader(delta ? { aggregationTemporalitySelector: () => AggregationTemporality.DELTA } : {});
  const meterProvider = new MeterProvider({ readers: [reader] });
  const instrumentation = new PixhookInstrumentation(config);
  const unregister = registerInstrumentations({
    instrumentations: [instrumentation],
    tracerProvider,
    meterProvider,
  });
  return {
    instrumentation,
    exporter,
    tracerProvider,
    meterProvider,
    spans: () => exporter.getFinishedSpans(),
    collect: async () => {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new Error(`metric collection failed: ${errors.map(String).join('; ')}`);
      return resourceMetrics.scopeMetrics.flatMap((scope) =>
        scope.metrics.flatMap((metric) =>
          (metric.dataPoints as DataPoint<unknown>[]).map((point) => ({
            name: metric.descriptor.name,
            unit: metric.descriptor.unit,
            attributes: point.attributes,
            value: point.value,
          })),
        ),
      );
    },
    shutdown: async () => {
      unregister();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** The sum of a counter's points whose attributes are exactly `attributes` (all of them when omitted). */
export function counted(points: Point[], name: string, attributes?: Attributes): number {
  return points
    .filter((point) => point.name === name)
    .filter((point) => attributes === undefined || sameAttributes(point.attributes, attributes))
    .reduce((sum, point) => sum + (point.value as number), 0);
}

/** How many values a histogram recorded with exactly `attributes` (all of them when omitted). */
export function recorded(points: Point[], name: string, attributes?: Attributes): number {
  return points
    .filter((point) => point.name === name)
    .filter((point) => attributes === undefined || sameAttributes(point.attributes, attributes))
    .reduce((sum, point) => sum + (point.value as { count: number }).count, 0);
}

function sameAttributes(a: Attributes, b: Attributes): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

/**
 * `@opentelemetry/instrumentation-http` on `otel`'s providers, enabled: HTTP servers then open a
 * SERVER span per request. Call `disable()` on it when done.
 */
export function startHttpInstrumentation(otel: Otel): HttpInstrumentation {
  const http = new HttpInstrumentation();
  http.setTracerProvider(otel.tracerProvider);
  http.setMeterProvider(otel.meterProvider);
  http.enable();
  // The instrumentation patches `http` when it is required after enable(); Vitest loaded it before,
  // through `import`, which require-in-the-middle does not see. Requiring it once applies the patch
  // (to http.Server.prototype, so every server, however its module was loaded).
  createRequire(import.meta.url)('node:http');
  return http;
}
