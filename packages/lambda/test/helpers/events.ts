/**
 * Builds each source's event from its fixture, as AWS would deliver a given request, and reads a
 * handler's result back, refusing one that is not exactly the shape that source expects.
 */
import type { LambdaHttpEvent } from '@pixhook/lambda';
import type { ALBEvent, APIGatewayProxyEvent, APIGatewayProxyEventV2, LambdaFunctionURLEvent } from 'aws-lambda';
import { albEvent, albMultiValueEvent } from '../fixtures/alb.js';
import { functionUrlEvent } from '../fixtures/function-url.js';
import { httpApiV2Event } from '../fixtures/http-api-v2.js';
import { restApiEvent } from '../fixtures/rest-v1.js';

/** Every event source the handler answers, one fixture each. */
export const SHAPES = ['rest-v1', 'http-api-v2', 'function-url', 'alb', 'alb-multi-value'] as const;
export type Shape = (typeof SHAPES)[number];

/** A request as a client sent it to API Gateway, a Function URL or a load balancer. */
export interface EventInput {
  method?: string;
  path?: string;
  /** Names in the case the client sent; an array for a header sent several times. */
  headers?: Record<string, string | string[]>;
  body?: string | Uint8Array;
  /** Deliver the body base64-encoded (`isBase64Encoded`); by default only bytes that are not UTF-8 are. */
  base64?: boolean;
  /**
   * The API Gateway route that matched, with `{name}` parameters (`/webhooks/{tenant}`): REST and
   * HTTP APIs then carry `pathParameters` read from `path`, as API Gateway sets them. Function URLs
   * and load balancers have no routes and ignore it. By default the path itself, with no parameters.
   */
  route?: string;
}

/** The `{name}` parameters of `route` in `path`, as API Gateway decodes them; null when it has none or does not match. */
export function pathParametersOf(route: string | undefined, path: string): Record<string, string> | null {
  if (route === undefined) return null;
  const names: string[] = [];
  const pattern = route
    .split('/')
    .map((segment) => {
      const name = /^\{([A-Za-z0-9_]+)\}$/.exec(segment)?.[1];
      if (name === undefined) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(name);
      return '([^/]+)';
    })
    .join('/');
  const match = new RegExp(`^${pattern}$`).exec(path);
  if (names.length === 0 || match === null) return null;
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(match[i + 1] as string)]));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as the event carries it: text, or base64 for binary (not UTF-8) bytes or when asked. */
function encodeBody(input: EventInput): { body: string | undefined; isBase64Encoded: boolean } {
  const { body } = input;
  if (body === undefined) return { body: undefined, isBase64Encoded: false };
  const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.length);
  let text: string | undefined;
  try {
    text = typeof body === 'string' ? body : utf8.decode(bytes);
  } catch {
    text = undefined;
  }
  if (input.base64 === true || text === undefined) return { body: bytes.toString('base64'), isBase64Encoded: true };
  return { body: text, isBase64Encoded: false };
}

/** Header name → every value, in order. */
function grouped(headers: EventInput['headers'] = {}, lowerCase: boolean): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [name, value] of Object.entries(headers)) {
    const key = lowerCase ? name.toLowerCase() : name;
    map.set(key, [...(map.get(key) ?? []), ...(Array.isArray(value) ? value : [value])]);
  }
  return map;
}

/** REST API: names as sent; `headers` keeps the last value, `multiValueHeaders` all; a missing body is null. */
export function restEvent(input: EventInput = {}): APIGatewayProxyEvent {
  const event = structuredClone(restApiEvent) as APIGatewayProxyEvent;
  const method = input.method ?? 'POST';
  const path = input.path ?? '/webhooks';
  const headers = grouped(input.headers, false);
  const { body, isBase64Encoded } = encodeBody(input);
  event.httpMethod = method;
  event.requestContext.httpMethod = method;
  event.path = event.requestContext.path = path;
  event.resource = event.requestContext.resourcePath = input.route ?? path;
  event.pathParameters = pathParametersOf(input.route, path);
  event.headers = Object.fromEntries([...headers].map(([name, values]) => [name, values.at(-1) as string]));
  event.multiValueHeaders = Object.fromEntries(headers);
  event.queryStringParameters = event.multiValueQueryStringParameters = null;
  event.body = body ?? null;
  event.isBase64Encoded = isBase64Encoded;
  return event;
}

/**
 * HTTP API payload 2.0 and Function URLs: lower-case names, repeated headers joined with commas, no
 * body when none. An HTTP API's route (`routed`) gives `routeKey` and `pathParameters`.
 */
