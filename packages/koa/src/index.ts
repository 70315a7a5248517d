import type { IncomingMessage } from 'node:http';
import { assertKnownOptions, type WebhooksLike } from '@pixhook/core';
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
}

/** The parts of Koa's context the middleware uses (Koa 2 and 3). */
export interface KoaContextLike {
  path: string;
  method: string;
  req: IncomingMessage;
  res: { readonly headersSent: boolean; readonly writableEnded: boolean };
  request: { rawBody?: unknown; body?: unknown };
  status: number;
  body: unknown;
  set(field: Record<string, string>): void;
}

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
  assertKnownOptions(options ?? {}, ['path'], 'pixhook: @pixhook/koa: webhookMiddleware(webhooks, options)');
  const matches = pathMatcher(options?.path, '@pixhook/koa');
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
    });
    // A timeout middleware (or the app) may have answered while the body or a handler was slow.
    if (ctx.res.headersSent || ctx.res.writableEnded) return;
    ctx.status = result.status;
    ctx.set(result.headers);
    ctx.body = result.body;
  };
}
