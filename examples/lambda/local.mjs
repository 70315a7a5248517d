// Try a Lambda handler on your machine, with `pixhook send`, before deploying it: a small HTTP
// server that turns each request into the event a Lambda Function URL would send (payload format
// 2.0, the body base64-encoded so its bytes stay exact), calls the handler with a Lambda context,
// and writes its result back as the HTTP answer. Plain Node, nothing to install.
//   SIGNING_SECRET=whsec_… node examples/lambda/local.mjs [handler.mjs]   (default: ./handler.mjs here)
//   pixhook send http://127.0.0.1:3000/webhooks --type image.created     (same SIGNING_SECRET as PIXHOOK_SECRET)
// Not AWS: one instance, no freezing between invocations, no API Gateway limits. PORT picks the port.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const file = resolve(process.argv[2] ?? fileURLToPath(new URL('./handler.mjs', import.meta.url)));
const { handler } = await import(pathToFileURL(file).href);
if (typeof handler !== 'function') {
  console.error(`${file} exports no function named handler.`);
  process.exit(1);
}

/** The Lambda context of one invocation, with the 9 s timeout the README recommends. */
function lambdaContext(timeoutMs = 9_000) {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'pixhook-webhooks-local',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:pixhook-webhooks-local',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/pixhook-webhooks-local',
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}

/** A Function URL event (payload format 2.0) for one HTTP request, as AWS builds it. */
function functionUrlEvent(req, body) {
  const url = new URL(req.url, 'http://localhost');
  const headers = {};
  const cookies = [];
  // Node joins repeated headers with ", " (cookies with "; "), as the Function URL does.
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === 'cookie') cookies.push(...String(value).split('; '));
    else headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(url.search ? { queryStringParameters: Object.fromEntries(url.searchParams) } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    body: body.toString('base64'),
    isBase64Encoded: true,
  };
}

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    const result = await handler(functionUrlEvent(req, Buffer.concat(chunks)), lambdaContext());
    const body = result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? '');
    res.writeHead(result.statusCode, result.headers).end(body);
  } catch (error) {
    // On AWS a failed invocation is a 502 from the Function URL; show why here.
    console.error('the handler failed:', error);
    res.writeHead(502, { 'content-type': 'application/json' }).end('{"message":"Internal Server Error"}');
  }
});

server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`Lambda handler ${file} listening on http://127.0.0.1:${server.address().port}/webhooks`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => server.close(() => process.exit(0)));
