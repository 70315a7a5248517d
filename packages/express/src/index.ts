import type { IncomingMessage, ServerResponse } from 'node:http';
import { assertKnownOptions, type WebhookResponse, type WebhooksLike } from '@pixhook/core';
import { nodeBodyReader, pathMatcher, rawCopyOf } from '@pixhook/core/node';

export type { WebhooksLike };

/** Options of the Express middleware. */
export interface ExpressMiddlewareOptions {
  /**
   * Handle only this path (a trailing slash tolerated) and pass other requests to `next()`; for
   * `app.use(webhookMiddleware(webhooks, { path }))`. With `app.post(path, …)` or
   * `app.use(path, …)` leave it out.
   * @default undefined (every request that reaches the middleware)
   */
  path?: string;
}

/** The parts of an Express `req` the middleware reads (Express 4 and 5); `express.Request` is one. */
export type ExpressRequestLike = IncomingMessage & { rawBody?: unknown; body?: unknown; path?: string };

const HINT =
  'Mount webhookMiddleware before express.json() / bodyParser for the webhook path, use express.raw({ type: () => true }) there, or keep the raw bytes with express.json({ verify: (req, res, buf) => { req.rawBody = buf } }).';

/**
 * Express 4 and 5 middleware: verifies, de-duplicates and dispatches deliveries, and answers
 * every request itself (it calls `next()` only for other paths when `path` is set, or with a bug).
 * Handlers get the Express `req` as `context.request`: a `Webhooks<M, express.Request>` types it,
 * and one typed for another framework's request is refused.
 *
 * @example
 * app.post('/webhooks', webhookMiddleware(webhooks))
 */
export function webhookMiddleware(
  webhooks: WebhooksLike<ExpressRequestLike>,
  options: ExpressMiddlewareOptions = {},
): (req: ExpressRequestLike, res: ServerResponse, next: (error?: unknown) => void) => void {
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      'pixhook: @pixhook/express: webhookMiddleware(webhooks) needs a Webhooks instance from @pixhook/core.',
    );
  }
  assertKnownOptions(options ?? {}, ['path'], 'pixhook: @pixhook/express: webhookMiddleware(webhooks, options)');
  const matches = pathMatcher(options?.path, '@pixhook/express');
  return function pixhook(req, res, next) {
    if (!matches(req.path ?? req.url ?? '/')) {
      next();
      return;
    }
    // A Buffer in req.body comes from express.raw(), a string from express.text() or a serverless
    // wrapper; req.rawBody from a verify hook.
    webhooks
      .handle({
        method: req.method,
        headers: req.headers,
        body: nodeBodyReader(req, rawCopyOf(req.body, req.rawBody), HINT),
        request: req,
      })
      .then(
        (result) => send(res, result, next),
        (error: unknown) => fail(res, error, next),
      );
  };
}

/**
 * Writes pixhook's answer, unless the response is already on its way: a timeout middleware (or the
 * app) may have answered while the body or a handler was slow, and writing headers then throws.
 * Nothing here may throw, or it would become an unhandled rejection and end the process.
 */
function send(res: ServerResponse, result: WebhookResponse, next: (error?: unknown) => void): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  try {
    res.statusCode = result.status;
    for (const name in result.headers) res.setHeader(name, result.headers[name] as string);
    res.end(result.body);
  } catch (error) {
    fail(res, error, next);
  }
}

/** Hands an error to Express while it can still answer; otherwise the connection is all that is left. */
function fail(res: ServerResponse, error: unknown, next: (error?: unknown) => void): void {
  if (!res.headersSent) {
    try {
      next(error);
      return;
    } catch {
      // fall through: an error handler that throws leaves nothing to answer with
    }
  }
  if (!res.writableEnded) res.destroy();
}
