import { parseSignatureHeader, sign } from '@pixhook/core';
import type { Command } from 'commander';
import { readBytes } from '../io/input.js';
import { requireSecret, secretOption, unixSeconds } from '../io/options.js';
import { printJson } from '../io/output.js';

interface SignOptions {
  secret?: string;
  timestamp?: string;
  body?: string;
  json?: boolean;
}

const EXAMPLES = `
Signs the bytes exactly as given (a trailing newline is signed too: use printf, not echo).

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook sign --body event.json
  $ printf '%s' '{"id":"evt_1","type":"image.created","created":1700000000,"data":{"object":{}}}' | pixhook sign --timestamp 1700000000
  $ curl -H "X-Service-Signature: $(pixhook sign --body event.json)" -H 'X-Service-Event: image.created' \\
      -H "X-Service-Delivery: $(uuidgen)" -H 'Content-Type: application/json' --data-binary @event.json http://localhost:3000/webhooks

Exit code: 0, or 2 for bad options.`;

/** `pixhook sign`: prints the X-Service-Signature value for a body. */
export function registerSign(program: Command): void {
  program
    .command('sign')
    .description('print the X-Service-Signature header value for a body')
    .option('-b, --body <file>', 'the body to sign (default: stdin)')
    .addOption(secretOption())
    .option('--timestamp <unix seconds>', 'the t to sign (default: now)', unixSeconds)
    .option('--json', 'print {"header", "timestamp"} instead of the bare value')
    .addHelpText('after', EXAMPLES)
    .action(async (options: SignOptions) => {
      const secret = requireSecret(options.secret);
      const body = await readBytes(options.body, 'body');
      const header = sign(secret, body, options.timestamp);
      if (options.json) {
        printJson({ header, timestamp: parseSignatureHeader(header).timestamp });
      } else {
        process.stdout.write(`${header}\n`);
      }
    });
}
