// The OpenTelemetry setups the HTTP scenario measures beside plain pixhook (issue: observability):
// - 'loaded': @pixhook/opentelemetry registered with no SDK, as an app that installs it but exports
//   nothing; core's channels then have subscribers, and the OpenTelemetry API hands out no-op spans;
// - 'sdk': the SDK recording every span (a batch processor into an exporter that keeps nothing, as
//   a real exporter's network cost is not pixhook's) and every metric (a reader that is never
//   collected in a round: the SDK's aggregation is the per-delivery cost);
// - 'sdk-only': the same SDK without @pixhook/opentelemetry, as an app already on OpenTelemetry
//   runs: its context manager in use, as the HTTP instrumentation uses it on every request. Node 20's
//   AsyncLocalStorage installs promise hooks the first time a context is entered, and from then on
//   every promise of every request pays for them, whoever entered it; so 'sdk' ÷ 'sdk-only' is the
//   instrumentation's own share, and 'sdk' ÷ plain pixhook the whole cost of tracing with it.
// Loaded in the server process before its framework and pixhook's adapter, as a real app's
// instrumentation file is (`node --import ./instrumentation.mjs`).

/** Sets up `mode` ('loaded' or 'sdk'); returns a function that shuts it down. */
export async function setUpOpenTelemetry(mode) {
  const { registerInstrumentations } = await import('@opentelemetry/instrumentation');
  const { PixhookInstrumentation } = await import('@pixhook/opentelemetry');
  if (mode === 'loaded') {
    const unregister = registerInstrumentations({ instrumentations: [new PixhookInstrumentation()] });
    return async () => unregister();
  }
  if (mode !== 'sdk' && mode !== 'sdk-only') throw new Error(`unknown OpenTelemetry setup ${mode}`);
  const [{ context, metrics, trace }, { AsyncLocalStorageContextManager }, tracing, { MeterProvider, MetricReader }] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-metrics'),
    ]);
  const { BasicTracerProvider, BatchSpanProcessor } = tracing;
  /** Takes every batch and keeps nothing. */
  const discard = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] });
  class IdleReader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const meterProvider = new MeterProvider({ readers: [new IdleReader()] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  const unregister =
    mode === 'sdk' ? registerInstrumentations({ instrumentations: [new PixhookInstrumentation()] }) : () => {};
  // The context manager in use, as an app's HTTP instrumentation puts it on its first request.
  context.with(trace.setSpan(context.active(), tracerProvider.getTracer('bench').startSpan('startup')), () => {});
  return async () => {
    unregister();
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
  };
}
