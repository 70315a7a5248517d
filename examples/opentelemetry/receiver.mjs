// An Express receiver seen through OpenTelemetry: a `receive` span per delivery under the HTTP
// server span, a span per handler, and pixhook's metrics on a Prometheus /metrics page.
//   SIGNING_SECRET=whsec_… node --import ./examples/opentelemetry/instrumentation.mjs examples/opentelemetry/receiver.mjs
// With REDIS_URL set, deliveries are queued on BullMQ and a worker in this process runs the
// handlers: the worker's `process` span continues the request's trace, and the queue's job counts
// are gauges.
import { Webhooks } from '@pixhook/core';
import { webhookMiddleware } from '@pixhook/express';
import express from 'express';
import { metricsReady, pixhook, sdk } from './instrumentation.mjs';

const secret = process.env.SIGNING_SECRET;
if (!secret) {
  console.error('Set SIGNING_SECRET to the endpoint signing secret (dashboard: Keys → Webhooks).');
  process.exit(1);
}

let queue;
if (process.env.REDIS_URL) {
  const { BullMQQueue } = await import('@pixhook/bullmq');
  queue = new BullMQQueue({ connection: { url: process.env.REDIS_URL }, attempts: 3 });
  pixhook.observeQueue(queue);
}

const webhooks = new Webhooks({ secret, queue });

// Named functions name their spans (`handler makeThumbnail`) and the code_function_name label.
webhooks.on('image.created', async function makeThumbnail(event) {
  const image = event.data.object;
  // A failure here answers 500 (or, queued, fails the job): the span and the metrics show it.
  if (!String(image.url).startsWith('https://')) throw new Error(`refusing a non-https image URL for ${image.id}`);
  console.log(`image.created ${image.id}`);
});
webhooks.on(['quota.warned', 'quota.exceeded'], function notifyBilling(event) {
  console.log(`${event.type} ${event.id}`);
});
webhooks.onError((error) => {
  // The last-chance alarm (ENDPOINT_AT_RISK) is also logged by pixhook itself, whoever listens.
  console.warn(`pixhook ${error.code}: ${error.message}`);
});

const worker = queue?.startWorker(webhooks);
const app = express();
app.post('/webhooks', webhookMiddleware(webhooks));

const metrics = await metricsReady;
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`receiver listening on http://127.0.0.1:${server.address().port}/webhooks, metrics on ${metrics}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () =>
    server.close(async () => {
      await worker?.close();
      await queue?.close();
      await sdk.shutdown(); // exports the spans still buffered
      process.exit(0);
    }),
  );
}
