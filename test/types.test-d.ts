/**
 * How the request type and the adapters fit each framework (vitest typecheck): run with
 * `npx vitest run test/types.test-d.ts`. What core itself infers: packages/core/test/types.test-d.ts.
 */
import { Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { webhookMiddleware as expressMiddleware } from '@pixhook/express';
import pixhookFastify from '@pixhook/fastify';
import { webhookMiddleware as koaMiddleware } from '@pixhook/koa';
import type { Request as ExpressRequest } from 'express';
import express from 'express5';
import Fastify, { type FastifyRequest } from 'fastify';
import Koa from 'koa3';
import { describe, expectTypeOf, it } from 'vitest';

interface MyEvents {
  'image.created': { id: string; url: string; bytes: number };
  'quota.warned': { used_percent: number };
}

const webhooks = new Webhooks({ secret: 'whsec_types' });
const typed = new Webhooks<MyEvents>({ secret: 'whsec_types' });

describe('the request type', () => {
  it('Webhooks<Map, express.Request> types context.request in handlers and onError', () => {
    const app = new Webhooks<MyEvents, ExpressRequest>({ secret: 's' });
    app.on('image.created', (event, context) => {
      expectTypeOf(context.request).toEqualTypeOf<ExpressRequest>();
      expectTypeOf(event.data.object.bytes).toEqualTypeOf<number>();
    });
    app.onAny((_event, context) => expectTypeOf(context.request).toEqualTypeOf<ExpressRequest>());
    app.onError((error, context) => {
      expectTypeOf(error).toEqualTypeOf<WebhookVerificationError>();
      expectTypeOf(context.request).toEqualTypeOf<ExpressRequest>();
    });
  });

  it('Fastify request typing', () => {
    const app = new Webhooks<Record<never, never>, FastifyRequest>({ secret: 's' });
    app.onAny((_event, context) => expectTypeOf(context.request.log.info).toBeFunction());
  });
});

describe('adapters fit their frameworks', () => {
  it('Express, Fastify and Koa accept what pixhook gives them', () => {
    const app = express();
    app.post('/webhooks', expressMiddleware(webhooks));
    app.use('/webhooks', expressMiddleware(typed, { path: '/webhooks' }));
    const fastify = Fastify();
    void fastify.register(pixhookFastify, { webhooks, path: '/webhooks' });
    // @ts-expect-error the Fastify plugin needs webhooks
    void fastify.register(pixhookFastify, { path: '/webhooks' });
    const koa = new Koa();
    koa.use(koaMiddleware(webhooks, { path: '/webhooks' }));
  });
});
