import type { Webhooks, WebhooksOptions } from '@pixhook/core';

/** Where the module mounts the webhook route. */
export interface PixhookRouteOptions {
  /**
   * The webhook route's path, exactly as the service's endpoint URL ends. The app's global prefix
   * (`app.setGlobalPrefix`) does not apply: the route is not a Nest controller's.
   * A `:name` segment is a route parameter, on Express and on Fastify: `'/webhooks/:tenant'`. As
   * with Nest's own `@Controller()`, the leading "/" may be left out.
   * @default '/webhooks'
   */
  path?: string;
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with the platform's request (Express `req`, Fastify `request`); its answer is passed to
   * `webhooks.handle()` as `tenant`. Synchronous; a function that throws or answers anything but a
   * string gives no tenant, which core refuses as 400 `SIGNATURE_MISMATCH`. Ignored when `secret`
   * is not a function. Declared as a method so that a narrower request type fits.
   * @default (request) => request.params?.tenant (a `:tenant` segment: `path: '/webhooks/:tenant'`)
   */
  tenant?(request: PlatformRequest): string | undefined;
}

/** What the `tenant` option is called with: the Express `req` or the Fastify `request`. */
// biome-ignore lint/suspicious/noExplicitAny: Express's req and Fastify's request, typed by the app
export type PlatformRequest = any;

/**
 * `PixhookModule.forRoot()` options: the options of `new Webhooks()` from `@pixhook/core`
 * (`secret`, `tolerance`, `maxBodyBytes`, `store`, `queue`, `transactions`, …) and `path`.
 * Or, instead of those, a `Webhooks` you built (`webhooks`), to share it with code outside Nest.
 */
export type PixhookModuleOptions = PixhookRouteOptions &
  (
    | (WebhooksOptions & { webhooks?: undefined })
    | {
        /** A `Webhooks` built elsewhere; `@OnWebhook()` methods are added to its handlers. */
        // biome-ignore lint/suspicious/noExplicitAny: any event map, request and transaction type
        webhooks: Webhooks<any, any, any>;
      }
  );
