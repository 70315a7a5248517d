/**
 * The Koa middleware takes a `Webhooks` whose request type is Koa's `ctx` (or unknown, the
 * default), and refuses one typed for another framework's request (vitest typecheck).
 */
import { Webhooks } from '@pixhook/core';
import { webhookMiddleware } from '@pixhook/koa';
import type { Request as ExpressRequest } from 'express';
import type { FastifyRequest } from 'fastify';
import Koa, { type Context as KoaContext } from 'koa3';
import { describe, expectTypeOf, it } from 'vitest';

type Events = { 'image.created': { url: string } };

describe('webhookMiddleware(webhooks) and the request type', () => {
  it('accepts the default request type and a Koa context', () => {
    const app = new Koa();
    app.use(webhookMiddleware(new Webhooks<Events>({ secret: 's' }), { path: '/a' }));
    const typed = new Webhooks<Events, KoaContext>({ secret: 's' });
    typed.onAny((_event, context) => expectTypeOf(context.request.path).toEqualTypeOf<string>());
    app.use(webhookMiddleware(typed, { path: '/b' }));
  });

  it('the tenant option takes the Koa ctx; the middleware can be called from another middleware', () => {
    const app = new Koa();
    const typed = new Webhooks<Events, KoaContext>({ secret: () => 's' });
    const onWebhook = webhookMiddleware(typed, { tenant: (ctx: KoaContext) => ctx.path.split('/')[2] });
    app.use((ctx, next) => (ctx.path.startsWith('/webhooks/') ? onWebhook(ctx, next) : next()));
    app.use(webhookMiddleware(new Webhooks({ secret: () => 's' }), { tenant: (ctx) => ctx.path }));
    // @ts-expect-error the tenant is a function of the ctx
    webhookMiddleware(typed, { tenant: 'acme' });
  });

  it('refuses a Webhooks typed for fetch, Express or Fastify', () => {
    // @ts-expect-error handlers would be told they get a fetch Request
    webhookMiddleware(new Webhooks<Events, Request>({ secret: 's' }));
    // @ts-expect-error nor an Express req
    webhookMiddleware(new Webhooks<Events, ExpressRequest>({ secret: 's' }));
    // @ts-expect-error nor a Fastify request
    webhookMiddleware(new Webhooks<Events, FastifyRequest>({ secret: 's' }));
  });
});
