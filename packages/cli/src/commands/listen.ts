import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AnyEvent, Webhooks } from '@pixhook/core';
import { nodeBodyReader } from '@pixhook/core/node';
import type { Command } from 'commander';
import { escapeText, safeJson } from '../io/escape.js';
import { nonNegativeInteger, portNumber, positiveNumber, requireSecret, secretOption } from '../io/options.js';
import { errorCode, formatStatus, pc } from '../io/output.js';

interface ListenOptions {
  port: number;
  host: string;
  secret?: string;
  tolerance: number | false;
  failFirst: number;
  json?: boolean;
}

/** What one request got, filled in by the handler when it runs. */
interface RequestRecord {
  req: IncomingMessage;
  event?: AnyEvent;
  timestamp?: number;
  failedOnPurpose?: boolean;
}

const EXAMPLES = `
Answers every POST, on any path, the way a pixhook receiver does (every status of the contract,
de-duplication by event id included), and prints each delivery.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook listen --port 4242
  $ pixhook send http://127.0.0.1:4242/webhooks --type image.created          # in another terminal
  $ pixhook listen --fail-first 3 & pixhook simulate http://127.0.0.1:4242/webhooks --time-scale 3600
  $ pixhook listen --json | jq -c 'select(.status == 200) | .event.type'`;

/** `pixhook listen`: a local receiver that verifies and prints each delivery. */
export function registerListen(program: Command): void {
  program
    .command('listen')
    .description('run a local receiver that verifies and prints each delivery')
    .option('-p, --port <port>', 'the port (0: any free one)', portNumber, 4242)
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .addOption(secretOption())
    .option('--tolerance <seconds>', 'seconds the timestamp may differ from now', positiveNumber, 300)
    .option('--no-tolerance', 'skip the timestamp check')
    .option(
      '--fail-first <n>',
      'answer 500 to the first n verified deliveries, to watch retries',
      nonNegativeInteger,
      0,
    )
    .option('--json', 'print one JSON object a line')
    .addHelpText('after', EXAMPLES)
    .action(async (options: ListenOptions) => {
      const secret = requireSecret(options.secret);
      const webhooks = new Webhooks<never, RequestRecord>({ secret, tolerance: options.tolerance });
      let failuresLeft = options.failFirst;
      webhooks.onAny((event, { request, timestamp }) => {
        request.event = event;
        request.timestamp = timestamp;
        if (failuresLeft > 0) {
          failuresLeft--;
          request.failedOnPurpose = true;
          throw new Error('--fail-first');
        }
      });

      const server = createServer((req, res) => {
        const record: RequestRecord = { req };
        webhooks
          .handle({
            method: req.method,
            headers: req.headers,
            body: nodeBodyReader(req, undefined, ''),
            request: record,
          })
          .then((answer) => {
            res.writeHead(answer.status, answer.headers).end(answer.body);
            report(record, answer.status, answer.body, options.json === true);
          });
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.host, resolve);
      });
      const { port } = server.address() as AddressInfo;
      const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
      if (options.json) {
        process.stdout.write(`${safeJson({ listening: url })}\n`);
      } else {
        process.stdout.write(`listening on ${pc.bold(escapeText(url))} (any path); Ctrl-C to stop\n`);
      }
      const stop = () => {
        server.closeAllConnections();
        server.close(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

function report(record: RequestRecord, status: number, body: string, json: boolean): void {
  const { req, event } = record;
  // Unsigned headers, the path and even a signed body are anyone's text: printed escaped.
  const deliveryId = req.headers['x-service-delivery'];
  const code = errorCode(body);
  const message = code ? (JSON.parse(body) as { error: { message: string } }).error.message : undefined;
  const duplicate = status === 200 && event === undefined;
  if (json) {
    process.stdout.write(
      `${safeJson({
        time: new Date().toISOString(),
        method: req.method,
        path: req.url,
        status,
        ...(code ? { code, message } : {}),
        deliveryId,
        ...(duplicate ? { duplicate: true } : {}),
        ...(record.failedOnPurpose ? { failedOnPurpose: true } : {}),
        ...(event ? { timestamp: record.timestamp, event } : {}),
      })}\n`,
    );
    return;
  }
  const time = pc.dim(new Date().toISOString().slice(11, 23));
  let line = `${time} ${escapeText(req.method)} ${escapeText(req.url)} ${pc.dim('←')} ${formatStatus(status)}`;
  if (code) line += ` ${escapeText(code)}`;
  if (event) line += `  ${pc.bold(escapeText(event.type))}  ${escapeText(event.id)}`;
  if (deliveryId) line += pc.dim(`  delivery ${escapeText(deliveryId)}`);
  if (duplicate) line += pc.dim('  (event already processed: handlers not run again)');
  if (record.failedOnPurpose) line += pc.yellow('  (failed on purpose: --fail-first)');
  process.stdout.write(`${line}\n`);
  if (message !== undefined && !record.failedOnPurpose) process.stdout.write(`  ${escapeText(message)}\n`);
  if (event && status === 200) process.stdout.write(`${safeJson(event, 2)}\n`);
}
