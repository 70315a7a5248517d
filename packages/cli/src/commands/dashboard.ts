import type { Command } from 'commander';
import { secretProblem } from '../dashboard/requests.js';
import { startDashboard } from '../dashboard/server.js';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { httpUrl, portNumber, secretOption } from '../io/options.js';
import { pc } from '../io/output.js';

interface DashboardCommandOptions {
  port: number;
  secret?: string;
  url?: string;
}

/** The dashboard's default port: `pixhook listen`'s 4242 is often running beside it. */
const DEFAULT_PORT = 4343;

const EXAMPLES = `
A local web page that is the service's webhook dashboard and an inspector in one: enter your
receiver's URL and signing secret, send test events (one button per type, data.object editable),
watch every attempt in a live log, replay one as is, re-signed or edited, send one twice at once
or stale, play the retry schedule on a timeline, and point deliveries at the dashboard itself
(/inspect) to see them verified and diagnosed. It listens on 127.0.0.1 only, loads nothing from the
network, and answers its API only to its own page. The secret stays in this process: the page
never gets it back, and it is never printed.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook dashboard                                          # http://127.0.0.1:${DEFAULT_PORT}/
  $ pixhook dashboard --port 0 --url http://localhost:3000/webhooks`;

/** `pixhook dashboard`: the local web dashboard. */
export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('open a local web page to send, watch, replay and diagnose deliveries')
    .option('-p, --port <port>', 'the port on 127.0.0.1 (0: any free one)', portNumber, DEFAULT_PORT)
    .option('--url <receiver>', 'the receiver URL to start with, e.g. http://localhost:3000/webhooks', httpUrl)
    .addOption(secretOption().makeOptionMandatory(false))
    .addHelpText('after', EXAMPLES)
    .action(async (options: DashboardCommandOptions) => {
      // An empty PIXHOOK_SECRET is no secret: the page asks for one.
      const secret = options.secret === '' ? undefined : options.secret;
      const problem = secret === undefined ? undefined : secretProblem(secret);
      if (problem) throw new UsageError(`The signing secret (--secret or PIXHOOK_SECRET): ${problem}`);
      const dashboard = await startDashboard({ ...options, secret }).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE') {
          throw new FailedError(
            `Port ${options.port} on 127.0.0.1 is in use: choose another with --port (0 picks a free one).`,
          );
        }
        throw error;
      });
      process.stdout.write(
        `pixhook dashboard on ${pc.bold(escapeText(dashboard.url))}; Ctrl-C to stop\n${pc.dim(
          `inspector (a receiver that verifies and diagnoses): ${escapeText(dashboard.inspectorUrl)}`,
        )}\n`,
      );
      const stop = () => {
        dashboard.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
