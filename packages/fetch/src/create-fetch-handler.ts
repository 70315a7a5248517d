import { assertKnownOptions, type WebhooksLike } from '@pixhook/core';
import { requestBodyReader } from './read-body.js';

/** Options of `createFetchHandler`; none yet, kept so options can be added without a breaking change. */
export type FetchHandlerOptions = Record<string, never>;

/** A Web-standard request handler, as Next.js, Bun, Deno, Hono and Workers call them. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * A Web-standard `(Request) => Promise<Response>` handler: verifies, de-duplicates and dispatches
 * deliveries, and answers every request itself (405 for other methods). Handlers get the
 * `Request` as `context.request`. On runtimes without `node:crypto` (Workers without Node
 * compatibility, browsers) signatures are checked with Web Crypto.
 *
 * @param webhooks - a `Webhooks` from `@pixhook/core`: `Webhooks<M>` or `Webhooks<M, Request>`
 * @param options - reserved; @default {}
 * @example
 * // app/webhooks/route.ts (Next.js)
 * export const POST = createFetchHandler(webhooks)
 * @example
 * app.post('/webhooks', (c) => handler(c.req.raw)) // Hono
 */
export function createFetchHandler(webhooks: WebhooksLike<Request>, options: FetchHandlerOptions = {}): FetchHandler {
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      'pixhook: @pixhook/fetch: createFetchHandler(webhooks) needs a Webhooks instance from @pixhook/core.',
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('pixhook: @pixhook/fetch: createFetchHandler(webhooks, options) takes an options object.');
  }
  assertKnownOptions(options, [], 'pixhook: @pixhook/fetch: createFetchHandler(webhooks, options)');
  return async function pixhook(request: Request): Promise<Response> {
    const result = await webhooks.handle({
      method: request.method,
      headers: request.headers,
      body: requestBodyReader(request),
      request,
    });
    return new Response(result.body, { status: result.status, headers: result.headers });
  };
}
