import type { Command } from 'commander';
import { diagnoseSignature } from '../diagnose.js';
import { EXIT, UsageError } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { readBytes } from '../io/input.js';
import { positiveNumber, requireSecret, secretOption, unixSeconds } from '../io/options.js';
import { pc, printJson } from '../io/output.js';
import { formatDuration } from '../schedule.js';

interface VerifyOptions {
  secret?: string;
  header: string;
  body?: string;
  tolerance: number | false;
  now?: string;
  json?: boolean;
}

const EXAMPLES = `
Checks, in pixhook's order: the header's shape, the timestamp against the tolerance, the
signature, then the body's envelope. When a step fails it names the likely cause, confirmed
where it can be by verifying a corrected copy: a body re-serialised (white space or key order),
a trailing newline added or lost, a secret with white space, a wrong secret, a timestamp too old,
a malformed header. It never prints the secret or the expected signature.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook verify --header "t=1700000000,v1=5257a8…" --body captured.json
  $ pbpaste | pixhook verify --header "$SIG" --now 1700000000     # as of when it was captured
  $ pixhook verify --header "$SIG" --body captured.json --json | jq .causes

Exit code: 0 when the request verifies, 1 when it does not, 2 for bad options.`;

const NUMBERED = {
  secret: 'secret',
  header: '1 header',
  timestamp: '2 timestamp',
  signature: '3 signature',
  body: '4 body',
};

/** `pixhook verify`: checks a captured request and explains a failure. */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check a captured request and say which step fails and why')
    .requiredOption('-H, --header <value>', 'the X-Service-Signature value, e.g. "t=1700000000,v1=5257a8…"')
    .option('-b, --body <file>', 'the raw body as received (default: stdin)')
    .addOption(secretOption())
    .option('--tolerance <seconds>', 'seconds the timestamp may differ from now', positiveNumber, 300)
    .option('--no-tolerance', 'skip the timestamp check')
    .option(
      '--now <unix seconds>',
      'check the timestamp as of this time, e.g. when the request was captured',
      unixSeconds,
    )
    .option('--json', 'print one JSON object instead of text')
    .addHelpText('after', EXAMPLES)
    .action(async (options: VerifyOptions) => {
      const secret = requireSecret(options.secret);
      if (secret.trim() === '') throw new UsageError('The secret is empty.');
      const body = await readBytes(options.body, 'body');
      const diagnosis = diagnoseSignature({
        secret,
        header: options.header,
        body,
        tolerance: options.tolerance,
        ...(options.now === undefined ? {} : { now: Number(options.now) }),
      });
      process.exitCode = diagnosis.ok ? EXIT.ok : EXIT.failed;
      if (options.json) {
        const { ok, step, code, message, signatureMatches, timestamp, event, causes } = diagnosis;
        printJson({ ok, step, code, message, signatureMatches, timestamp, event, causes });
        return;
      }
      const ts = diagnosis.timestamp;
      const age = ts ? describeAge(ts.ageSeconds) : '';
      if (diagnosis.ok) {
        const event = diagnosis.event;
        process.stdout.write(
          `${pc.green('✓ verifies')}: ${event ? `${pc.bold(escapeText(event.type))} ${escapeText(event.id)}, ` : ''}signed ${age}${
            ts?.tolerance === false ? '' : ` (tolerance ${ts?.tolerance} s)`
          }\n`,
        );
        return;
      }
      const step = diagnosis.step ? NUMBERED[diagnosis.step] : 'unknown step';
      process.stdout.write(`${pc.red('✗ fails')} at step ${step}${diagnosis.code ? `: ${diagnosis.code}` : ''}\n`);
      // Messages and causes quote the captured header and body, which anyone could have sent.
      if (diagnosis.message) process.stdout.write(`  ${escapeText(diagnosis.message)}\n`);
      if (ts)
        process.stdout.write(
          pc.dim(`  signed ${age}; tolerance ${ts.tolerance === false ? 'off' : `${ts.tolerance} s`}\n`),
        );
      if (diagnosis.signatureMatches !== undefined && diagnosis.step !== 'signature') {
        process.stdout.write(
          `  signature: ${diagnosis.signatureMatches ? pc.green('the body’s signature matches') : pc.red('does not match either')}\n`,
        );
      }
      if (diagnosis.causes.length > 0) {
        process.stdout.write(
          `${pc.bold('Likely cause')}${diagnosis.causes.length > 1 ? 's, most likely first' : ''}:\n`,
        );
        for (const cause of diagnosis.causes) {
          const mark = cause.confirmed ? pc.green('confirmed') : pc.yellow('possible');
          process.stdout.write(`  - [${mark}] ${escapeText(cause.text)}\n`);
        }
      }
    });
}

function describeAge(ageSeconds: number): string {
  if (ageSeconds === 0) return 'just now';
  return ageSeconds > 0
    ? `${formatDuration(ageSeconds * 1000)} ago`
    : `${formatDuration(-ageSeconds * 1000)} in the future`;
}
