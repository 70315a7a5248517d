import type { HandleInput, WebhookResponse } from './seams/handle-input.js';

/**
 * What an adapter needs from a `Webhooks`: its `handle()`, for requests of type `TRequest` (what
 * the adapter passes as `context.request`). Structural, so a `Webhooks` from another copy of
 * `@pixhook/core` (an ESM and a CJS one, say) fits too.
 *
 * A `Webhooks<M, R>` fits an adapter whose request type and `R` are related: the default
 * `Webhooks<M>` (`unknown`), `Webhooks<M, express.Request>` on Express, or your own
 * `interface AuthedRequest extends express.Request` (a method's parameter is compared both ways, so
 * a narrower request type than the adapter's is accepted, as Express and Koa apps need). A
 * `Webhooks<M, Request>` (fetch) given to the Express middleware is a type error, rather than
 * handlers told they get a fetch `Request`.
 *
 * @typeParam TRequest - what the adapter passes as `context.request` (Express `req`, Fastify
 *   `request`, Koa `ctx`, the fetch `Request`)
 * @example
 * export function webhookMiddleware(webhooks: WebhooksLike<IncomingMessage>) {
 *   return (req: IncomingMessage, body: Uint8Array) =>
 *     webhooks.handle({ method: req.method, headers: req.headers, body, request: req })
 * }
 */
export interface WebhooksLike<TRequest = unknown> {
  /** `webhooks.handle()`: answers one request; never rejects. */
  handle(input: HandleInput<TRequest>): Promise<WebhookResponse>;
}
