/**
 * The Express middleware takes a `Webhooks` whose request type is Express's `req` (or unknown,
 * the default), and refuses one typed for another framework's request (vitest typecheck).
 */
import { Webhooks, type WebhooksLike } from '@pixhook/core';
import { webhookMiddleware } from '@pixhook/express';
import type { Request as ExpressRequest } from 'express';
import express from 'express5';
import type { FastifyRequest } from 'fastify';
import type { Context as KoaContext } from 'koa';
import { describe, expectTypeOf, it } from 'vitest';

type Events = { 'image.created': { url: string } };
interface AuthedRequest extends ExpressRequest {
  user: { id: string };
}

describe('webhookMiddleware(webhooks) and the request type', () => {
  it('accepts the default request type, express.Request and a narrower request of the app', () => {
    const app = express();
    app.post('/a', webhookMiddleware(new Webhooks({ secret: 's' })));
    app.post('/b', webhookMiddleware(new Webhooks<Events>({ secret: 's' })));
    const typed = new Webhooks<Events, ExpressRequest>({ secret: 's' });
    typed.on('image.created', (_event, context) => expectTypeOf(context.request).toEqualTypeOf<ExpressRequest>());
    app.post('/c', webhookMiddleware(typed));
    app.use('/d', webhookMiddleware(new Webhooks<Events, AuthedRequest>({ secret: 's' })));
  });

  it('refuses a Webhooks typed for fetch, Fastify or Koa', () => {
    // @ts-expect-error handlers would be told they get a fetch Request
    webhookMiddleware(new Webhooks<Events, Request>({ secret: 's' }));
    // @ts-expect-error nor a Fastify request
    webhookMiddleware(new Webhooks<Events, FastifyRequest>({ secret: 's' }));
    // @ts-expect-error nor a Koa context
    webhookMiddleware(new Webhooks<Events, KoaContext>({ secret: 's' }));
    // @ts-expect-error nor something that is not a request at all
    webhookMiddleware(new Webhooks<Events, string>({ secret: 's' }));
  });

  it('the tenant option takes the Express req, typed as the app types it', () => {
    const typed = new Webhooks<Events, ExpressRequest<{ tenant: string }>>({ secret: () => 's' });
    webhookMiddleware(typed, { tenant: (req: ExpressRequest<{ tenant: string }>) => req.params.tenant });
    webhookMiddleware(new Webhooks({ secret: () => 's' }), { tenant: (req) => req.headers.host });
    // @ts-expect-error a header sent several times is a list, not a tenant
    webhookMiddleware(typed, { tenant: (req: ExpressRequest) => req.headers['x-tenant'] });
    // @ts-expect-error the tenant is a function of the request
    webhookMiddleware(typed, { tenant: 'acme' });
  });

  it('takes anything with handle(), such as a Webhooks from another copy of core', () => {
    const other: WebhooksLike<ExpressRequest> = { handle: async () => ({ status: 200, headers: {}, body: '' }) };
    webhookMiddleware(other);
    // @ts-expect-error an object without handle() is not a Webhooks
    webhookMiddleware({});
  });
});
