import { assertKnownOptions, describeType, tenantFrom, type WebhooksLike } from '@pixhook/core';
import { requestBodyReader } from './read-body.js';

/** Options of `createFetchHandler`. */
export interface FetchHandlerOptions {
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with the `Request`; its answer is passed to `webhooks.handle()` as `tenant`. A `Request` has no
   * route parameters, so read the tenant from the URL (or a header) yourself, or from your
   * framework's parameters before calling the handler. Synchronous; a function that throws or
   * answers anything but a string gives no tenant, which core refuses as 400 `SIGNATURE_MISMATCH`.
   * Ignored when `secret` is not a function.
   * @default undefined (no tenant)
   * @example
   * createFetchHandler(webhooks, { tenant: (request) => new URL(request.url).pathname.split('/').at(-1) })
   */
  tenant?(request: Request): string | undefined;
}

/** A Web-standard request handler, as Next.js, Bun, Deno, Hono and Workers call them. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * A Web-standard `(Request) => Promise<Response>` handler: verifies, de-duplicates and dispatches
 * deliveries, and answers every request itself (405 for other methods). Handlers get the
 * `Request` as `context.request`. On runtimes without `node:crypto` (Workers without Node
 * compatibility, browsers) signatures are checked with Web Crypto.
 *
 * @param webhooks - a `Webhooks` from `@pixhook/core`: `Webhooks<M>` or `Webhooks<M, Request>`
 * @param options - `tenant`; @default {}
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
  assertKnownOptions(options, ['tenant'], 'pixhook: @pixhook/fetch: createFetchHandler(webhooks, options)');
  const readTenant = options.tenant;
  if (readTenant !== undefined && typeof readTenant !== 'function') {
    throw new TypeError(
      `pixhook: @pixhook/fetch: createFetchHandler(webhooks, { tenant }) takes a function (request) => string | undefined, got ${describeType(readTenant)}.`,
    );
  }
  return async function pixhook(request: Request): Promise<Response> {
    const result = await webhooks.handle({
      method: request.method,
      headers: request.headers,
      body: requestBodyReader(request),
      request,
      tenant: readTenant === undefined ? undefined : tenantFrom(readTenant, request),
    });
    return new Response(result.body, { status: result.status, headers: result.headers });
  };
}
