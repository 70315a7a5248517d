// A webhook receiver in Express 4 or 5: verified, de-duplicated deliveries of the image service.
//   SIGNING_SECRET=whsec_… PORT=3000 node examples/express.mjs
import { Webhooks } from '@pixhook/core';
import { webhookMiddleware } from '@pixhook/express';
import express from 'express';

const secret = process.env.SIGNING_SECRET;
if (!secret) {
  console.error('Set SIGNING_SECRET to the endpoint signing secret (dashboard: Keys → Webhooks).');
  process.exit(1);
}

const webhooks = new Webhooks({ secret });

webhooks.on('image.created', async (event, { deliveryId }) => {
  const image = event.data.object;
  console.log(`image.created ${image.id} (${image.url}) delivery ${deliveryId}`);
});
webhooks.on('image.deleted', (event) => {
  console.log(`image.deleted ${event.data.object.id}: drop it from the cache`);
});
webhooks.on(['quota.warned', 'quota.exceeded'], (event) => {
  console.log(`${event.type}: ${JSON.stringify(event.data.object)}`);
});
webhooks.onError((error, { deliveryId }) => {
  // HANDLER_FAILED carries your handler's own error as `cause`; log it here, it is not sent back.
  console.warn(`pixhook ${error.code}: ${error.message}`, deliveryId ?? '', error.cause ?? '');
});

const app = express();
// Mount the webhook route before any body parser: pixhook needs the raw bytes to check the signature.
app.post('/webhooks', webhookMiddleware(webhooks));
app.use(express.json());
app.get('/health', (_req, res) => {
  res.json({ ok: true });
});

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`Express receiver listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => server.close(() => process.exit(0)));
}