function v2Event<E extends APIGatewayProxyEventV2>(fixture: E, input: EventInput, routed = false): E {
  const event = structuredClone(fixture);
  const method = input.method ?? 'POST';
  const path = input.path ?? '/webhooks';
  const { body, isBase64Encoded } = encodeBody(input);
  event.requestContext.http.method = method;
  event.rawPath = event.requestContext.http.path = path;
  event.rawQueryString = '';
  delete event.queryStringParameters;
  delete event.pathParameters;
  delete event.cookies;
  const parameters = routed ? pathParametersOf(input.route, path) : null;
  if (routed && input.route !== undefined) event.routeKey = event.requestContext.routeKey = `${method} ${input.route}`;
  if (parameters !== null) event.pathParameters = parameters;
  event.headers = Object.fromEntries(
    [...grouped(input.headers, true)].map(([name, values]) => [name, values.join(',')]),
  );
  if (body === undefined) delete event.body;
  else event.body = body;
  event.isBase64Encoded = isBase64Encoded;
  return event;
}

export const httpApiEvent = (input: EventInput = {}): APIGatewayProxyEventV2 => v2Event(httpApiV2Event, input, true);
export const urlEvent = (input: EventInput = {}): LambdaFunctionURLEvent => v2Event(functionUrlEvent, input);

/**
 * ALB: lower-case names. With multi-value headers on, only `multiValueHeaders`; off, only `headers`
 * with the last value of a repeated header. A missing body is "".
 */
export function loadBalancerEvent(input: EventInput = {}, multiValue = false): ALBEvent {
  const event = structuredClone(multiValue ? albMultiValueEvent : albEvent) as ALBEvent;
  const headers = grouped(input.headers, true);
  const { body, isBase64Encoded } = encodeBody(input);
  event.httpMethod = input.method ?? 'POST';
  event.path = input.path ?? '/webhooks';
  if (multiValue) {
    event.multiValueQueryStringParameters = {};
    event.multiValueHeaders = Object.fromEntries(headers);
  } else {
    event.queryStringParameters = {};
    event.headers = Object.fromEntries([...headers].map(([name, values]) => [name, values.at(-1) as string]));
  }
  event.body = body ?? '';
  event.isBase64Encoded = isBase64Encoded;
  return event;
}

/** The event `shape`'s source would send for `input`. */
export function eventFor(shape: Shape, input: EventInput = {}): LambdaHttpEvent {
  switch (shape) {
    case 'rest-v1':
      return restEvent(input);
    case 'http-api-v2':
      return httpApiEvent(input);
    case 'function-url':
      return urlEvent(input);
    case 'alb':
      return loadBalancerEvent(input, false);
    case 'alb-multi-value':
      return loadBalancerEvent(input, true);
  }
}

/** A result read back: the status, lower-case headers (several values joined with ", "), the body. */
export interface ReadResult {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The JSON body, or undefined when it is not JSON. */
  json: unknown;
}

const PROXY_KEYS = ['body', 'headers', 'isBase64Encoded', 'statusCode'];
const ALB_KEYS = ['body', 'headers', 'isBase64Encoded', 'statusCode', 'statusDescription'];
const ALB_MULTI_KEYS = ['body', 'isBase64Encoded', 'multiValueHeaders', 'statusCode', 'statusDescription'];

function fail(shape: Shape, problem: string, result: unknown): never {
  throw new Error(`the ${shape} result ${problem}: ${JSON.stringify(result)}`);
}

/**
 * Reads a handler's result, throwing unless it is exactly what `shape`'s source expects: API
 * Gateway and Function URLs `{ statusCode, headers, body, isBase64Encoded: false }`; ALB the same
 * with `statusDescription` ("200 OK"), and `multiValueHeaders` instead of `headers` when multi-value
 * headers are on.
 */
export function readResult(shape: Shape, result: unknown): ReadResult {
  if (typeof result !== 'object' || result === null) fail(shape, 'is not an object', result);
  const fields = result as Record<string, unknown>;
  const keys = shape === 'alb' ? ALB_KEYS : shape === 'alb-multi-value' ? ALB_MULTI_KEYS : PROXY_KEYS;
  if (Object.keys(fields).sort().join() !== keys.join())
    fail(shape, `does not have exactly ${keys.join(', ')}`, result);
  const { statusCode, body, isBase64Encoded, statusDescription } = fields;
  if (!Number.isInteger(statusCode)) fail(shape, 'has no integer statusCode', result);
  if (typeof body !== 'string') fail(shape, 'has no string body', result);
  if (isBase64Encoded !== false) fail(shape, 'is not isBase64Encoded: false', result);
  if (shape.startsWith('alb') && !new RegExp(`^${statusCode} [A-Z][A-Za-z ]+$`).test(String(statusDescription))) {
    fail(shape, 'has no "<status> <reason>" statusDescription', result);
  }
  const headers: Record<string, string> = {};
  const given = (shape === 'alb-multi-value' ? fields.multiValueHeaders : fields.headers) as Record<string, unknown>;
  if (typeof given !== 'object' || given === null) fail(shape, 'has no header object', result);
  for (const [name, value] of Object.entries(given)) {
    const values = shape === 'alb-multi-value' ? value : [value];
    if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === 'string')) {
      fail(
        shape,
        `has a header ${name} that is not ${shape === 'alb-multi-value' ? 'a list of strings' : 'a string'}`,
        result,
      );
    }
    headers[name.toLowerCase()] = values.join(', ');
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: statusCode as number, headers, text: body, json };
}
