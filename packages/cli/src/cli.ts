import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { registerDashboard } from './commands/dashboard.js';
import { registerDeadLetters } from './commands/dead-letters.js';
import { registerInbox } from './commands/inbox.js';
import { registerListen } from './commands/listen.js';
import { registerSend } from './commands/send.js';
import { registerSign } from './commands/sign.js';
import { registerSimulate } from './commands/simulate.js';
import { registerVerify } from './commands/verify.js';
import { exitQuietlyWhenOutputCloses } from './io/closed-output.js';
import { EXIT, FailedError } from './io/errors.js';
import { escapeText } from './io/escape.js';
import { pc } from './io/output.js';

exitQuietlyWhenOutputCloses();

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const program = new Command('pixhook')
  .description("Test a receiver of the image service's webhooks before the service ever calls it.")
  .version(version)
  // Settings before the commands: subcommands copy them when they are created.
  .exitOverride()
  .showHelpAfterError('(add --help for usage and examples)')
  // Commander's own errors quote what was typed ("unknown command 'sned…'"): the line breaks
  // between its lines stay, every other control character is shown escaped, never written raw.
  .configureOutput({
    outputError: (text, write) => write(text.split('\n').map(escapeText).join('\n')),
  })
  .addHelpText(
    'after',
    `
The signing secret comes from --secret or the PIXHOOK_SECRET environment variable, and is never printed.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook send http://localhost:3000/webhooks --type image.created
  $ pixhook simulate http://localhost:3000/webhooks --time-scale 3600
  $ pixhook verify --header "t=1700000000,v1=5257a8…" --body captured.json
  $ pixhook sign --body event.json
  $ pixhook listen --port 4242
  $ pixhook dashboard                                        # a local web page: send, watch, replay, inspect
  $ pixhook dead-letters list --redis redis://127.0.0.1:6379   # queued processing's dead letters
  $ pixhook inbox list --postgres --outcome failed --since 2h  # the archive of deliveries (DATABASE_URL)`,
  );

registerSend(program);
registerSimulate(program);
registerVerify(program);
registerSign(program);
registerListen(program);
registerDashboard(program);
registerDeadLetters(program);
registerInbox(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander has printed the message (or the help) already.
    process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else {
    // Messages from pixhook and core never carry the secret (nor a Redis password); they may quote
    // a file's content.
    const message = (error as Error)?.message ?? String(error);
    process.stderr.write(`${pc.red('pixhook:')} ${escapeText(message.replace(/^pixhook: /, ''))}\n`);
    process.exitCode = error instanceof FailedError ? EXIT.failed : EXIT.usage;
  }
}
