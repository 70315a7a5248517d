import type {
  ALBEvent,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  Context,
  LambdaFunctionURLEvent,
} from 'aws-lambda';

/**
 * Every event the handler answers: API Gateway REST APIs (Lambda proxy integration) and HTTP APIs
 * with payload format 1.0 (`APIGatewayProxyEvent`), HTTP APIs with payload format 2.0
 * (`APIGatewayProxyEventV2`), Lambda Function URLs (`LambdaFunctionURLEvent`, the same shape) and
 * Application Load Balancer target groups (`ALBEvent`), typed by `@types/aws-lambda`.
 *
 * @example
 * import type { LambdaHttpEvent } from '@pixhook/lambda'
 * const isV2 = (event: LambdaHttpEvent) => 'version' in event && event.version === '2.0'
 */
export type LambdaHttpEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2 | LambdaFunctionURLEvent | ALBEvent;

/**
 * What handlers get as `context.request`: the invocation's event, exactly as Lambda passed it, and
 * its Lambda `Context`. Narrow `TEvent` when only one source invokes the function.
 *
 * @typeParam TEvent - the event type; @default LambdaHttpEvent
 * @example
 * const webhooks = new Webhooks<Events, LambdaRequest<LambdaFunctionURLEvent>>({ secret })
 * webhooks.on('image.created', (event, { request }) => {
 *   console.log(request.context.awsRequestId, request.event.requestContext.http.sourceIp)
 * })
 */
export interface LambdaRequest<TEvent extends LambdaHttpEvent = LambdaHttpEvent> {
  /** The invocation's event, untouched. */
  event: TEvent;
  /** The invocation's Lambda context (`awsRequestId`, `getRemainingTimeInMillis()`, …). */
  context: Context;
}

/**
 * The answer to API Gateway (REST API, HTTP API payload 1.0 or 2.0) and Function URL events. It fits
 * `APIGatewayProxyResult` and `APIGatewayProxyStructuredResultV2`.
 *
 * @example
 * const result = (await handler(event, context)) as LambdaProxyResult
 * result.statusCode // 200
 */
export interface LambdaProxyResult {
  statusCode: number;
  /** Lower-case names: `content-type`, and `allow` with a 405. */
  headers: Record<string, string>;
  /** JSON: `{"received":true}`, or `{"error":{"code","message"}}`. */
  body: string;
  isBase64Encoded: false;
}

interface AlbResultBase {
  statusCode: number;
  /** The status line's text, such as `200 OK`. */
  statusDescription: string;
  body: string;
  isBase64Encoded: false;
}

/**
 * The answer to an Application Load Balancer event: `headers` when the target group sends
 * single-value headers, `multiValueHeaders` when multi-value headers are on (the load balancer
 * requires the answer to use the form the request came in). It fits `ALBResult`.
 *
 * @example
 * const result = (await handler(albEvent, context)) as LambdaAlbResult
 * result.statusDescription // '200 OK'
 */
export type LambdaAlbResult =
  | (AlbResultBase & { headers: Record<string, string>; multiValueHeaders?: never })
  | (AlbResultBase & { multiValueHeaders: Record<string, string[]>; headers?: never });

/**
 * Any answer of the handler; its overloads give the one that fits each event type.
 *
 * @example
 * const result: LambdaHttpResult = await handler(event as LambdaHttpEvent, context)
 */
export type LambdaHttpResult = LambdaProxyResult | LambdaAlbResult;

/**
 * The Lambda handler `createLambdaHandler()` returns: `async (event, context) => result`, answering
 * each source in the shape it expects. It fits `APIGatewayProxyHandler`,
 * `APIGatewayProxyHandlerV2`, `LambdaFunctionURLHandler` and `ALBHandler`. It rejects (an
 * invocation error) only for an event that is none of these sources.
 *
 * @example
 * export const handler: LambdaHandler = createLambdaHandler(webhooks)
 */
export interface LambdaHandler {
  /** API Gateway REST API (Lambda proxy integration), or HTTP API payload format 1.0. */
  (event: APIGatewayProxyEvent, context: Context): Promise<LambdaProxyResult>;
  /** API Gateway HTTP API payload format 2.0, or a Lambda Function URL. */
  (event: APIGatewayProxyEventV2, context: Context): Promise<LambdaProxyResult>;
  /** Application Load Balancer target group, with or without multi-value headers. */
  (event: ALBEvent, context: Context): Promise<LambdaAlbResult>;
  /** An event of any of these sources. */
  (event: LambdaHttpEvent, context: Context): Promise<LambdaHttpResult>;
}
