/**
 * What editors must infer for @pixhook/fetch (vitest typecheck): the handler fits Next.js, Bun,
 * Hono and Workers, and handlers see the `Request` as `context.request`.
 */
import { Webhooks } from '@pixhook/core';
import { createFetchHandler, type FetchHandler } from '@pixhook/fetch';
import type { Context } from 'hono';
import { describe, expectTypeOf, it } from 'vitest';

describe('@pixhook/fetch types', () => {
  const webhooks = new Webhooks<{ 'image.created': { url: string } }, Request>({ secret: 'whsec_types' });

  it('createFetchHandler returns (request: Request) => Promise<Response>', () => {
    const handler = createFetchHandler(webhooks);
    expectTypeOf(handler).toEqualTypeOf<FetchHandler>();
    expectTypeOf(handler).parameter(0).toEqualTypeOf<Request>();
    expectTypeOf(handler).returns.toEqualTypeOf<Promise<Response>>();
  });

  it('fits a Next.js POST export, a Worker and a Hono route', () => {
    const handler = createFetchHandler(webhooks);
    // Next.js passes (request: NextRequest, context: { params }) and NextRequest extends Request.
    expectTypeOf(handler).toExtend<(request: Request, context: { params: Promise<object> }) => Promise<Response>>();
    expectTypeOf({ fetch: handler }).toExtend<{
      fetch(request: Request, env: unknown, ctx: unknown): Promise<Response>;
    }>();
    expectTypeOf((c: Context) => handler(c.req.raw)).returns.toEqualTypeOf<Promise<Response>>();
  });

  it('handlers get the Request as context.request', () => {
    webhooks.on('image.created', (event, context) => {
      expectTypeOf(context.request).toEqualTypeOf<Request>();
      expectTypeOf(event.data.object.url).toEqualTypeOf<string>();
    });
  });

  it('rejects what is not a Webhooks', () => {
    // @ts-expect-error a handler needs a Webhooks
    createFetchHandler({});
    // @ts-expect-error options are an object
    createFetchHandler(webhooks, 'fast');
    // @ts-expect-error the tenant is a function of the Request
    createFetchHandler(webhooks, { tenant: 'acme' });
  });

  it('the tenant option takes the Request', () => {
    const handler = createFetchHandler(webhooks, {
      tenant: (request) => new URL(request.url).pathname.split('/').at(-1),
    });
    expectTypeOf(handler).toEqualTypeOf<FetchHandler>();
  });
});
