/**
 * Real servers on 127.0.0.1 for the tests that talk to them over sockets: each Node adapter mounted
 * on `/webhooks`, on every framework version pixhook supports.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HandleInput, WebhookResponse } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import express4 from 'express4';
import express5 from 'express5';
import Fastify from 'fastify';
import Koa2 from 'koa2';
import Koa3 from 'koa3';

/** A listening server: its port, and how to stop it (open connections included). */
export interface Started {
  port: number;
  close: () => Promise<void>;
}

/** What the adapters are given: a `Webhooks`, or anything with its `handle()`. */
export interface HandlesDeliveries {
  handle(input: HandleInput<never>): Promise<WebhookResponse>;
}

/** Starts a Node HTTP server with `listener` on a free port of 127.0.0.1. */
export function serve(listener: http.RequestListener): Promise<Started> {
  const server = http.createServer(listener);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    );
  });
}

/** Every Node adapter on `/webhooks`, by framework and version. */
export const NODE_SERVERS: [string, (webhooks: HandlesDeliveries) => Promise<Started>][] = [
  ['express@4', (w) => serve(express4().post('/webhooks', expressMiddleware(w)))],
  ['express@5', (w) => serve(express5().post('/webhooks', expressMiddleware(w)))],
  ['koa@2', (w) => serve(new Koa2().use(koaMiddleware(w, { path: '/webhooks' }) as never).callback())],
  ['koa@3', (w) => serve(new Koa3().use(koaMiddleware(w, { path: '/webhooks' }) as never).callback())],
  [
    'fastify@5',
    async (w) => {
      const app = Fastify();
      await app.register(pixhookFastify, { webhooks: w });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  ],
];
