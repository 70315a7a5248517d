// The Lambda events of one delivery, as API Gateway and Function URLs hand them to a function: the
// shapes of packages/lambda/test/fixtures (from the AWS documentation), with the delivery's method,
// path, headers and body. Every source carries the same headers, a client's and those AWS adds;
// only their case and shape differ (REST: names as sent, in `headers` and `multiValueHeaders`;
// payload 2.0: lower-case names).
import { lambdaContext as testContext } from '@pixhook/test-helpers/lambda-context';

const PATH = '/webhooks';

/**
 * The headers of one delivery as the client sent them (names in its case), with those API Gateway
 * and Function URLs add in front of the function.
 */
export function deliveryHeaders(signed, body) {
  return [
    ['Host', 'abcdefghij.execute-api.us-east-1.amazonaws.com'],
    ['User-Agent', 'image-service-webhooks/1.0'],
    ['Content-Type', signed['content-type']],
    ['Content-Length', String(body.length)],
    ['X-Service-Event', signed['x-service-event']],
    ['X-Service-Delivery', signed['x-service-delivery']],
    ['X-Service-Signature', signed['x-service-signature']],
    ['X-Amzn-Trace-Id', 'Root=1-5e723db7-6077c85e0d781094f0c83e24'],
    ['X-Forwarded-For', '192.0.2.1'],
    ['X-Forwarded-Port', '443'],
    ['X-Forwarded-Proto', 'https'],
  ];
}

/** The same headers as Node's `req.headers` holds them (lower-case names), for `webhooks.handle()`. */
export function nodeHeaders(headers) {
  return Object.fromEntries(headers.map(([name, value]) => [name.toLowerCase(), value]));
}

/** API Gateway REST API, Lambda proxy integration (payload 1.0): a UTF-8 body as text. */
export function restEvent(headers, body) {
  return {
    resource: PATH,
    path: PATH,
    httpMethod: 'POST',
    headers: Object.fromEntries(headers),
    multiValueHeaders: Object.fromEntries(headers.map(([name, value]) => [name, [value]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'id',
      authorizer: { claims: null, scopes: null },
      domainName: 'id.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'id',
      extendedRequestId: 'request-id',
      httpMethod: 'POST',
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: '192.0.2.1',
        user: null,
        userAgent: 'image-service-webhooks/1.0',
        userArn: null,
      },
      path: PATH,
      protocol: 'HTTP/1.1',
      requestId: 'id=',
      requestTime: '04/Mar/2020:19:15:17 +0000',
      requestTimeEpoch: 1583349317135,
      resourceId: 'abc123',
      resourcePath: PATH,
      stage: '$default',
    },
    pathParameters: null,
    stageVariables: null,
    body: body.toString('utf8'),
    isBase64Encoded: false,
  };
}

/** HTTP API payload 2.0 and Function URLs: lower-case names, the body as text or base64. */
function v2Event(headers, body, base64, domainName, apiId) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: PATH,
    rawQueryString: '',
    headers: Object.fromEntries(headers.map(([name, value]) => [name.toLowerCase(), value])),
    requestContext: {
      accountId: '123456789012',
      apiId,
      domainName,
      domainPrefix: domainName.slice(0, domainName.indexOf('.')),
      http: {
        method: 'POST',
        path: PATH,
        protocol: 'HTTP/1.1',
        sourceIp: '192.0.2.1',
        userAgent: 'image-service-webhooks/1.0',
      },
      requestId: 'id',
      routeKey: '$default',
      stage: '$default',
      time: '12/Mar/2020:19:03:58 +0000',
      timeEpoch: 1583348638390,
    },
    body: body.toString(base64 ? 'base64' : 'utf8'),
    isBase64Encoded: base64,
  };
}

/** API Gateway HTTP API, payload format 2.0: a UTF-8 body as text. */
export function httpApiEvent(headers, body) {
  return v2Event(headers, body, false, 'id.execute-api.us-east-1.amazonaws.com', 'api-id');
}

/** A Function URL that passes the body base64-encoded (`isBase64Encoded: true`), decoded by the handler. */
export function functionUrlBase64Event(headers, body) {
  return v2Event(headers, body, true, 'abcdefghij.lambda-url.us-east-1.on.aws', 'abcdefghij');
}

/** A Lambda `Context` as the Node.js runtime passes one to each invocation, with the 9-second timeout the README gives. */
export const lambdaContext = () => testContext(9_000);
