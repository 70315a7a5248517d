import type { Readable } from 'node:stream';
import { assertKnownOptions, type BodyReader, describeType, tenantFrom, type WebhooksLike } from '@pixhook/core';
import { nodeBodyReader } from '@pixhook/core/node';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

export type { WebhooksLike };

/** Options of the Fastify plugin. */
export interface PixhookFastifyOptions {
  /**
   * The `Webhooks` instance that verifies and dispatches: `Webhooks<M>` or
   * `Webhooks<M, FastifyRequest>`. Required.
   */
  webhooks: WebhooksLike<FastifyRequest>;
  /**
   * The route's path, under the registration's `prefix`.
   * @default '/webhooks'
   */
  path?: string;
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with the Fastify `request`; its answer is passed to `webhooks.handle()` as `tenant`.
   * Synchronous; a function that throws or answers anything but a string gives no tenant, which
   * core refuses as 400 `SIGNATURE_MISMATCH`. Ignored when `secret` is not a function. Declared as
   * a method so that a narrower request type fits.
   * @default (request) => request.params?.tenant (a `:tenant` parameter: `path: '/webhooks/:tenant'`)
   */
  tenant?(request: FastifyRequest): string | undefined;
}

/** The default `tenant` option: the route's `:tenant` parameter. */
const tenantParameter = (request: FastifyRequest): string | undefined =>
  (request.params as { tenant?: string } | undefined)?.tenant;

const HINT = 'Register the plugin without a preParsing hook or content-type parser that reads the body for its route.';

/** The plugin's body, before fastify-plugin wraps it (see `pixhook` below). */
async function plugin(fastify: FastifyInstance, options: PixhookFastifyOptions): Promise<void> {
  const { webhooks, path = '/webhooks', tenant } = options ?? ({} as PixhookFastifyOptions);
  // Fastify hands its own registration options (prefix, logLevel, logSerializers) to the plugin too.
  assertKnownOptions(
    options,
    ['webhooks', 'path', 'tenant', 'prefix', 'logLevel', 'logSerializers'],
    'pixhook: @pixhook/fastify: register(pixhook, options)',
  );
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      'pixhook: @pixhook/fastify: register(pixhook, { webhooks }) needs a Webhooks instance from @pixhook/core.',
    );
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError(
      `pixhook: @pixhook/fastify: path must be a string starting with "/", got ${JSON.stringify(path)}.`,
    );
  }
  if (tenant !== undefined && typeof tenant !== 'function') {
    throw new TypeError(
      `pixhook: @pixhook/fastify: register(pixhook, { tenant }) takes a function (request) => string | undefined, got ${describeType(tenant)}.`,
    );
  }
  const readTenant: (request: FastifyRequest) => unknown = tenant ?? tenantParameter;
  // Every content type, valid or not, reaches the route with its body unread: core reads it with
  // the limit and the deadline of `webhooks` (bodyTimeoutMs), through the same reader as Express
  // and Koa. The signature decides, not the Content-Type. Encapsulated: the app's other routes
  // keep their parsers. A stream set by a preParsing hook (decompression) is the one read.
  fastify.removeAllContentTypeParsers();
  const unread = (_request: FastifyRequest, payload: Readable, done: (error: null, body: Readable) => void) =>
    done(null, payload);
  fastify.addContentTypeParser('*', unread);
  // The same parser under the type the service sends: Fastify caches the lookup of a named type,
  // while the catch-all parses the Content-Type header again on every request (~0.5 µs).
  fastify.addContentTypeParser('application/json', unread);
  // Not async: the callback captures only `reply`, so nothing here keeps the body alive.
  const respond = (request: FastifyRequest, reply: FastifyReply, body: BodyReader) =>
    webhooks
      .handle({
        method: request.method,
        headers: request.headers,
        body,
        request,
        tenant: tenantFrom(readTenant, request),
      })
      .then((result) => {
        // A timeout hook (or the app) may have answered while the body or a handler was slow.
        if (reply.sent || reply.raw.headersSent) return undefined;
        return reply.code(result.status).headers(result.headers).send(result.body);
      });
  // A Content-Type Fastify cannot parse (`;`, `{`, `a b`) is refused before any parser runs, the
  // body still unread: answer it like any other, as Express and Koa do.
  fastify.setErrorHandler((error: { code?: string }, request, reply) => {
    if (!error.code?.startsWith('FST_ERR_CTP_') && error.code !== 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE') throw error;
    return respond(request, reply, nodeBodyReader(request.raw, undefined, HINT));
  });
  fastify.all(path, (request, reply) => {
    const payload = request.body as Readable | undefined;
    // Core owns the stream from here, and the bytes it reads can be freed while handlers run.
    request.body = undefined;
    const stream = payload ?? request.raw;
    return respond(request, reply, nodeBodyReader(stream, undefined, HINT));
  });
}

// The CommonJS build exports the function itself; `.default` also serves code compiled from
// `import pixhook from '@pixhook/fastify'` without esModuleInterop, as Fastify's own plugins do.
// Defined before fp() so that it stays out of the function's enumerable keys.
Object.defineProperty(plugin, 'default', { value: plugin });

// encapsulate: true keeps the plugin its own context (the raw-body parser and error handler stay
// inside it, the registration prefix applies), while fp() gives it a name and a version check.
/**
 * Fastify 5 plugin, named `@pixhook/fastify`: one route (`path` under the registration's
 * `prefix`, every method; non-POST answers 405) that verifies, de-duplicates and dispatches
 * deliveries. Its raw-body parser lives inside this plugin's encapsulated context, so the app's
 * other routes keep parsing JSON. Handlers get the Fastify `request` as `context.request`.
 * Registering it on another major of Fastify fails with fastify-plugin's version error.
 *
 * @example
 * await app.register(pixhook, { webhooks, path: '/webhooks' })
 */
const pixhook = fp(plugin, { name: '@pixhook/fastify', fastify: '5.x', encapsulate: true });

export default pixhook;
