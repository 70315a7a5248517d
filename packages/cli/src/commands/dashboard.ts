import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
// Types only: @pixhook/dashboard is an optional peer dependency, imported when the command runs.
import type { startDashboard } from '@pixhook/dashboard';
import { type Command, Option } from 'commander';
import { secretProblem } from '../checks.js';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText } from '../io/escape.js';
import { httpUrl, portNumber, secretOption } from '../io/options.js';
import { pc } from '../io/output.js';
import type { OpenedDeadLetters, OpenedInbox } from '../io/production.js';

interface DashboardCommandOptions {
  port: number;
  secret?: string;
  url?: string;
  /** A URL, or true for `--postgres` alone (DATABASE_URL). */
  postgres?: string | true;
  /** A URL, or true for `--redis` alone (REDIS_URL). */
  redis?: string | true;
  inbox?: 'postgres' | 'redis';
  queue?: string;
  prefix?: string;
  schema?: string;
  table?: string;
  inboxPrefix?: string;
  readOnly?: boolean;
}

/** What the production views opened, to close on exit. */
interface Opened {
  inbox: OpenedInbox | undefined;
  deadLetters: OpenedDeadLetters[];
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

With --postgres and/or --redis it also shows production: the Inbox (the archived deliveries of a
PostgresArchive or RedisArchive: filter, page, look at one event's bytes, headers and timeline,
replay one or a filtered set) and the Dead letters of your queue (pg-boss on --postgres, BullMQ on
--redis: show, retry, discard, one or all with a confirmation). Add --read-only to look without
being able to change anything. The database stays where it is: reach it through an SSH tunnel or
kubectl port-forward (see docs/operating.md), never by opening it to the network. --postgres or
--redis alone reads the URL from DATABASE_URL or REDIS_URL, which keeps its password off the
command line; a password is never printed.

Examples:
  $ export PIXHOOK_SECRET=whsec_from_the_dashboard
  $ pixhook dashboard                                          # http://127.0.0.1:${DEFAULT_PORT}/
  $ pixhook dashboard --port 0 --url http://localhost:3000/webhooks
  $ ssh -N -L 15432:127.0.0.1:5432 db.internal &               # the production database, on 127.0.0.1
  $ DATABASE_URL=postgres://app:password@127.0.0.1:15432/app pixhook dashboard --postgres --read-only
  $ pixhook dashboard --postgres --redis --queue billing-webhooks  # inbox on Postgres, BullMQ's dead letters`;

/** `pixhook dashboard`: the local web dashboard. */
export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description(
      "open a local web page to send, watch, replay and diagnose deliveries, and to look into production's inbox and dead letters (@pixhook/dashboard)",
    )
    .option('-p, --port <port>', 'the port on 127.0.0.1 (0: any free one)', portNumber, DEFAULT_PORT)
    .option('--url <receiver>', 'the receiver URL to start with, e.g. http://localhost:3000/webhooks', httpUrl)
    .addOption(secretOption().makeOptionMandatory(false))
    .option(
      '--postgres [url]',
      'production on Postgres: the inbox of a PostgresArchive and the dead letters of a pg-boss queue (alone: DATABASE_URL)',
    )
    .option(
      '--redis [url]',
      'production on Redis: the dead letters of a BullMQ queue and the inbox of a RedisArchive (alone: REDIS_URL)',
    )
    .addOption(
      new Option('--inbox <where>', 'with both --postgres and --redis: where the archive is').choices([
        'postgres',
        'redis',
      ]),
    )
    .option('--queue <name>', "the queue's name, as given to BullMQQueue or PgBossQueue (default: pixhook-webhooks)")
    .option('--prefix <prefix>', "BullMQ's key prefix, as given to BullMQQueue (default: bull)")
    .option('--schema <schema>', "pg-boss's schema (default: pgboss)")
    .option('--table <table>', "the PostgresArchive's table (default: pixhook_inbox)")
    .option('--inbox-prefix <prefix>', "the RedisArchive's key prefix (default: pixhook:inbox)")
    .option('--read-only', 'look without changing anything: no replay, retry or discard (in the page and its API)')
    .addHelpText('after', EXAMPLES)
    .action(async (options: DashboardCommandOptions) => {
      // An empty PIXHOOK_SECRET is no secret: the page asks for one.
      const secret = options.secret === '' ? undefined : options.secret;
      const problem = secret === undefined ? undefined : secretProblem(secret);
      if (problem) throw new UsageError(`The signing secret (--secret or PIXHOOK_SECRET): ${problem}`);
      const start = await loadDashboard();
      const opened = await openProduction(options);
      const { port, url } = options;
      const dashboard = await start({
        port,
        url,
        secret,
        inbox: opened.inbox,
        deadLetters: opened.deadLetters,
        readOnly: options.readOnly === true,
      }).catch(async (error: NodeJS.ErrnoException) => {
        await closeProduction(opened);
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
      for (const line of productionLines(opened, options.readOnly === true)) {
        process.stdout.write(`${pc.dim(escapeText(line))}\n`);
      }
      const stop = () => {
        dashboard
          .close()
          .then(() => closeProduction(opened))
          .then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

/** A URL given to `--postgres` / `--redis`, or the environment variable's when the flag came alone. */
function urlOf(value: string | true | undefined, variable: 'DATABASE_URL' | 'REDIS_URL', flag: string) {
  if (value === undefined) return undefined;
  if (value !== true) return value;
  const fromEnv = process.env[variable];
  if (fromEnv === undefined || fromEnv === '') {
    throw new UsageError(`${flag} without a URL reads ${variable}, which is not set: give ${flag} <url> or set it.`);
  }
  return fromEnv;
}

/**
 * The production views asked for: the inbox (on --postgres, else --redis; --inbox picks with both)
 * and the dead letters of the queue on each server given (pg-boss on Postgres, BullMQ on Redis).
 * A view that cannot be opened (no archive table, no pg-boss queue) is left out with a warning;
 * when none can be, the command fails with every reason. Passwords are masked in every message.
 */
async function openProduction(options: DashboardCommandOptions): Promise<Opened> {
  const postgres = urlOf(options.postgres, 'DATABASE_URL', '--postgres');
  const redis = urlOf(options.redis, 'REDIS_URL', '--redis');
  const opened: Opened = { inbox: undefined, deadLetters: [] };
  if (postgres === undefined && redis === undefined) {
    const stray = (['queue', 'prefix', 'schema', 'table', 'inboxPrefix', 'inbox', 'readOnly'] as const).find(
      (name) => options[name] !== undefined,
    );
    if (stray)
      throw new UsageError(
        '--queue, --prefix, --schema, --table, --inbox-prefix, --inbox and --read-only go with --postgres or --redis.',
      );
    return opened;
  }
  const { openDeadLetters, openInbox } = await import('../io/production.js');
  const inboxOn = options.inbox ?? (postgres !== undefined ? 'postgres' : 'redis');
  if ((inboxOn === 'postgres' ? postgres : redis) === undefined) {
    throw new UsageError(`--inbox ${inboxOn} needs --${inboxOn}.`);
  }
  const problems: string[] = [];
  const attempt = async <T>(what: string, open: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await open();
    } catch (error) {
      if (error instanceof UsageError) throw error;
      problems.push(`${what}: ${(error as Error).message}`);
      return undefined;
    }
  };
  opened.inbox = await attempt('Inbox', () =>
    openInbox(
      inboxOn === 'postgres'
        ? { postgres, table: options.table }
        : { redis, prefix: options.inboxPrefix, reconnect: true },
    ),
  );
  if (postgres !== undefined) {
    const letters = await attempt('Dead letters (pg-boss)', () =>
      openDeadLetters({ postgres, queue: options.queue, schema: options.schema }),
    );
    if (letters) opened.deadLetters.push(letters);
  }
  if (redis !== undefined) {
    const letters = await attempt('Dead letters (BullMQ)', () =>
      openDeadLetters({ redis, queue: options.queue, prefix: options.prefix, reconnect: true }),
    );
    if (letters) opened.deadLetters.push(letters);
  }
  if (!opened.inbox && opened.deadLetters.length === 0) {
    throw new FailedError(`Nothing of production could be opened:\n${problems.map((line) => `  ${line}`).join('\n')}`);
  }
  for (const line of problems) process.stderr.write(`${pc.yellow(`warning: ${escapeText(line)} (left out)`)}\n`);
  return opened;
}

/** What the dashboard shows of production, printable (passwords masked by io/production.ts). */
function productionLines(opened: Opened, readOnly: boolean): string[] {
  const lines: string[] = [];
  if (opened.inbox) lines.push(`production: ${opened.inbox.where}`);
  for (const letters of opened.deadLetters) lines.push(`production: dead letters of ${letters.where}`);
  if (lines.length > 0) {
    lines.push(
      readOnly
        ? 'read-only: replay, retry and discard are off'
        : 'replay, retry and discard are on: add --read-only to only look',
    );
  }
  return lines;
}

async function closeProduction(opened: Opened): Promise<void> {
  await Promise.all([opened.inbox?.close(), ...opened.deadLetters.map((letters) => letters.close())]);
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
