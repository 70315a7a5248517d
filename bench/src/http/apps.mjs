// One HTTP server per (framework, variant), each with its webhook route at /webhooks:
// - bare: a route that reads nothing and answers 200 (the framework's ceiling);
// - baseline: the framework's raw-body parser and the hand-written verification;
// - pixhook: the pixhook adapter, mounted as its README says (store: memory, redis, or none);
// - octokit: @octokit/webhooks' createNodeMiddleware (Express only), with GitHub's signatures.
import http from 'node:http';
import { createNodeMiddleware, Webhooks as OctokitWebhooks } from '@octokit/webhooks';
import { MemoryStore, Webhooks } from '@pixhook/core';
import { webhookMiddleware as expressPixhook } from '@pixhook/express';
import fastifyPixhook from '@pixhook/fastify';
import { webhookMiddleware as koaPixhook } from '@pixhook/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { SECRET } from '../payloads.mjs';
import { handledCount, handWritten, handWrittenHandler } from './baseline.mjs';

const PATH = '/webhooks';
const OK = '{"received":true}';
const LIMIT = 1024 * 1024;

/**
 * The pixhook `Webhooks` for a server: one handler for the event type every body carries, so the
 * store is used on every delivery. `handler` replaces the default counter (the memory scenario).
 */
export async function createWebhooks({ store = 'memory', redisPort, handler } = {}) {
  let idempotency = store === 'none' ? false : new MemoryStore();
  let close = async () => {};
  if (store === 'redis') {
    const [{ RedisStore }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
    const client = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
    await client.connect();
    idempotency = new RedisStore(client, { prefix: `bench:${process.pid}:` });
    close = () => client.quit();
  }
  let handled = 0;
  const webhooks = new Webhooks({ secret: SECRET, store: idempotency });
  webhooks.on(
    'image.created',
    handler ??
      (() => {
        handled++;
      }),
  );
  return { webhooks, close, handled: () => handled };
}

function octokitApp() {
  const webhooks = new OctokitWebhooks({ secret: SECRET });
  webhooks.on('issues', handWrittenHandler);
  const app = express();
  app.use(createNodeMiddleware(webhooks, { path: PATH }));
  return app;
}

const EXPRESS = {
  bare(app) {
    app.post(PATH, (_req, res) => res.type('application/json').send(OK));
  },
  baseline(app) {
    app.post(PATH, express.raw({ type: 'application/json', limit: LIMIT }), (req, res) => {
      const status = handWritten(req.body, req.headers);
      res.status(status).json(status === 200 ? { received: true } : { error: 'invalid' });
    });
  },
  pixhook(app, webhooks) {
    app.post(PATH, expressPixhook(webhooks));
  },
};

const FASTIFY = {
  bare(app) {
    // Read nothing: the stream stays untouched, Node discards it after the answer.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    app.post(PATH, async (_req, reply) => reply.type('application/json').send(OK));
  },
  baseline(app) {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    app.post(PATH, async (req, reply) => {
      const status = handWritten(req.body, req.headers);
      return reply.code(status).send(status === 200 ? { received: true } : { error: 'invalid' });
    });
  },
  async pixhook(app, webhooks) {
    await app.register(fastifyPixhook, { webhooks, path: PATH });
  },
};

const KOA = {
  bare(app) {
    app.use(async (ctx) => {
      ctx.type = 'application/json';
      ctx.body = OK;
    });
  },
  baseline(app) {
    app.use(async (ctx) => {
      if (ctx.path !== PATH || ctx.method !== 'POST') return;
      const raw = await getRawBody(ctx.req, { limit: LIMIT, length: ctx.get('content-length') });
      const status = handWritten(raw, ctx.headers);
      ctx.status = status;
      ctx.body = status === 200 ? { received: true } : { error: 'invalid' };
    });
  },
  pixhook(app, webhooks) {
    app.use(koaPixhook(webhooks, { path: PATH }));
  },
};

/** Which variants each framework has. */
export const VARIANTS = {
  express: ['bare', 'baseline', 'pixhook', 'octokit'],
  fastify: ['bare', 'baseline', 'pixhook'],
  koa: ['bare', 'baseline', 'pixhook'],
};

/**
 * Starts one server on 127.0.0.1 (a free port). Returns `{ port, close }`.
 * @param {{ framework: string, variant: string, store?: string, redisPort?: number, handler?: Function }} options
 */
export async function startServer({ framework, variant, ...storeOptions }) {
  const pixhook = variant === 'pixhook' ? await createWebhooks(storeOptions) : undefined;
  // Events the handlers ran: every 2xx answer of a verifying server must have run one.
  const handled = pixhook ? pixhook.handled : handledCount;
  let server;
  if (framework === 'fastify') {
    const app = Fastify({ logger: false, bodyLimit: LIMIT });
    await FASTIFY[variant](app, pixhook?.webhooks);
    await app.listen({ host: '127.0.0.1', port: 0 });
    server = app.server;
    const close = async () => {
      await app.close();
      await pixhook?.close();
    };
    return { port: server.address().port, close, handled };
  }
  let listener;
  if (framework === 'express') {
    const app = variant === 'octokit' ? octokitApp() : express();
    if (variant !== 'octokit') await EXPRESS[variant](app, pixhook?.webhooks);
    listener = app;
  } else if (framework === 'koa') {
    const app = new Koa();
    await KOA[variant](app, pixhook?.webhooks);
    listener = app.callback();
  } else {
    throw new Error(`unknown framework ${framework}`);
  }
  server = http.createServer(listener);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pixhook?.close();
  };
  return { port: server.address().port, close, handled };
}
