import { createSignedRequest } from '@pixhook/core/testing';
import type { Command } from 'commander';
import { deliver } from '../deliver.js';
import { EXIT } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { buildEvent } from '../io/event.js';
import { outcomeHint } from '../io/hints.js';
import { httpUrl, positiveNumber, requireSecret, secretOption, TYPE_HELP } from '../io/options.js';
import { errorCode, formatBody, formatStatus, pc, printJson } from '../io/output.js';
import { DEFAULT_DEADLINE_SECONDS, formatDuration } from '../schedule.js';

interface SendOptions {
  type: string;
  data?: string;
  secret?: string;
  eventId?: string;
  deliveryId?: string;
  deadline: number;
  json?: boolean;
}

const EXAMPLES = `
Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook send http://localhost:3000/webhooks --type image.created
  $ pixhook send http://localhost:3000/webhooks --type quota.warned --data quota.json
  $ pixhook send http://localhost:3000/webhooks --type image.deleted --event-id evt_same_twice   # de-duplication
  $ pixhook send https://staging.example.com/webhooks --type api_key.revoked --json | jq .status

Exit code: 0 when a 2xx came back within the deadline, 1 otherwise, 2 for bad options.`;

/** `pixhook send`: the dashboard's test-event button, locally. */
export function registerSend(program: Command): void {
  program
    .command('send')
    .description("send one signed test event, like the dashboard's test-event button")
    .argument('<url>', 'the receiver, e.g. http://localhost:3000/webhooks', httpUrl)
    .requiredOption('-t, --type <type>', TYPE_HELP)
    .option(
      '-d, --data <file>',
      'a JSON file with data.object ("-" for stdin) (default: a realistic sample for the type)',
    )
    .addOption(secretOption())
    .option(
      '--event-id <id>',
      'the envelope id; send the same one twice to test de-duplication (default: evt_test_<random>)',
    )
    .option('--delivery-id <id>', 'the X-Service-Delivery header (default: a random UUID)')
    .option('--deadline <seconds>', 'seconds the receiver has to answer 2xx', positiveNumber, DEFAULT_DEADLINE_SECONDS)
    .option('--json', 'print one JSON object instead of text')
    .addHelpText('after', EXAMPLES)
    .action(async (url: string, options: SendOptions) => {
      const secret = requireSecret(options.secret);
      const event = await buildEvent(options);
      const request = createSignedRequest(event, {
        secret,
        ...(options.deliveryId === undefined ? {} : { deliveryId: options.deliveryId }),
      });
      const deliveryId = request.headers['x-service-delivery'];
      if (!options.json) {
        process.stdout.write(
          `${pc.dim('→')} POST ${escapeText(url)}  ${pc.bold(escapeText(event.type))}  ${escapeText(event.id)}  ${pc.dim(`delivery ${escapeText(deliveryId)}`)}\n`,
        );
      }
      const outcome = await deliver({ url, ...request, deadlineSeconds: options.deadline });
      process.exitCode = outcome.ok ? EXIT.ok : EXIT.failed;
      const hint = outcomeHint(outcome, url);
      if (options.json) {
        printJson({
          url,
          type: event.type,
          eventId: event.id,
          deliveryId,
          ...outcome,
          ms: Math.round(outcome.ms),
          ...(hint ? { hint } : {}),
        });
        return;
      }
      if (outcome.status !== undefined) {
        const code = errorCode(outcome.body);
        process.stdout.write(
          `${pc.dim('←')} ${formatStatus(outcome.status)}${code ? ` ${escapeText(code)}` : ''} in ${formatDuration(outcome.ms)}\n`,
        );
        if (outcome.body) process.stdout.write(`${formatBody(outcome.body, outcome.contentType)}\n`);
      } else if (outcome.failure === 'timeout') {
        process.stdout.write(
          `${pc.red('✗')} no answer within ${options.deadline} s: the service counts this as a failed attempt\n`,
        );
      } else {
        process.stdout.write(`${pc.red('✗')} could not reach ${escapeText(url)}: ${escapeText(outcome.detail)}\n`);
      }
      if (hint) process.stdout.write(`  ${pc.yellow('hint:')} ${escapeText(hint)}\n`);
      if (outcome.status !== undefined && !outcome.ok) {
        process.stdout.write(`${pc.red('✗')} not a 2xx: the service would retry this delivery\n`);
      }
    });
}
