import { EVENT_TYPES, type WebhookEvent } from '@pixhook/core';
import { createSignedRequest } from '@pixhook/core/testing';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type AttemptOutcome, deliver } from '../deliver.js';
import { EXIT, UsageError } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { buildEvent } from '../io/event.js';
import { outcomeHint } from '../io/hints.js';
import { httpUrl, positiveNumber, requireSecret, secretOption, TYPE_HELP, unixSeconds } from '../io/options.js';
import { errorCode, formatBody, formatStatus, pc, printJson, truncationNote } from '../io/output.js';
import { DEFAULT_DEADLINE_SECONDS, formatDuration } from '../schedule.js';

interface SendOptions {
  type: string;
  data?: string;
  secret?: string;
  eventId?: string;
  deliveryId?: string;
  timestamp?: string;
  age?: number;
  deadline: number;
  json?: boolean;
}

const EXAMPLES = `
--type all sends one delivery of each type the spec defines (${EVENT_TYPES.join(', ')}), one after
the other, each with its own event id; the exit code is 0 only when every one got a 2xx.

--age and --timestamp sign a delivery as if it had been sent earlier, to check that the receiver
refuses stale deliveries (replay protection: pixhook's default tolerance is 300 s). The envelope's
created gets the same time.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook send http://localhost:3000/webhooks --type image.created
  $ pixhook send http://localhost:3000/webhooks --type all                         # every event type
  $ pixhook send http://localhost:3000/webhooks --type quota.warned --data quota.json
  $ pixhook send http://localhost:3000/webhooks --type image.deleted --event-id evt_same_twice   # de-duplication
  $ pixhook send http://localhost:3000/webhooks --type image.created --age 600    # stale: expect a 400
  $ pixhook send https://staging.example.com/webhooks --type api_key.revoked --json | jq .status

Exit code: 0 when a 2xx came back within the deadline, 1 otherwise, 2 for bad options.`;

/** Options that name one event, which `--type all` cannot share between its deliveries. */
const PER_EVENT = { data: '--data', eventId: '--event-id', deliveryId: '--delivery-id' } as const;

/** Whole seconds, negative for the future (a receiver's clock ahead of the service's). */
function wholeSeconds(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('expected whole seconds, e.g. 600.');
  return Number(value);
}

/** `pixhook send`: the dashboard's test-event button, locally. */
export function registerSend(program: Command): void {
  program
    .command('send')
    .description("send one signed test event, like the dashboard's test-event button (or one of each type)")
    .argument('<url>', 'the receiver, e.g. http://localhost:3000/webhooks', httpUrl)
    .requiredOption('-t, --type <type>', `${TYPE_HELP}; "all" sends one delivery of each of them`)
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
    .addOption(
      new Option('--timestamp <unix seconds>', 'sign with this t, e.g. an old one to test replay protection')
        .argParser(unixSeconds)
        .conflicts('age'),
    )
    .addOption(
      new Option('--age <seconds>', 'sign as if sent this many seconds ago (negative: in the future)').argParser(
        wholeSeconds,
      ),
    )
    .option('--deadline <seconds>', 'seconds the receiver has to answer 2xx', positiveNumber, DEFAULT_DEADLINE_SECONDS)
    .option('--json', 'print one JSON object instead of text')
    .addHelpText('after', EXAMPLES)
    .action(async (url: string, options: SendOptions) => {
      const secret = requireSecret(options.secret);
      const all = options.type === 'all';
      if (all) {
        const fixed = Object.entries(PER_EVENT).filter(
          ([name]) => options[name as keyof typeof PER_EVENT] !== undefined,
        );
        if (fixed.length > 0) {
          throw new UsageError(
            `--type all sends each type with its own sample, event id and delivery id: drop ${fixed.map(([, flag]) => flag).join(', ')}.`,
          );
        }
      }
      const results: SendResult[] = [];
      for (const type of all ? EVENT_TYPES : [options.type]) {
        const result = await sendOne(url, secret, { ...options, type });
        results.push(result);
        // Set before printing: if the reader goes away (| head), the exit code still tells.
        if (!result.outcome.ok) process.exitCode = EXIT.failed;
        if (!options.json) printResult(url, result, options.deadline);
      }
      const failed = results.filter((result) => !result.outcome.ok);
      process.exitCode = failed.length === 0 ? EXIT.ok : EXIT.failed;
      if (options.json) {
        const records = results.map((result) => jsonRecord(url, result));
        printJson(all ? { ok: failed.length === 0, deliveries: records } : records[0]);
      } else if (all) {
        process.stdout.write(
          failed.length === 0
            ? `${pc.green('✓')} all ${results.length} types answered 2xx\n`
            : `${pc.red('✗')} ${failed.length} of ${results.length} types not answered 2xx: ${failed.map((result) => escapeText(result.event.type)).join(', ')}\n`,
        );
      }
    });
}

