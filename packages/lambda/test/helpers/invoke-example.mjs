// Runs a Lambda handler file as the Node.js runtime does, with plain node on the built packages:
// imports it once (its init phase), then invokes its `handler` export with each event of the JSON
// array on stdin, one after another, as one warm instance would. Each result is printed on its own
// line, `RESULT <json>`; the file's own logs go around them. Exits once all are answered (a Redis
// client would keep the process alive, as Lambda freezes it instead).
//   node invoke-example.mjs path/to/handler.mjs < events.json

import { pathToFileURL } from 'node:url';
import { lambdaContext } from '@pixhook/test-helpers/lambda-context';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const events = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const { handler } = await import(pathToFileURL(process.argv[2]).href);
for (const event of events) {
  const context = lambdaContext(9_000);
  process.stdout.write(`RESULT ${JSON.stringify(await handler(event, context))}\n`);
}
process.exit(0);
