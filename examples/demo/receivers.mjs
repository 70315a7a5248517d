// The demo's receivers: one app per framework, each with the real pixhook adapter mounted the way
// the README tells users to, listening on 127.0.0.1 at a free port.
import http from 'node:http';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';

export const WEBHOOK_PATH = '/webhooks';

async function listen(listener) {
  const server = http.createServer(listener);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: server.address().port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Each entry starts one framework's app around `webhooks` and returns `{ port, close }`. */
export const RECEIVERS = {
  express: (webhooks) => {
    const app = express();
    // app.all rather than app.post, so that the demo's GET shows pixhook's own 405.
    app.all(WEBHOOK_PATH, expressMiddleware(webhooks));
    return listen(app);
  },
  fastify: async (webhooks) => {
    const app = Fastify();
    await app.register(pixhookFastify, { webhooks, path: WEBHOOK_PATH });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { port: app.server.address().port, close: () => app.close() };
  },
  koa: (webhooks) => {
    const app = new Koa();
    app.use(koaMiddleware(webhooks, { path: WEBHOOK_PATH }));
    return listen(app.callback());
  },
};

/** Sends one request over real HTTP; resolves `{ status, code }` (`code` from an error body). */
export function send(port, { method = 'POST', headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: WEBHOOK_PATH, headers, agent: false, timeout: 10_000 },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          let code;
          try {
            code = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.error?.code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode, code });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from 127.0.0.1:${port} within 10 s`)));
    // A server may answer 413 and stop reading before the whole body is sent.
    req.on('error', (error) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    req.end(body);
  });
}
