import { assertKnownOptions, describeType, tenantFrom, type WebhooksLike } from '@pixhook/core';
import type { Context } from 'aws-lambda';
import { toResult } from './answer.js';
import { readEvent } from './read-event.js';
import type { LambdaHandler, LambdaHttpEvent, LambdaHttpResult, LambdaRequest } from './types.js';

/**
 * Options of `createLambdaHandler`.
 *
 * @example
 * export const handler = createLambdaHandler(webhooks, { tenant: ({ event }) => event.headers['x-tenant'] })
 */
export interface LambdaHandlerOptions {
  /**
   * Whose delivery this is, when `secret` is a function of the tenant (a secret per tenant): called
   * with `{ event, context }` (what handlers get as `context.request`); its answer is passed to
   * `webhooks.handle()` as `tenant`. Function URLs and load balancers have no path parameters:
   * read the tenant from `event.rawPath` / `event.path` (or a header). Synchronous; a function
   * that throws or answers anything but a string gives no tenant, which core refuses as 400
   * `SIGNATURE_MISMATCH`. Ignored when `secret` is not a function. Declared as a method so that a
   * narrower `LambdaRequest<…>` fits.
   * @default ({ event }) => event.pathParameters?.tenant (API Gateway's `{tenant}` path parameter, as in `POST /webhooks/{tenant}`)
   */
  tenant?(request: LambdaRequest): string | undefined;
}

/** The default `tenant` option: API Gateway's `{tenant}` path parameter (REST and HTTP APIs). */
const tenantParameter = ({ event }: LambdaRequest): string | undefined =>
  (event as { pathParameters?: { tenant?: string } | null }).pathParameters?.tenant;

/**
 * An AWS Lambda handler for API Gateway REST APIs (Lambda proxy integration), HTTP APIs (payload
 * format 1.0 or 2.0), Lambda Function URLs and Application Load Balancer target groups: verifies,
 * de-duplicates and dispatches deliveries and answers every request in the shape its source
 * expects (405 for other methods). Handlers get `{ event, context }` as `context.request`. It
 * answers whatever route reaches the function, so it takes no path. An event from any other
 * source (SQS, a direct invoke) fails the invocation with a TypeError rather than being answered.
 *
 * @param webhooks - a `Webhooks` from `@pixhook/core`: `Webhooks<M>` or `Webhooks<M, LambdaRequest>`
 * @param options - `tenant`; @default {}
 * @example
 * // handler.mjs
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET })
 * webhooks.on('image.created', async (event, { request }) => console.log(request.context.awsRequestId))
 * export const handler = createLambdaHandler(webhooks)
 */
export function createLambdaHandler(
  webhooks: WebhooksLike<LambdaRequest>,
  options: LambdaHandlerOptions = {},
): LambdaHandler {
  if (typeof webhooks?.handle !== 'function') {
    throw new TypeError(
      'pixhook: @pixhook/lambda: createLambdaHandler(webhooks) needs a Webhooks instance from @pixhook/core.',
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('pixhook: @pixhook/lambda: createLambdaHandler(webhooks, options) takes an options object.');
  }
  assertKnownOptions(options, ['tenant'], 'pixhook: @pixhook/lambda: createLambdaHandler(webhooks, options)');
  if (options.tenant !== undefined && typeof options.tenant !== 'function') {
    throw new TypeError(
      `pixhook: @pixhook/lambda: createLambdaHandler(webhooks, { tenant }) takes a function ({ event, context }) => string | undefined, got ${describeType(options.tenant)}.`,
    );
  }
  const readTenant: (request: LambdaRequest) => unknown = options.tenant ?? tenantParameter;
  async function pixhook(event: LambdaHttpEvent, context: Context): Promise<LambdaHttpResult> {
    const { shape, method, headers, body } = readEvent(event);
    const request = { event, context };
    const tenant = tenantFrom(readTenant, request);
    const response = await webhooks.handle({ method, headers, body, request, tenant });
    return toResult(shape, response);
  }
  return pixhook as LambdaHandler;
}
