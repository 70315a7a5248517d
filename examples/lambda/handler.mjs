// An AWS Lambda function receiving the image service's webhooks: verified, de-duplicated
// deliveries through a Lambda Function URL, API Gateway (REST or HTTP API) or a load balancer.
//   Runtime: Node.js 20 or later. Handler: handler.handler. Timeout: 9 s (the service waits 10 s).
//   Environment: SIGNING_SECRET=whsec_…, and REDIS_URL=redis://… to de-duplicate across instances.
import { Webhooks } from '@pixhook/core';
import { createLambdaHandler } from '@pixhook/lambda';

const secret = process.env.SIGNING_SECRET;
if (!secret) {
  // Thrown while the module loads: the function fails to start and its log says why.
  throw new Error('Set SIGNING_SECRET to the endpoint signing secret (dashboard: Keys → Webhooks).');
}

// Each concurrent instance of the function has its own memory: the default MemoryStore only
// de-duplicates deliveries that reach the same instance. A shared Redis runs each event once.
const store = process.env.REDIS_URL ? await redisStore(process.env.REDIS_URL) : undefined;

const webhooks = new Webhooks({ secret, store });

webhooks.on('image.created', async (event, { deliveryId, request }) => {
  const image = event.data.object;
  console.log(
    `image.created ${image.id} (${image.url}) delivery ${deliveryId} request ${request.context.awsRequestId}`,
  );
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

// Built once per instance, when the module loads, and reused by every invocation it serves.
export const handler = createLambdaHandler(webhooks);

async function redisStore(url) {
  const [{ RedisStore }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
  const redis = new Redis(url);
  redis.on('error', (error) => console.warn(`redis: ${error.message}`));
  return new RedisStore(redis);
}
