/**
 * The Fastify plugin takes a `Webhooks` whose request type is Fastify's `request` (or unknown, the
 * default), and refuses one typed for another framework's request (vitest typecheck).
 */
import { Webhooks } from '@pixhook/core';
import pixhook from '@pixhook/fastify';
import type { Request as ExpressRequest } from 'express';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';

type Events = { 'image.created': { url: string } };

describe('register(pixhook, { webhooks }) and the request type', () => {
  it('accepts the default request type and a Fastify request', () => {
    const app = Fastify();
    void app.register(pixhook, { webhooks: new Webhooks<Events>({ secret: 's' }) });
    const typed = new Webhooks<Events, FastifyRequest>({ secret: 's' });
    typed.onAny((_event, context) => expectTypeOf(context.request.log.info).toBeFunction());
    void app.register(pixhook, { webhooks: typed, path: '/hooks', prefix: '/api' });
  });

  it('the tenant option takes the Fastify request', () => {
    const app = Fastify();
    const webhooks = new Webhooks<Events, FastifyRequest>({ secret: () => 's' });
    type Routed = FastifyRequest<{ Params: { tenant: string } }>;
    void app.register(pixhook, {
      webhooks,
      path: '/webhooks/:tenant',
      tenant: (request: Routed) => request.params.tenant,
    });
    void app.register(pixhook, { webhooks, tenant: (request) => request.hostname });
    // @ts-expect-error the tenant is a function of the request
    void app.register(pixhook, { webhooks, tenant: 'acme' });
  });

  it('refuses a Webhooks typed for fetch or Express', () => {
    const app = Fastify();
    // @ts-expect-error handlers would be told they get a fetch Request
    void app.register(pixhook, { webhooks: new Webhooks<Events, Request>({ secret: 's' }) });
    // @ts-expect-error nor an Express req
    void app.register(pixhook, { webhooks: new Webhooks<Events, ExpressRequest>({ secret: 's' }) });
  });
});
