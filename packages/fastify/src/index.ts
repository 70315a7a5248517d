import type { BodyReader, HandleInput, WebhookResponse } from '@pixhook/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Anything with pixhook's `handle()`: a `Webhooks` from any copy of `@pixhook/core`. */
export interface WebhooksLike {
  handle(input: HandleInput<never>): Promise<WebhookResponse>;
  /** The largest body accepted; the plugin's body parser stops reading past it. */
  readonly maxBodyBytes?: number;
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
  // Every content type is read into one Buffer, by Fastify's own reader, with pixhook's limit:
  // the signature decides, not the Content-Type. Encapsulated: the app's other routes keep theirs.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: webhooks.maxBodyBytes }, (_request, body, done) =>
    done(null, body),
  );
  // Not async: the callback captures only `reply`, so nothing here keeps the body alive.
  const respond = (request: FastifyRequest, reply: FastifyReply, body: HandleInput['body']) =>
    webhooks
      .handle({ method: request.method, headers: request.headers, body, request: request as never })
      .then((result) => reply.code(result.status).headers(result.headers).send(result.body));
  // A body Fastify's reader refused (too large, cut short) never reaches the route: core answers it,
  // after the method check, so the contract's order and error format hold.
  fastify.setErrorHandler((error: { code?: string }, request, reply) => {
    if (!error.code?.startsWith('FST_ERR_CTP_')) throw error;
    const reader: BodyReader = () => Promise.reject(error);
    return respond(request, reply, reader);
  });
  fastify.all(path, (request, reply) => {
    const body = request.body as Uint8Array | undefined;
    // Core owns the bytes from here; without this reference they can be freed while handlers run.
    request.body = undefined;
    return respond(request, reply, body);
  });
}

Object.defineProperty(pixhook, Symbol.for('fastify.display-name'), { value: '@pixhook/fastify' });
// The CommonJS build exports the function itself; `.default` also serves code compiled from
// `import pixhook from '@pixhook/fastify'` without esModuleInterop, as Fastify's own plugins do.
Object.defineProperty(pixhook, 'default', { value: pixhook });

export default pixhook;
