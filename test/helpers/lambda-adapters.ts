/**
 * `@pixhook/lambda` in the contract table, once per event source: each request becomes the event
 * that source would invoke the function with (built from the fixtures AWS documents, in
 * packages/lambda/test), the handler is invoked with a Lambda context, and its result must be
 * exactly the shape that source expects before it is read as an answer.
 */
import { createLambdaHandler } from '@pixhook/lambda';
import { type EventInput, eventFor, readResult, type Shape } from '../../packages/lambda/test/helpers/events.js';
import { type AdapterUnderTest, type Client, type TestRequest, tenantOfPath } from './http.js';
import { lambdaContext } from './lambda-context.mjs';

/** `x-service-signature` → `X-Service-Signature`: the case HTTP/1.1 clients send. */
const canonical = (name: string): string =>
  name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

/**
 * The request as the source received it: API Gateway and the load balancer buffer a streamed body
 * whole. `route`: the API Gateway route that matched (REST and HTTP APIs set `pathParameters`).
 */
async function received(request: TestRequest, shape: Shape, route?: string): Promise<EventInput> {
  const body = typeof request.body === 'function' ? Buffer.concat(await request.body().toArray()) : request.body;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    // A REST API passes names in the client's case; the others lower-case them (the builder does).
    headers[shape === 'rest-v1' ? canonical(name) : name] = value;
  }
  // A client sends Content-Length with a body it holds; a streamed one went chunked, without.
  if (typeof request.body === 'string' || request.body instanceof Uint8Array) {
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-length')) {
      headers[shape === 'rest-v1' ? 'Content-Length' : 'content-length'] = String(Buffer.byteLength(request.body));
    }
  }
  return {
    method: request.method ?? 'POST',
    path: request.path ?? '/webhooks',
    headers,
    body,
    // A Function URL base64-encodes a body it takes as binary: always, here, to cover the decoding.
    base64: shape === 'function-url',
    ...(route === undefined ? {} : { route }),
  };
}

/** Invokes `handler` as `shape`'s source would for each request. */
function invoking(shape: Shape, handler: ReturnType<typeof createLambdaHandler>, route?: string): Client {
  return {
    send: async (request) => {
      const result = await handler(eventFor(shape, await received(request, shape, route)), lambdaContext());
      return readResult(shape, result);
    },
    close: async () => {},
  };
}

/** Sources with API Gateway routes, whose `{tenant}` path parameter the handler reads by default. */
const ROUTED: readonly Shape[] = ['rest-v1', 'http-api-v2'];

function lambdaAdapter(shape: Shape): AdapterUnderTest {
  return {
    name: `lambda:${shape}`,
    create: async (webhooks) => invoking(shape, createLambdaHandler(webhooks)),
    // API Gateway routes POST /webhooks/{tenant}; a Function URL or a load balancer passes any path,
    // so the tenant option reads it from the event's path.
    createTenant: async (webhooks) =>
      ROUTED.includes(shape)
        ? invoking(shape, createLambdaHandler(webhooks), '/webhooks/{tenant}')
        : invoking(
            shape,
            createLambdaHandler(webhooks, {
              tenant: ({ event }) => tenantOfPath('rawPath' in event ? event.rawPath : event.path),
            }),
          ),
  };
}

/** The Lambda handler behind each event source it answers. */
export const LAMBDA_ADAPTERS: AdapterUnderTest[] = [
  lambdaAdapter('rest-v1'),
  lambdaAdapter('http-api-v2'),
  lambdaAdapter('function-url'),
  lambdaAdapter('alb'),
  lambdaAdapter('alb-multi-value'),
];