interface SendResult {
  event: WebhookEvent<string, object>;
  deliveryId: string;
  /** The signature's t, when --timestamp or --age chose it. */
  timestamp?: number;
  outcome: AttemptOutcome;
}

async function sendOne(url: string, secret: string, options: SendOptions): Promise<SendResult> {
  const now = Math.floor(Date.now() / 1000);
  const timestamp = options.timestamp ?? (options.age === undefined ? undefined : String(now - options.age));
  const event = await buildEvent({ ...options, ...(timestamp === undefined ? {} : { created: Number(timestamp) }) });
  const request = createSignedRequest(event, {
    secret,
    ...(options.deliveryId === undefined ? {} : { deliveryId: options.deliveryId }),
    ...(timestamp === undefined ? {} : { timestamp }),
  });
  const deliveryId = request.headers['x-service-delivery'];
  if (!options.json) {
    const signed = timestamp === undefined ? '' : `  signed t=${timestamp} (${describeAge(now - Number(timestamp))})`;
    process.stdout.write(
      `${pc.dim('→')} POST ${escapeText(url)}  ${pc.bold(escapeText(event.type))}  ${escapeText(event.id)}  ${pc.dim(`delivery ${escapeText(deliveryId)}${signed}`)}\n`,
    );
  }
  const outcome = await deliver({ url, ...request, deadlineSeconds: options.deadline });
  return { event, deliveryId, outcome, ...(timestamp === undefined ? {} : { timestamp: Number(timestamp) }) };
}

function describeAge(ageSeconds: number): string {
  if (ageSeconds === 0) return 'now';
  return ageSeconds > 0
    ? `${formatDuration(ageSeconds * 1000)} ago`
    : `${formatDuration(-ageSeconds * 1000)} in the future`;
}

function jsonRecord(url: string, { event, deliveryId, timestamp, outcome }: SendResult) {
  const hint = outcomeHint(outcome, url);
  return {
    url,
    type: event.type,
    eventId: event.id,
    deliveryId,
    ...(timestamp === undefined ? {} : { timestamp }),
    ...outcome,
    ms: Math.round(outcome.ms),
    ...(hint ? { hint } : {}),
  };
}

function printResult(url: string, { outcome }: SendResult, deadline: number): void {
  if (outcome.status !== undefined) {
    const code = errorCode(outcome.body);
    process.stdout.write(
      `${pc.dim('←')} ${formatStatus(outcome.status)}${code ? ` ${escapeText(code)}` : ''} in ${formatDuration(outcome.ms)}\n`,
    );
    if (outcome.body) process.stdout.write(`${formatBody(outcome.body, outcome.contentType)}\n`);
    if (outcome.truncated) process.stdout.write(`${pc.dim(truncationNote(outcome))}\n`);
  } else if (outcome.failure === 'timeout') {
    process.stdout.write(
      `${pc.red('✗')} no answer within ${deadline} s: the service counts this as a failed attempt\n`,
    );
  } else {
    process.stdout.write(`${pc.red('✗')} could not reach ${escapeText(url)}: ${escapeText(outcome.detail)}\n`);
  }
  const hint = outcomeHint(outcome, url);
  if (hint) process.stdout.write(`  ${pc.yellow('hint:')} ${escapeText(hint)}\n`);
  if (outcome.status !== undefined && !outcome.ok) {
    process.stdout.write(`${pc.red('✗')} not a 2xx: the service would retry this delivery\n`);
  }
}
