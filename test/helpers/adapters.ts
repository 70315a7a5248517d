import http from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** A request as the tests describe it. `body` may be a stream, sent chunked without a length. */
export interface TestRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | (() => Readable);
}

/** An answer as every adapter must give it. */
export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The JSON body, or undefined when it is not JSON. */
  json: unknown;
}

export interface Client {
  send(request: TestRequest): Promise<TestResponse>;
  close(): Promise<void>;
}

/** One adapter (and framework version) under test. */
export interface AdapterUnderTest {
  name: string;
  /** Mounts `webhooks` at `/webhooks` in a fresh app, the way the README tells users to. */
  create(webhooks: Webhooks): Promise<Client>;
}

export const WEBHOOK_PATH = '/webhooks';

function toResponse(status: number, headers: Record<string, unknown>, text: string): TestResponse {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, headers: flat, text, json };
}

/** Sends a request over real HTTP to a server listening on 127.0.0.1. */
export function httpSend(port: number, request: TestRequest): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const body = request.body;
    const headers: Record<string, string | number> = { ...request.headers };
    if (body !== undefined && typeof body !== 'function' && headers['content-length'] === undefined) {
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: request.method ?? 'POST',
        path: request.path ?? WEBHOOK_PATH,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve(toResponse(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString('utf8'))),
        );
        res.on('error', reject);
      },
    );
    // A server may answer (413) and close before it has read everything we send.
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    if (typeof body === 'function') body().pipe(req);
    else req.end(body);
  });
}

/** Starts a Node request listener on 127.0.0.1 at a free port. */
export async function listen(listener: http.RequestListener): Promise<Client> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    send: (request) => httpSend(port, request),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

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
  };
}

const fastifyAdapter: AdapterUnderTest = {
  name: 'fastify@5',
  create: async (webhooks) => {
    const app = Fastify();
    await app.register(pixhookFastify, { webhooks, path: WEBHOOK_PATH });
    await app.ready();
    return {
      send: async (request) => {
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
  },
};

/** Every adapter and framework version the contract table runs against. */
export const ADAPTERS: AdapterUnderTest[] = [
  expressAdapter('express@4', express4),
  expressAdapter('express@5', express5),
  fastifyAdapter,
  koaAdapter('koa@2', Koa2),
  koaAdapter('koa@3', Koa3),
  { name: 'fetch', create: async (webhooks) => fetchClient(createFetchHandler(webhooks)) },
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
