// The NestJS servers on the Fastify platform: only Nest, its Fastify platform and @pixhook/nestjs are loaded in their process.
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { startNest } from './nest.mjs';
import { LIMIT } from './shared.mjs';

/** Starts one variant (bare, pixhook) on 127.0.0.1 (a free port); answers its `{ server, close, handled }`. */
export function start(variant) {
  return startNest(variant, new FastifyAdapter({ logger: false, bodyLimit: LIMIT }), {
    // Read nothing, as the plain Fastify bare route: Fastify would parse a JSON body before any route.
    bare(app) {
      const instance = app.getHttpAdapter().getInstance();
      instance.removeAllContentTypeParsers();
      instance.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    },
  });
}
