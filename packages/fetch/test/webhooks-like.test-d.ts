/**
 * The fetch handler takes a `Webhooks` whose request type is the Web `Request` (or unknown, the
 * default, or a Request subclass such as Next.js's NextRequest), and refuses one typed for a Node
 * framework's request (vitest typecheck).
 */
import type { IncomingMessage } from 'node:http';
import { Webhooks } from '@pixhook/core';
import { createFetchHandler, type FetchHandler, type WebhooksLike } from '@pixhook/fetch';
import type { Request as ExpressRequest } from 'express';
import type { FastifyRequest } from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';

type Events = { 'image.created': { url: string } };
/** Next.js's request: a Request with more. */
interface NextRequestLike extends Request {
  nextUrl: URL;
}

describe('createFetchHandler(webhooks) and the request type', () => {
  it('accepts the default request type, Request and a Request subclass', () => {
    expectTypeOf(createFetchHandler(new Webhooks<Events>({ secret: 's' }))).toEqualTypeOf<FetchHandler>();
    expectTypeOf(createFetchHandler(new Webhooks<Events, Request>({ secret: 's' }))).toEqualTypeOf<FetchHandler>();
    createFetchHandler(new Webhooks<Events, NextRequestLike>({ secret: 's' }));
  });

  it('refuses a Webhooks typed for a Node framework', () => {
    // @ts-expect-error handlers would be told they get an Express req
    createFetchHandler(new Webhooks<Events, ExpressRequest>({ secret: 's' }));
    // @ts-expect-error nor a Fastify request
    createFetchHandler(new Webhooks<Events, FastifyRequest>({ secret: 's' }));
    // @ts-expect-error nor a Node IncomingMessage
    createFetchHandler(new Webhooks<Events, IncomingMessage>({ secret: 's' }));
  });

  it('WebhooksLike is the one type from core, carrying the request type', () => {
    expectTypeOf<WebhooksLike<Request>['handle']>().parameter(0).toHaveProperty('request');
    expectTypeOf<Parameters<WebhooksLike<Request>['handle']>[0]['request']>().toEqualTypeOf<Request | undefined>();
  });
});
