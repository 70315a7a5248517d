import type { IncomingMessage, ServerResponse } from 'node:http';
import { assertKnownOptions, describeType, tenantFrom, type WebhooksLike } from '@pixhook/core';
import { failAnswer, nodeBodyReader, pathMatcher, rawCopyOf, sendAnswer } from '@pixhook/core/node';

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
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with the Express `req`; its answer is passed to `webhooks.handle()` as `tenant`. Synchronous; a
   * function that throws or answers anything but a string gives no tenant, which core refuses as
   * 400 `SIGNATURE_MISMATCH`. Ignored when `secret` is not a function.
   * Declared as a method so that `(req: express.Request) => …` fits.
   * @default (req) => req.params?.tenant (a `:tenant` route parameter: `app.post('/webhooks/:tenant', …)`)
   */
  tenant?(req: ExpressRequestLike): string | undefined;
}

/** The parts of an Express `req` the middleware reads (Express 4 and 5); `express.Request` is one. */
export type ExpressRequestLike = IncomingMessage & {
  rawBody?: unknown;
  body?: unknown;
  path?: string;
  params?: unknown;
};

/** The default `tenant` option: the `:tenant` route parameter. */
const tenantParameter = (req: ExpressRequestLike): string | undefined =>
  (req.params as { tenant?: string } | undefined)?.tenant;

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
  assertKnownOptions(
    options ?? {},
    ['path', 'tenant'],
    'pixhook: @pixhook/express: webhookMiddleware(webhooks, options)',
  );
  const matches = pathMatcher(options?.path, '@pixhook/express');
  if (options?.tenant !== undefined && typeof options.tenant !== 'function') {
    throw new TypeError(
      `pixhook: @pixhook/express: webhookMiddleware(webhooks, { tenant }) takes a function (req) => string | undefined, got ${describeType(options.tenant)}.`,
    );
  }
  const readTenant: (req: ExpressRequestLike) => unknown = options?.tenant ?? tenantParameter;
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
        tenant: tenantFrom(readTenant, req),
      })
      .then(
        (result) => sendAnswer(res, result, next),
        (error: unknown) => failAnswer(res, error, next),
      );
  };
}
