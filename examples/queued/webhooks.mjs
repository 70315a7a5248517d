// What the receiver and the workers share: the queue and the handlers. Import it from both.

import { BullMQQueue } from '@pixhook/bullmq';
import { Webhooks } from '@pixhook/core';

if (!process.env.SIGNING_SECRET) {
  console.error('Set SIGNING_SECRET to the endpoint signing secret (dashboard: Keys → Webhooks).');
  process.exit(1);
}

export const queue = new BullMQQueue({
  connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  attempts: 5,
  backoff: { type: 'exponential', delayMs: 2_000 },
});

export const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, queue });

webhooks.on('image.created', async (event, { job }) => {
  // Slow work is fine here: the service was answered long ago. Make it safe to run twice.
  await new Promise((resolve) => setTimeout(resolve, 500)); // e.g. make thumbnails
  console.log(`processed ${event.type} ${event.id} (attempt ${job?.attempt} of ${job?.maxAttempts})`);
});
webhooks.onAny((event, { job }) => {
  if (event.type !== 'image.created') console.log(`processed ${event.type} ${event.id} (attempt ${job?.attempt})`);
});
// HANDLER_FAILED's cause is your handler's own error (with its stack); QUEUE_UNAVAILABLE's, Redis's.
webhooks.onError((error, { job }) =>
  console.warn(`${error.code}${job ? ` (job ${job.jobId})` : ''}: ${error.message}`, error.cause ?? ''),
);
