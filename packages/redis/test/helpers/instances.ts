/**
 * App instances for the multi-instance, fault and load runs: Express 5, Fastify 5 and Koa 3, each
 * listening on 127.0.0.1 with its own Redis client and RedisStore, all on one Redis and one prefix.
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AnyEvent, type HandlerContext, Webhooks } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import { RedisStore, type RedisStoreOptions } from '@pixhook/redis';
import { httpSend, listen, type TestRequest, type TestResponse, WEBHOOK_PATH } from '@pixhook/test-helpers/adapters';
import express5 from 'express5';
import Fastify from 'fastify';
import Koa3 from 'koa3';
import { CLIENTS, type TestClient } from './clients.js';

export const SECRET = 'whsec_redis_instances_5d6e7f';

/** One running app instance. */
export interface Instance {
  name: string;
  send(request: TestRequest): Promise<TestResponse>;
}

/** A set of instances on one Redis, and what their handlers did. */
export interface Fleet {
  instances: Instance[];
  connections: TestClient[];
  /** Every handler run, in order: which event, which delivery, which instance. */
  runs: { eventId: string; deliveryId: string; instance: string }[];
  close(): Promise<void>;
}

type Framework = 'express' | 'fastify' | 'koa';

async function serve(
  framework: Framework,
  webhooks: Webhooks,
): Promise<{ port?: number; close(): Promise<void>; send(request: TestRequest): Promise<TestResponse> }> {
  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(pixhookFastify, { webhooks, path: WEBHOOK_PATH });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    return { send: (request) => httpSend(port, request), close: () => app.close() };
  }
  if (framework === 'express') {
    const app = express5();
    app.post(WEBHOOK_PATH, expressMiddleware(webhooks) as never);
    return listen(app as unknown as http.RequestListener);
  }
  const app = new Koa3();
  app.use(koaMiddleware(webhooks, { path: WEBHOOK_PATH }) as never);
  return listen(app.callback());
}

/**
 * Starts one instance per framework (Express, Fastify, Koa, then again if `count` is larger), each
 * with a client of another library, sharing `prefix` on the Redis at `port`.
 */
export async function startFleet(
  port: number,
  options: RedisStoreOptions & {
    count?: number;
    handler?: (event: AnyEvent, context: HandlerContext) => unknown;
  } = {},
): Promise<Fleet> {
  const { count = 3, handler, ...storeOptions } = options;
  const frameworks: Framework[] = ['express', 'fastify', 'koa'];
  // ioredis 5, node-redis 5, node-redis 4, ioredis 6, node-redis 6: both libraries in every fleet.
  const clientOrder = [0, 3, 2, 1, 4];
  const runs: Fleet['runs'] = [];
  const connections: TestClient[] = [];
  const servers: { close(): Promise<void> }[] = [];
  const instances: Instance[] = [];
  for (let index = 0; index < count; index += 1) {
    const framework = frameworks[index % frameworks.length]!;
    const client = CLIENTS[clientOrder[index % clientOrder.length]!]!;
    const connection = await client.connect(port);
    connections.push(connection);
    const name = `${framework}#${index} (${client.name})`;
    const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(connection.client, storeOptions) });
    webhooks.onError(() => {});
    webhooks.onAny(async (event, context) => {
      runs.push({ eventId: event.id, deliveryId: context.deliveryId, instance: name });
      await handler?.(event, context);
    });
    const server = await serve(framework, webhooks);
    servers.push(server);
    instances.push({ name, send: server.send });
  }
  return {
    instances,
    connections,
    runs,
    close: async () => {
      for (const server of servers) await server.close();
      for (const connection of connections) await connection.close();
    },
  };
}

/** Runs `work` over `items` with at most `concurrency` at a time, in order of start. */
export async function pool<T>(
  items: T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
