// The OpenTelemetry Node SDK with pixhook's instrumentation. Load it before the app, so the HTTP
// instrumentation is in place before Express loads `http`:
//   SIGNING_SECRET=whsec_… node --import ./examples/opentelemetry/instrumentation.mjs examples/opentelemetry/receiver.mjs
// Metrics: a Prometheus exporter on 127.0.0.1, port METRICS_PORT (default 9464), path /metrics.
// Traces: where the standard OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT variables say
// (`otlp` by default, `console` prints each span, `none` turns them off).
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
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
  instrumentations: [new HttpInstrumentation(), pixhook],
});
sdk.start();
