import type { Command } from 'commander';
import { describeInFlightRetries, findInFlightRetries } from '../in-flight-retries.js';
import { EXIT } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { buildEvent } from '../io/event.js';
import { outcomeHint } from '../io/hints.js';
import { httpUrl, positiveInteger, positiveNumber, requireSecret, secretOption, TYPE_HELP } from '../io/options.js';
import { pc, printJson } from '../io/output.js';
import { progressReporter } from '../io/progress.js';
import { DEFAULT_DEADLINE_SECONDS, DEFAULT_MAX_ATTEMPTS, formatDuration, retryDelays } from '../schedule.js';
import { simulateDelivery } from '../simulate-delivery.js';

interface SimulateCommandOptions {
  type: string;
  data?: string;
  secret?: string;
  eventId?: string;
  deliveryId?: string;
  timeScale: number;
  maxAttempts: number;
  deadline: number;
  json?: boolean;
}

const EXAMPLES = `
The schedule (spec parts 3, 7 and 8): a first attempt, then retries after 1 min, 5 min, 30 min,
2 h, 6 h and 24 h: ${DEFAULT_MAX_ATTEMPTS} attempts in all. An attempt succeeds only with a 2xx
within the deadline (10 s). When the attempt made after the last delay fails too, the endpoint is
auto-disabled and the account owner emailed. The spec's "6 failed attempts" count the retries
after the first attempt; --max-attempts 6 plays that count literally. Past 7 attempts the 24 h
delay repeats.

Every attempt is the same delivery: the same event id and body, the same X-Service-Delivery,
re-signed with a fresh timestamp. --time-scale divides the delays only; the deadline stays the
service's unless --deadline changes it. When a shrunk delay is shorter than your handler's run, a
pixhook receiver answers the retry 409 IN_FLIGHT (the event is still being processed): simulate
says so at the end and suggests a smaller --time-scale.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook simulate http://localhost:3000/webhooks --time-scale 3600        # the 32.6 h schedule in 33 s
  $ pixhook simulate http://localhost:3000/webhooks --type quota.exceeded --max-attempts 3 --time-scale 60
  $ pixhook simulate http://localhost:3000/webhooks --time-scale 86400 --deadline 2 --json

Exit code: 0 when delivered, 1 when the endpoint would be auto-disabled, 2 for bad options.`;

/** `pixhook simulate`: the service's delivery state machine against a receiver. */
export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('play the service’s retry schedule against a receiver until delivered or auto-disabled')
    .argument('<url>', 'the receiver, e.g. http://localhost:3000/webhooks', httpUrl)
    .option('-t, --type <type>', TYPE_HELP, 'image.created')
    .option(
      '-d, --data <file>',
      'a JSON file with data.object ("-" for stdin) (default: a realistic sample for the type)',
    )
    .addOption(secretOption())
    .option('--time-scale <n>', 'divide every retry delay by n: 3600 makes an hour a second', positiveNumber, 1)
    .option(
      '--max-attempts <n>',
      'attempts in all, the first included (the first attempt and six retries)',
      positiveInteger,
      DEFAULT_MAX_ATTEMPTS,
    )
    .option(
      '--deadline <seconds>',
      'seconds each attempt has to answer 2xx (not scaled)',
      positiveNumber,
      DEFAULT_DEADLINE_SECONDS,
    )
    .option('--event-id <id>', 'the envelope id (default: evt_test_<random>)')
    .option('--delivery-id <id>', 'the X-Service-Delivery header of every attempt (default: a random UUID)')
    .option('--json', 'print one JSON object at the end instead of progress')
    .addHelpText('after', EXAMPLES)
    .action(async (url: string, options: SimulateCommandOptions) => {
      const secret = requireSecret(options.secret);
      const event = await buildEvent(options);
      const { timeScale, maxAttempts, deadline } = options;
      const serviceSeconds = retryDelays(maxAttempts).reduce((sum, delay) => sum + delay, 0);
      const reporter = options.json
        ? undefined
        : progressReporter(process.stdout, { url, timeScale, deadlineSeconds: deadline });
      if (!options.json) {
        process.stdout.write(
          `${pc.bold(escapeText(event.type))} ${escapeText(event.id)} → ${escapeText(url)}\n${pc.dim(
            `up to ${maxAttempts} attempts over ${formatDuration(serviceSeconds * 1000)} of service time${
              timeScale === 1
                ? ''
                : ` (${formatDuration((serviceSeconds * 1000) / timeScale)} at time scale ${timeScale})`
            }, ${deadline} s deadline each`,
          )}\n`,
        );
      }
      process.once('SIGINT', () => {
        reporter?.stop();
        process.stdout.write(`interrupted: the delivery was still pending (${pc.dim('no final state')})\n`);
        process.exit(130);
      });
      const result = await simulateDelivery({
        url,
        secret,
        event,
        maxAttempts,
        timeScale,
        deadlineSeconds: deadline,
        ...(options.deliveryId === undefined ? {} : { deliveryId: options.deliveryId }),
        ...(reporter ? { onProgress: reporter.onProgress } : {}),
      });
      reporter?.stop();
      process.exitCode = result.state === 'delivered' ? EXIT.ok : EXIT.failed;
      const n = result.attempts.length;
      const elapsed = result.attempts.reduce((sum, attempt) => sum + attempt.delaySeconds, 0);
      const inFlight = findInFlightRetries(result.attempts, timeScale);
      const note = inFlight && describeInFlightRetries(inFlight, result.attempts, timeScale);
      if (options.json) {
        printJson({
          url,
          type: event.type,
          ...result,
          attempts: result.attempts.map((attempt) => {
            const hint = outcomeHint(attempt, url);
            return { ...attempt, ms: Math.round(attempt.ms), ...(hint ? { hint } : {}) };
          }),
          serviceSeconds: elapsed,
          timeScale,
          ...(inFlight ? { inFlight, note } : {}),
        });
      } else if (result.state === 'delivered') {
        process.stdout.write(
          `${pc.green('delivered')} at attempt ${n} of ${maxAttempts}${
            n === 1 ? '' : `, ${formatDuration(elapsed * 1000)} after the first (service time)`
          }; delivery ${escapeText(result.deliveryId)}\n`,
        );
      } else {
        process.stdout.write(
          `${pc.red('endpoint auto-disabled')}: all ${n} attempts failed over ${formatDuration(elapsed * 1000)} (service time). The service would disable the endpoint and email the account owner.\n`,
        );
      }
      if (note && !options.json) process.stdout.write(`${pc.yellow('note:')} ${note}\n`);
    });
}
