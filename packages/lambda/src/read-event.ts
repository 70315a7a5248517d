import { type BodyReader, describeType } from '@pixhook/core';
import { eventHeaders } from './event-headers.js';
import { eventBodyReader } from './read-body.js';

/** Which answer shape an event needs: API Gateway / Function URL, or ALB in one of its two header forms. */
export type AnswerShape = 'proxy' | 'alb' | 'alb-multi-value';

/** An HTTP request read from a Lambda event, as `webhooks.handle()` takes it. */
export interface EventRequest {
  shape: AnswerShape;
  method: string;
  headers: Record<string, string>;
  body: BodyReader;
}

type Fields = Record<string, unknown>;
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null;

/**
 * The method, headers and body of an API Gateway (REST, HTTP API 1.0 or 2.0), Function URL or ALB
 * event. Throws a TypeError for any other event: answering it would acknowledge something that is
 * not a delivery, so it fails the invocation instead.
 */
export function readEvent(event: unknown): EventRequest {
  if (isObject(event) && isObject(event.requestContext)) {
    const context = event.requestContext;
    // HTTP API payload 2.0 and Function URLs: the method sits in requestContext.http.
    if (event.version === '2.0' && isObject(context.http) && typeof context.http.method === 'string') {
      return request('proxy', context.http.method, event);
    }
    if (typeof event.httpMethod === 'string') {
      // ALB: the answer must use multiValueHeaders exactly when the request did.
      if (isObject(context.elb)) {
        return request(isObject(event.multiValueHeaders) ? 'alb-multi-value' : 'alb', event.httpMethod, event);
      }
      return request('proxy', event.httpMethod, event);
    }
  }
  throw new TypeError(
    `pixhook: @pixhook/lambda: the handler was invoked with ${describeEvent(event)}, not an HTTP request. It answers API Gateway REST APIs (Lambda proxy integration), HTTP APIs (payload format 1.0 or 2.0), Lambda Function URLs and Application Load Balancer target groups; give other triggers (SQS, EventBridge, a direct invoke) their own function.`,
  );
}

function request(shape: AnswerShape, method: string, event: Fields): EventRequest {
  return {
    shape,
    method,
    headers: eventHeaders(event.headers, event.multiValueHeaders),
    body: eventBodyReader(event.body, event.isBase64Encoded),
  };
}

/** The event's type and first keys, enough to tell an SQS batch (`Records`) from an empty invoke. */
function describeEvent(event: unknown): string {
  if (event === undefined) return 'no event (undefined)';
  if (!isObject(event) || Array.isArray(event)) return describeType(event);
  const keys = Object.keys(event);
  if (keys.length === 0) return 'an empty object';
  const shown = keys.slice(0, 5).map((key) => JSON.stringify(key.slice(0, 40)));
  return `an object with keys ${shown.join(', ')}${keys.length > 5 ? ', …' : ''}`;
}
