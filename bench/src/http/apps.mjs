// One HTTP server per (framework, variant), each with its webhook route at /webhooks:
// - bare: a route that reads nothing and answers 200 (the framework's ceiling);
// - baseline: the framework's raw-body parser and the hand-written verification;
// - pixhook: the pixhook adapter, mounted as its README says (store: memory, redis, or none; or queued
//   mode on BullMQ, store: 'bullmq', whose handler runs in a worker process);
// - octokit: @octokit/webhooks' createNodeMiddleware (Express only), with GitHub's signatures.
// Each server process imports only its own framework (apps/<framework>.mjs), as a real app does:
// code that is loaded but unused elsewhere changes how V8 compiles what the server runs (loading
// all three frameworks made Node's own stream and tick code several µs slower per request).
import http from 'node:http';
import { SECRET } from '../payloads.mjs';
import { handledCount } from './baseline.mjs';

/**
 * The pixhook `Webhooks` for a server: one handler for the event type every body carries, so the
 * store is used on every delivery. `handler` replaces the default counter (the memory scenario,
 * the queue worker). With `store: 'bullmq'` it is queued mode instead: a `BullMQQueue` named
 * `queueName` on the bench's redis-server, whose `queue` is returned too (for `startWorker`); the
 * server answers 202 once the job is written, and the worker process (worker.mjs) runs the handler.
 */
export async function createWebhooks({ store = 'memory', redisPort, queueName, handler } = {}) {
  const { MemoryStore, Webhooks } = await import('@pixhook/core');
  let idempotency = store === 'none' ? false : new MemoryStore();
  let queue;
  let close = async () => {};
  if (store === 'redis') {
    const [{ RedisStore }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
    const client = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
    await client.connect();
    idempotency = new RedisStore(client, { prefix: `bench:${process.pid}:` });
    close = () => client.quit();
  }
  if (store === 'bullmq') {
    const { BullMQQueue } = await import('@pixhook/bullmq');
    queue = new BullMQQueue({ connection: { host: '127.0.0.1', port: redisPort }, name: queueName });
    // Connect before the first request, as a server that has been up a while would be.
    await queue.bullQueue.waitUntilReady();
    close = () => queue.close();
  }
  let handled = 0;
  const webhooks = new Webhooks(queue ? { secret: SECRET, queue } : { secret: SECRET, store: idempotency });
  webhooks.on(
    'image.created',
    handler ??
      (() => {
        handled++;
      }),
  );
  return { webhooks, queue, close, handled: () => handled };
}

/** Which variants each framework has. */
export const VARIANTS = {
  express: ['bare', 'baseline', 'pixhook', 'octokit'],
  fastify: ['bare', 'baseline', 'pixhook'],
  koa: ['bare', 'baseline', 'pixhook'],
};

/**
 * Starts one server on 127.0.0.1 (a free port). Returns `{ port, close }`.
 * @param {{ framework: string, variant: string, store?: string, redisPort?: number, queueName?: string, handler?: Function }} options
 */
export async function startServer({ framework, variant, ...storeOptions }) {
  const pixhook = variant === 'pixhook' ? await createWebhooks(storeOptions) : undefined;
  // Events the handlers ran: every 2xx answer of a verifying server must have run one.
  const handled = pixhook ? pixhook.handled : handledCount;
  if (framework === 'fastify') {
    const { start } = await import('./apps/fastify.mjs');
    const { server, close } = await start(variant, pixhook?.webhooks);
    const closeAll = async () => {
      await close();
      await pixhook?.close();
    };
    return { port: server.address().port, close: closeAll, handled };
  }
  if (framework !== 'express' && framework !== 'koa') throw new Error(`unknown framework ${framework}`);
  const { listener } = await import(`./apps/${framework}.mjs`);
  const server = http.createServer(listener(variant, pixhook?.webhooks));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pixhook?.close();
  };
  return { port: server.address().port, close, handled };
}
