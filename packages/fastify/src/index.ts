import type { HandleInput, WebhookResponse } from '@pixhook/core';
import { nodeBodyReader } from '@pixhook/core/node';
import type { FastifyInstance } from 'fastify';

/** Anything with pixhook's `handle()`: a `Webhooks` from any copy of `@pixhook/core`. */
export interface WebhooksLike {
  handle(input: HandleInput<never>): Promise<WebhookResponse>;
}

/** Options of the Fastify plugin. */
export interface PixhookFastifyOptions {
  /** The `Webhooks` instance that verifies and dispatches. Required. */
  webhooks: WebhooksLike;
  /**
   * The route's path, under the registration's `prefix`.
   * @default '/webhooks'
   */
  path?: string;
}

const HINT = 'Register @pixhook/fastify as its own plugin; it reads the raw body through its own content-type parser.';

/**
 * Fastify 5 plugin: one route (`path`, every method; non-POST answers 405) that verifies,
 * de-duplicates and dispatches deliveries. Its raw-body parser lives inside this plugin's
 * encapsulated context, so the app's other routes keep parsing JSON. Handlers get the Fastify
 * `request` as `context.request`.
 *
 * @example
 * await app.register(pixhook, { webhooks, path: '/webhooks' })
 */
async function pixhook(fastify: FastifyInstance, options: PixhookFastifyOptions): Promise<void> {
  const { webhooks, path = '/webhooks' } = options ?? ({} as PixhookFastifyOptions);
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      '@pixhook/fastify: register(pixhook, { webhooks }) needs a Webhooks instance from @pixhook/core.',
    );
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError(`@pixhook/fastify: path must be a string starting with "/", got ${JSON.stringify(path)}.`);
  }
  // Every content type reaches the route as the untouched stream: the signature decides, and
  // pixhook reads the bytes itself with its own limit.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  fastify.all(path, async (request, reply) => {
    const stream = request.body ?? request.raw;
    const result = await webhooks.handle({
      method: request.method,
      headers: request.headers,
      body: nodeBodyReader(stream as typeof request.raw, undefined, HINT),
      request: request as never,
    });
    return reply.code(result.status).headers(result.headers).send(result.body);
  });
}

Object.defineProperty(pixhook, Symbol.for('fastify.display-name'), { value: '@pixhook/fastify' });
// The CommonJS build exports the function itself; `.default` also serves code compiled from
// `import pixhook from '@pixhook/fastify'` without esModuleInterop, as Fastify's own plugins do.
Object.defineProperty(pixhook, 'default', { value: pixhook });

export default pixhook;
