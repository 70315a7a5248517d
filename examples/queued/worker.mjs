// A worker: runs the handlers of queued events. Start as many as you like, on any machine that
// reaches the same Redis.
import { queue, webhooks } from './webhooks.mjs';

const worker = queue.startWorker(webhooks, { concurrency: Number(process.env.CONCURRENCY ?? 4) });
console.log('worker started');

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await worker.close(); // stops taking jobs, lets running handlers finish (up to 30 s)
    await queue.close();
    process.exit(0);
  });
}
