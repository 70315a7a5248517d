// Runs a Lambda handler file as the Node.js runtime does, with plain node on the built packages:
// imports it once (its init phase), then invokes its `handler` export with each event of the JSON
// array on stdin, one after another, as one warm instance would. Each result is printed on its own
// line, `RESULT <json>`; the file's own logs go around them. Exits once all are answered (a Redis
// client would keep the process alive, as Lambda freezes it instead).
//   node invoke-example.mjs path/to/handler.mjs < events.json
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const events = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const { handler } = await import(pathToFileURL(process.argv[2]).href);
for (const event of events) {
  const deadline = Date.now() + 9_000;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'pixhook-webhooks',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:pixhook-webhooks',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/pixhook-webhooks',
    logStreamName: '2024/05/14/[$LATEST]8e2a7c1f0b3d4e5f9a6b7c8d9e0f1a2b',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  process.stdout.write(`RESULT ${JSON.stringify(await handler(event, context))}\n`);
}
process.exit(0);
