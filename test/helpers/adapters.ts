import { Readable } from 'node:stream';
import type { Webhooks } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { createFetchHandler } from '@pixhook/fetch';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import express4 from 'express4';
import express5 from 'express5';
import Fastify from 'fastify';
import Koa2 from 'koa2';
import Koa3 from 'koa3';
import { fetchClient } from './fetch-client.js';
import {
  type AdapterUnderTest,
  type Client,
  listen,
  TENANT_ROUTE,
  type TestRequest,
  tenantOfPath,
  toResponse,
  WEBHOOK_PATH,
} from './http.js';
import { LAMBDA_ADAPTERS } from './lambda-adapters.js';
import { NEST_ADAPTERS } from './nest-adapters.js';

export {
  type AdapterUnderTest,
  type Client,
  httpSend,
  listen,
  TENANT_ROUTE,
  type TestRequest,
  type TestResponse,
  tenantOfPath,
  toResponse,
  WEBHOOK_PATH,
} from './http.js';

function expressAdapter(name: string, createApp: typeof express4 | typeof express5): AdapterUnderTest {
  return {
    name,
    create: (webhooks) => {
      const app = (createApp as () => express4.Express)();
      app.post(WEBHOOK_PATH, expressMiddleware(webhooks));
      // Other methods on the same path reach the middleware too and get its 405.
      app.all(WEBHOOK_PATH, expressMiddleware(webhooks));
      return listen(app);
    },
    createTenant: (webhooks) => {
      const app = (createApp as () => express4.Express)();
      app.post(TENANT_ROUTE, expressMiddleware(webhooks));
      return listen(app);
    },
  };
}

function koaAdapter(name: string, Koa: typeof Koa2 | typeof Koa3): AdapterUnderTest {
  return {
    name,
    create: (webhooks) => {
      const app = new (Koa as typeof Koa2)();
      app.use(koaMiddleware(webhooks, { path: WEBHOOK_PATH }) as never);
      return listen(app.callback());
    },
    // Koa's own `path` option matches one exact path: without @koa/router, the tenant is read from the path.
    createTenant: (webhooks) => {
      const app = new (Koa as typeof Koa2)();
      app.use(koaMiddleware(webhooks, { tenant: (ctx) => tenantOfPath(ctx.path) }) as never);
      return listen(app.callback());
    },
  };
}

/** A Fastify app with the plugin at `path`, answering through `inject`. */
async function fastifyClient(webhooks: Webhooks, path: string): Promise<Client> {
  const app = Fastify();
  await app.register(pixhookFastify, { webhooks, path });
  await app.ready();
  return {
    send: async (request: TestRequest) => {
      const body = request.body;
      const res = await app.inject({
        method: (request.method ?? 'POST') as 'POST',
        url: request.path ?? WEBHOOK_PATH,
        headers: request.headers ?? {},
        payload: typeof body === 'function' ? body() : body === undefined ? undefined : Buffer.from(body),
      });
      return toResponse(res.statusCode, res.headers, res.body);
    },
    close: () => app.close(),
  };
}

const fastifyAdapter: AdapterUnderTest = {
  name: 'fastify@5',
  create: (webhooks) => fastifyClient(webhooks, WEBHOOK_PATH),
  createTenant: (webhooks) => fastifyClient(webhooks, TENANT_ROUTE),
};

/** Every adapter and framework version the contract table runs against. */
export const ADAPTERS: AdapterUnderTest[] = [
  expressAdapter('express@4', express4),
  expressAdapter('express@5', express5),
  fastifyAdapter,
  koaAdapter('koa@2', Koa2),
  koaAdapter('koa@3', Koa3),
  {
    name: 'fetch',
    create: async (webhooks) => fetchClient(createFetchHandler(webhooks)),
    // A Request has no route parameters: the tenant option reads the URL.
    createTenant: async (webhooks) =>
      fetchClient(createFetchHandler(webhooks, { tenant: (request) => tenantOfPath(new URL(request.url).pathname) })),
  },
  ...NEST_ADAPTERS,
  ...LAMBDA_ADAPTERS,
];

/** A body stream of `size` bytes in 64 KiB chunks, without a Content-Length. */
export function streamOf(size: number): () => Readable {
  return () =>
    Readable.from(
      (function* () {
        for (let sent = 0; sent < size; sent += 65_536) yield Buffer.alloc(Math.min(65_536, size - sent), 0x61);
      })(),
    );
}
