import type { IncomingMessage } from 'node:http';
import { assertKnownOptions, describeType, tenantFrom, type WebhooksLike } from '@pixhook/core';
import { nodeBodyReader, pathMatcher, rawCopyOf } from '@pixhook/core/node';

export type { WebhooksLike };

/** Options of the Koa middleware. */
export interface KoaMiddlewareOptions {
  /**
   * Handle only requests whose `ctx.path` equals this (a trailing slash tolerated); others go to
   * `next()`.
   * @default undefined (every request that reaches the middleware)
   */
  path?: string;
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with the Koa `ctx`; its answer is passed to `webhooks.handle()` as `tenant`. Synchronous; a
   * function that throws or answers anything but a string gives no tenant, which core refuses as
   * 400 `SIGNATURE_MISMATCH`. Ignored when `secret` is not a function. The `path` option matches
   * one exact path, so with it read the tenant from the path yourself (or from a header); behind
   * @koa/router's `router.post('/webhooks/:tenant', …)` the default reads it. Declared as a method
   * so that `(ctx: Koa.Context) => …` fits.
   * @default (ctx) => ctx.params?.tenant (a `:tenant` route parameter, as @koa/router sets it)
   */
  tenant?(ctx: KoaContextLike): string | undefined;
}

/** The parts of Koa's context the middleware uses (Koa 2 and 3). */
export interface KoaContextLike {
  path: string;
  method: string;
  req: IncomingMessage;
  res: { readonly headersSent: boolean; readonly writableEnded: boolean };
  // `object &`: a type of optional properties only would refuse Koa's Request when a middleware calls this one.
  request: object & { rawBody?: unknown; body?: unknown };
  status: number;
  body: unknown;
  set(field: Record<string, string>): void;
  /** Route parameters, as @koa/router sets them. */
  params?: unknown;
}

/** The default `tenant` option: the `:tenant` route parameter of @koa/router. */
const tenantParameter = (ctx: KoaContextLike): string | undefined =>
  (ctx.params as { tenant?: string } | undefined)?.tenant;

const HINT =
  'Mount webhookMiddleware before the body parser (koa-bodyparser, @koa/bodyparser, koa-body), or let the parser keep ctx.request.rawBody.';

/**
 * Koa 2 and 3 middleware: verifies, de-duplicates and dispatches deliveries. Handlers get the Koa
 * `ctx` as `context.request`: a `Webhooks<M, Koa.Context>` types it, and one typed for another
 * framework's request is refused.
 *
 * @example
 * app.use(webhookMiddleware(webhooks, { path: '/webhooks' }))
 */
export function webhookMiddleware(
  webhooks: WebhooksLike<KoaContextLike>,
  options: KoaMiddlewareOptions = {},
): (ctx: KoaContextLike, next: () => Promise<unknown>) => Promise<void> {
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      'pixhook: @pixhook/koa: webhookMiddleware(webhooks) needs a Webhooks instance from @pixhook/core.',
    );
  }
  assertKnownOptions(options ?? {}, ['path', 'tenant'], 'pixhook: @pixhook/koa: webhookMiddleware(webhooks, options)');
  const matches = pathMatcher(options?.path, '@pixhook/koa');
  if (options?.tenant !== undefined && typeof options.tenant !== 'function') {
    throw new TypeError(
      `pixhook: @pixhook/koa: webhookMiddleware(webhooks, { tenant }) takes a function (ctx) => string | undefined, got ${describeType(options.tenant)}.`,
    );
  }
  const readTenant: (ctx: KoaContextLike) => unknown = options?.tenant ?? tenantParameter;
  return async function pixhook(ctx, next) {
    if (!matches(ctx.path)) {
      await next();
      return;
    }
    const { rawBody, body } = ctx.request;
    const result = await webhooks.handle({
      method: ctx.method,
      headers: ctx.req.headers,
      body: nodeBodyReader(ctx.req, rawCopyOf(body, rawBody), HINT),
      request: ctx,
      tenant: tenantFrom(readTenant, ctx),
    });
    // A timeout middleware (or the app) may have answered while the body or a handler was slow.
    if (ctx.res.headersSent || ctx.res.writableEnded) return;
    ctx.status = result.status;
    ctx.set(result.headers);
    ctx.body = result.body;
  };
}
