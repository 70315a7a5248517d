import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AnyEvent, type HandlerContext, Webhooks, type WebhooksOptions } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import express from 'express5';
import Fastify from 'fastify';
import Koa from 'koa3';

// Real receivers built with pixhook's adapters, for the tests that deliver to one through a real
// socket: `pixhook send`, `pixhook simulate` (packages/cli/test) and the dashboard
// (packages/dashboard/test).

/** The secret the receivers verify with, unless given another; the CLI and dashboard tests sign with it. */
export const SECRET = 'whsec_cli_test_5f3a9c';

/** One delivery as the receiver's handler saw it. */
export interface Arrival {
  /** `performance.now()` when the handler ran. */
  at: number;
  event: AnyEvent;
  deliveryId: string;
  timestamp: number;
}

export interface Receiver {
  /** The webhook URL, on 127.0.0.1. */
  url: string;
  /** Every delivery that reached the handler, in order. */
  arrivals: Arrival[];
  close(): Promise<void>;
}

/** What the handler does with the n-th arrival (1-based): throw to answer 500, or wait. */
export type Behaviour = (n: number) => unknown;

export type Framework = 'express' | 'fastify' | 'koa';

function listenOn(listener: RequestListener): Promise<Server> {
  const server = createServer(listener);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}

/**
 * A real receiver built with one of pixhook's adapters at /webhooks on 127.0.0.1, whose handler
 * records every delivery and then behaves as told.
 */
export async function receiver(
  framework: Framework,
  behaviour: Behaviour = () => {},
  options: Partial<WebhooksOptions> = {},
): Promise<Receiver> {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  // Failures are what these receivers are for: a listener keeps core from logging each one.
  webhooks.onError(() => {});
  const arrivals: Arrival[] = [];
  webhooks.onAny((event, context: HandlerContext) => {
    arrivals.push({ at: performance.now(), event, deliveryId: context.deliveryId, timestamp: context.timestamp });
    return behaviour(arrivals.length);
  });

  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(pixhookFastify, { webhooks, path: '/webhooks' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/webhooks`,
      arrivals,
      close: async () => {
        app.server.closeAllConnections();
        await app.close();
      },
    };
  }
  let server: Server;
  if (framework === 'express') {
    const app = express();
    app.post('/webhooks', expressMiddleware(webhooks));
    server = await listenOn(app);
  } else {
    const app = new Koa();
    app.use(koaMiddleware(webhooks, { path: '/webhooks' }) as never);
    server = await listenOn(app.callback());
  }
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/webhooks`, arrivals, close: () => closeServer(server) };
}

/** A behaviour that fails (answers 500) for the first `k` arrivals. */
export function failFirst(k: number): Behaviour {
  return (n) => {
    if (n <= k) throw new Error(`failing arrival ${n} of the first ${k} on purpose`);
  };
}

/** A behaviour that answers only after `ms` for the arrivals `which` selects. */
export function slow(ms: number, which: (n: number) => boolean = () => true): Behaviour {
  return (n) => (which(n) ? new Promise((resolve) => setTimeout(resolve, ms)) : undefined);
}
