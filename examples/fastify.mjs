// A webhook receiver in Fastify 5: verified, de-duplicated deliveries of the image service.
//   SIGNING_SECRET=whsec_… PORT=3000 node examples/fastify.mjs
import { Webhooks } from '@pixhook/core';
import pixhook from '@pixhook/fastify';
import Fastify from 'fastify';

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
webhooks.on('api_key.revoked', (event) => {
  console.log(`api_key.revoked ${event.data.object.id}: stop using it`);
});
webhooks.on(['quota.warned', 'quota.exceeded'], (event) => {
  console.log(`${event.type}: ${JSON.stringify(event.data.object)}`);
});
webhooks.onError((error, { deliveryId }) => {
  // HANDLER_FAILED carries your handler's own error as `cause`; log it here, it is not sent back.
  console.warn(`pixhook ${error.code}: ${error.message}`, deliveryId ?? '', error.cause ?? '');
});

const app = Fastify();
// The plugin reads raw bytes inside its own context; the app's other routes still parse JSON.
await app.register(pixhook, { webhooks, path: '/webhooks' });
app.get('/health', async () => ({ ok: true }));

await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`Fastify receiver listening on http://127.0.0.1:${app.server.address().port}/webhooks`);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => app.close().then(() => process.exit(0)));
}
