/**
 * Where pixhook writes its own lines (failures nobody listens for, the last-chance alarm): any
 * logger with pino's `(fields, message)` methods. pino itself, Fastify's `fastify.log` and
 * `request.log`, and Nest's `Logger` through `nestLogger()` of `@pixhook/nestjs` fit.
 *
 * @example
 * new Webhooks({ secret, logger: pino() })
 * new Webhooks({ secret, logger: fastify.log })
 */
export interface WebhooksLogger {
  /** A failure of status 500 and above that no `onError` listener heard, and the last-chance alarm. */
  error(fields: Record<string, unknown>, message: string): unknown;
  /** A warning nobody listened for (`DUPLICATE_WINDOW_SHORTENED`). */
  warn(fields: Record<string, unknown>, message: string): unknown;
}

/** True when `value` has the two methods pixhook calls. */
export function isWebhooksLogger(value: unknown): value is WebhooksLogger {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as WebhooksLogger).error === 'function' &&
    typeof (value as WebhooksLogger).warn === 'function'
  );
}
