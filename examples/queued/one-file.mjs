// Receiver and worker in one process: the simplest way to start. Split them (receiver.mjs and
// worker.mjs) when handlers need more room than the web process has.
import { webhookMiddleware } from '@pixhook/express';
import express from 'express';
import { queue, webhooks } from './webhooks.mjs';

const worker = queue.startWorker(webhooks, { concurrency: 4 });
const app = express();
app.post('/webhooks', webhookMiddleware(webhooks));

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`receiver and worker listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () =>
    server.close(async () => {
      await worker.close();
      await queue.close();
      process.exit(0);
    }),
  );
}
