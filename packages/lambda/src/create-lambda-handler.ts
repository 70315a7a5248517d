import { assertKnownOptions, type WebhooksLike } from '@pixhook/core';
import type { Context } from 'aws-lambda';
import { toResult } from './answer.js';
import { readEvent } from './read-event.js';
import type { LambdaHandler, LambdaHttpEvent, LambdaHttpResult, LambdaRequest } from './types.js';

/**
 * Options of `createLambdaHandler`; none yet, kept so options can be added without a breaking change.
 *
 * @example
 * export const handler = createLambdaHandler(webhooks, {})
 */
export type LambdaHandlerOptions = Record<string, never>;

/**
 * An AWS Lambda handler for API Gateway REST APIs (Lambda proxy integration), HTTP APIs (payload
 * format 1.0 or 2.0), Lambda Function URLs and Application Load Balancer target groups: verifies,
 * de-duplicates and dispatches deliveries and answers every request in the shape its source
 * expects (405 for other methods). Handlers get `{ event, context }` as `context.request`. It
 * answers whatever route reaches the function, so it takes no path. An event from any other
 * source (SQS, a direct invoke) fails the invocation with a TypeError rather than being answered.
 *
 * @param webhooks - a `Webhooks` from `@pixhook/core`: `Webhooks<M>` or `Webhooks<M, LambdaRequest>`
 * @param options - reserved; @default {}
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
  assertKnownOptions(options, [], 'pixhook: @pixhook/lambda: createLambdaHandler(webhooks, options)');
  async function pixhook(event: LambdaHttpEvent, context: Context): Promise<LambdaHttpResult> {
    const { shape, method, headers, body } = readEvent(event);
    const response = await webhooks.handle({ method, headers, body, request: { event, context } });
    return toResult(shape, response);
  }
  return pixhook as LambdaHandler;
}
