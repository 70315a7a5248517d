// The OpenTelemetry Node SDK with pixhook's instrumentation. Load it before the app, so the HTTP
// instrumentation is in place before Express loads `http`:
//   SIGNING_SECRET=whsec_… node --import ./examples/opentelemetry/instrumentation.mjs examples/opentelemetry/receiver.mjs
// Metrics: a Prometheus exporter on 127.0.0.1, port METRICS_PORT (default 9464), path /metrics.
// Traces: where the standard OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT variables say
// (`otlp` by default, `console` prints each span, `none` turns them off).
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { metrics, NodeSDK } from '@opentelemetry/sdk-node';
import { PixhookInstrumentation } from '@pixhook/opentelemetry';

/** pixhook's instrumentation; the app adds its queue, if any, with `pixhook.observeQueue(queue)`. */
export const pixhook = new PixhookInstrumentation();

const port = Number(process.env.METRICS_PORT ?? 9464);
let exporterStarted;
/** Resolves with the address of /metrics once the exporter's server listens (rejects if it cannot). */
export const metricsReady = new Promise((resolve, reject) => {
  exporterStarted = (error) => (error ? reject(error) : resolve(`http://127.0.0.1:${port}/metrics`));
});

export const sdk = new NodeSDK({
  serviceName: process.env.OTEL_SERVICE_NAME ?? 'pixhook-example',
  metricReaders: [new PrometheusExporter({ host: '127.0.0.1', port }, exporterStarted)],
  views: [
    {
      // pixhook's durations are in seconds: buckets from 0.1 ms (a signature check) to 60 s (a job).
      meterName: '@pixhook/opentelemetry',
      instrumentType: metrics.InstrumentType.HISTOGRAM,
      aggregation: {
        type: metrics.AggregationType.EXPLICIT_BUCKET_HISTOGRAM,
        options: {
          boundaries: [
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 8, 10, 30, 60,
          ],
        },
      },
    },
  ],
  instrumentations: [new HttpInstrumentation(), pixhook],
});
sdk.start();
