import type { Webhooks, WebhooksOptions } from '@pixhook/core';

/** Where the module mounts the webhook route. */
export interface PixhookRouteOptions {
  /**
   * The webhook route's path, exactly as the service's endpoint URL ends. The app's global prefix
   * (`app.setGlobalPrefix`) does not apply: the route is not a Nest controller's.
   * @default '/webhooks'
   */
  path?: string;
}

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
