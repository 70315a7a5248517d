/**
 * A timeout in front of pixhook ("answer 503 after N ms") may answer while the body or a handler is
 * still slow. pixhook must then leave the response alone: writing it again threw
 * ERR_HTTP_HEADERS_SENT inside a promise callback, an unhandled rejection that ends the process.
 * Real timeout middleware of each framework, real servers on 127.0.0.1.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HandleInput, Webhooks } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import { httpSend } from '@pixhook/test-helpers/adapters';
import { delivery, recordingWebhooks } from '@pixhook/test-helpers/deliveries';
import { serve } from '@pixhook/test-helpers/servers';
import type { NextFunction, Request, Response } from 'express';
import express4 from 'express4';
import express5 from 'express5';
import Fastify from 'fastify';
import type Koa from 'koa';
import Koa2 from 'koa2';
import Koa3 from 'koa3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const TIMEOUT_MS = 250;
/**
 * The app's timeout, read as each request arrives: TIMEOUT_MS for the request that must time out,
 * then longer, so that "the server serves on" does not depend on a busy machine answering in 250 ms.
 */
const appTimeout = { ms: TIMEOUT_MS };

/** The webhooks an app is given, remembering every `handle()` so a test can wait for it to end. */
function tracked(webhooks: Webhooks) {
  const pending: Promise<unknown>[] = [];
  const like = {
    handle: (input: HandleInput<never>) => {
      const answer = webhooks.handle(input);
      pending.push(answer);
      return answer;
    },
  };
  // Every handle() ended, and the adapters' callbacks after it ran.
  const settled = async () => {
    await Promise.allSettled(pending);
    await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return { like, settled };
}

type Like = ReturnType<typeof tracked>['like'];
type Start = (webhooks: Like) => Promise<{ port: number; close: () => Promise<void> }>;

/** The usual hand-written Express timeout: answer 503 after `ms` unless something answered first. */
const expressTimeout = (limit: { ms: number }) => (_req: Request, res: Response, next: NextFunction) => {
  const timer = setTimeout(() => {
    if (!res.headersSent) res.status(503).json({ error: 'timeout' });
  }, limit.ms);
  res.on('close', () => clearTimeout(timer));
  next();
};

/** The usual Koa timeout: race the rest of the chain against a timer that answers 503. */
const koaTimeout =
  (limit: { ms: number }): Koa.Middleware =>
  async (ctx, next) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        ctx.status = 503;
        ctx.body = { error: 'timeout' };
        resolve();
      }, limit.ms);
    });
    try {
      await Promise.race([next(), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  };

const SERVERS: [string, Start][] = [
  ...[
    ['express@4', express4],
    ['express@5', express5],
  ].map(([name, express]): [string, Start] => [
    name as string,
    (w) => {
      const app = (express as typeof express5)();
      app.use(expressTimeout(appTimeout));
      app.post('/webhooks', expressMiddleware(w));
      return serve(app);
    },
  ]),
  ...[
    ['koa@2', Koa2],
    ['koa@3', Koa3],
  ].map(([name, K]): [string, Start] => [
    name as string,
    (w) => {
      const app = new (K as typeof Koa2)();
      app.use(koaTimeout(appTimeout) as never);
      app.use(koaMiddleware(w, { path: '/webhooks' }) as never);
      return serve(app.callback());
    },
  ]),
  [
    'fastify@5',
    async (w) => {
      const app = Fastify();
      // A timeout hook: answer 503 after `ms` unless the route answered first.
      app.addHook('onRequest', (_request, reply, done) => {
        const timer = setTimeout(() => {
          if (!reply.sent) reply.code(503).send({ error: 'timeout' });
        }, appTimeout.ms);
        reply.raw.on('close', () => clearTimeout(timer));
        done();
      });
      await app.register(pixhookFastify, { webhooks: w });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  ],
];

describe.each(SERVERS)('a timeout answered first: %s', (_name, start) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  const cleanups: (() => Promise<void>)[] = [];
  beforeEach(() => {
    appTimeout.ms = TIMEOUT_MS;
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(async () => {
    process.off('unhandledRejection', onUnhandled);
    await Promise.all(cleanups.splice(0).map((c) => c()));
  });

  it('a slow handler: the 503 stands, pixhook writes nothing after it, and the server serves on', async () => {
    const { webhooks, runs } = recordingWebhooks();
    let slow = true;
    webhooks.on('image.created', async () => {
      if (slow) await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 3));
    });
    const { like, settled } = tracked(webhooks);
    const server = await start(like);
    cleanups.push(server.close);

    const first = await httpSend(server.port, delivery());
    expect(first.status).toBe(503);
    await settled();
    expect(runs).toHaveLength(1);
    expect(unhandled).toEqual([]);

    slow = false;
    appTimeout.ms = 20_000;
    expect((await httpSend(server.port, delivery())).status).toBe(200);
    expect(unhandled).toEqual([]);
  });

  it('a slow body: the 503 goes out while it arrives; the late answer is not written, nothing crashes', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const { like, settled } = tracked(webhooks);
    const server = await start(like);
    cleanups.push(server.close);
    const agent = new http.Agent({ keepAlive: true });
    cleanups.push(async () => agent.destroy());

    const d = delivery();
    const half = Math.floor(d.body.length / 2);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: server.port, method: 'POST', path: '/webhooks', agent, headers: d.headers },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          // The rest of the body, after the timeout answered.
          req.end(d.body.slice(half));
        },
      );
      req.setHeader('content-length', Buffer.byteLength(d.body));
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error);
      });
      req.write(d.body.slice(0, half));
    });
    expect(status).toBe(503);
    await settled();
    expect(unhandled).toEqual([]);
    // Whether the framework kept reading (the delivery then ran) or closed the connection.
    expect(runs.length).toBeLessThanOrEqual(1);

    appTimeout.ms = 20_000;
    expect((await httpSend(server.port, delivery())).status).toBe(200);
    expect(unhandled).toEqual([]);
  });
});
