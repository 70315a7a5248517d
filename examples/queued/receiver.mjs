// The receiving app: verifies, queues, answers 202 in milliseconds. Run workers with worker.mjs.
import { webhookMiddleware } from '@pixhook/express';
import express from 'express';
import { queue, webhooks } from './webhooks.mjs';

const app = express();
app.post('/webhooks', webhookMiddleware(webhooks));
app.get('/health', (_req, res) => res.send('ok'));

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`receiver listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => server.close(() => queue.close().then(() => process.exit(0))));
}
