// The Fastify servers: only this framework is loaded in their process.
import pixhook from '@pixhook/fastify';
import Fastify from 'fastify';
import { handWritten } from '../baseline.mjs';
import { LIMIT, OK, PATH } from './shared.mjs';

const VARIANTS = {
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
    await app.register(pixhook, { webhooks, path: PATH });
  },
};

/** Starts one variant on 127.0.0.1 (a free port); answers its `{ server, close }`. */
export async function start(variant, webhooks) {
  const app = Fastify({ logger: false, bodyLimit: LIMIT });
  await VARIANTS[variant](app, webhooks);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { server: app.server, close: () => app.close() };
}
