import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
// Types only: @pixhook/dashboard is an optional peer dependency, imported when the command runs.
import type { startDashboard } from '@pixhook/dashboard';
import type { Command } from 'commander';
import { secretProblem } from '../checks.js';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { httpUrl, portNumber, secretOption } from '../io/options.js';
import { pc } from '../io/output.js';

interface DashboardCommandOptions {
  port: number;
  secret?: string;
  url?: string;
}

/** The dashboard's default port (@pixhook/dashboard's too): `pixhook listen`'s 4242 is often running beside it. */
const DEFAULT_PORT = 4343;

/** What the command says when @pixhook/dashboard cannot be loaded from here nor from the project. */
export const DASHBOARD_MISSING =
  'pixhook: the dashboard is its own package: npm install -D @pixhook/dashboard (same version as @pixhook/cli), then run pixhook dashboard again.';

const EXAMPLES = `
A local web page that is the service's webhook dashboard and an inspector in one: enter your
receiver's URL and signing secret, send test events (one button per type, data.object editable),
watch every attempt in a live log, replay one as is, re-signed or edited, send one twice at once
or stale, play the retry schedule on a timeline, and point deliveries at the dashboard itself
(/inspect) to see them verified and diagnosed. It listens on 127.0.0.1 only, loads nothing from the
network, and answers its API only to its own page. The secret stays in this process: the page
never gets it back, and it is never printed.

The dashboard is its own package, loaded when this command runs: npm install -D @pixhook/dashboard.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook dashboard                                          # http://127.0.0.1:${DEFAULT_PORT}/
  $ pixhook dashboard --port 0 --url http://localhost:3000/webhooks`;

/** `pixhook dashboard`: the local web dashboard. */
export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('open a local web page to send, watch, replay and diagnose deliveries (@pixhook/dashboard)')
    .option('-p, --port <port>', 'the port on 127.0.0.1 (0: any free one)', portNumber, DEFAULT_PORT)
    .option('--url <receiver>', 'the receiver URL to start with, e.g. http://localhost:3000/webhooks', httpUrl)
    .addOption(secretOption().makeOptionMandatory(false))
    .addHelpText('after', EXAMPLES)
    .action(async (options: DashboardCommandOptions) => {
      // An empty PIXHOOK_SECRET is no secret: the page asks for one.
      const secret = options.secret === '' ? undefined : options.secret;
      const problem = secret === undefined ? undefined : secretProblem(secret);
      if (problem) throw new UsageError(`The signing secret (--secret or PIXHOOK_SECRET): ${problem}`);
      const start = await loadDashboard();
      const dashboard = await start({ ...options, secret }).catch((error: NodeJS.ErrnoException) => {
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

/** Whether `error` says that `@pixhook/dashboard` itself was not found (not one of its own imports). */
function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException)?.code;
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    /['"]@pixhook\/dashboard['"]/.test((error as Error).message)
  );
}

/**
 * `@pixhook/dashboard`, an optional peer dependency of the CLI, as `vitest --ui` loads @vitest/ui:
 * first from the CLI's own location (npm's flat node_modules, the workspace), then from the
 * project in the current directory (pnpm's strict layout, where only the project sees it, and
 * `npx @pixhook/cli`, which runs the CLI from npm's cache). Missing from both: a usage error
 * (exit code 2) naming the package to install.
 */
async function loadDashboard(): Promise<typeof startDashboard> {
  try {
    return (await import('@pixhook/dashboard')).startDashboard;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  let path: string;
  try {
    path = createRequire(join(process.cwd(), 'package.json')).resolve('@pixhook/dashboard');
  } catch (error) {
    if (!isMissing(error)) throw error;
    throw new UsageError(DASHBOARD_MISSING);
  }
  // require's resolution gives the CommonJS build, whose names import() reads as well.
  const loaded = (await import(pathToFileURL(path).href)) as Partial<typeof import('@pixhook/dashboard')> & {
    default?: typeof import('@pixhook/dashboard');
  };
  const start = loaded.startDashboard ?? loaded.default?.startDashboard;
  if (!start)
    throw new FailedError(`pixhook: ${path} has no startDashboard: install the same version as @pixhook/cli.`);
  return start;
}
