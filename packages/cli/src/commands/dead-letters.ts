// @pixhook/bullmq (BullMQ, ioredis) and @pixhook/pg-boss (pg-boss) are optional peer dependencies,
// imported when a dead-letters command runs (io/production.ts), so that the other commands neither
// load nor need them.
import type { DeadLetter } from '@pixhook/core';
import { type Command, Option } from 'commander';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText, safeJson } from '../io/escape.js';
import { nonNegativeInteger, positiveInteger } from '../io/options.js';
import { pc, printJson } from '../io/output.js';
import {
  DEFAULT_BULLMQ_PREFIX,
  DEFAULT_PGBOSS_SCHEMA,
  DEFAULT_QUEUE,
  endWhenStalled,
  type OpenedDeadLetters,
  openDeadLetters,
} from '../io/production.js';
import { DEFAULT_REDIS_URL, queueName } from '../io/redis.js';
import { firstLine, indented, iso, isoSeconds, plural, table } from '../io/table.js';

/** Options every dead-letters subcommand takes: where the queue is. */
interface QueueOptions {
  redis: string;
  /** `true`: --postgres with no URL, DATABASE_URL says. */
  postgres?: string | true;
  queue: string;
  prefix: string;
  schema: string;
}

interface ListOptions extends QueueOptions {
  limit: number;
  offset: number;
  json?: boolean;
}

interface ShowOptions extends QueueOptions {
  json?: boolean;
}

interface RetryOptions extends QueueOptions {
  all?: boolean;
}

interface DiscardOptions extends QueueOptions {
  all?: boolean;
  yes?: boolean;
}

/** Characters of the last error shown in `list`: its first line, cut to this. */
const ERROR_WIDTH = 60;

const EXIT_CODES =
  'Exit code: 0 when done, 1 when there is no such dead letter or Redis (Postgres) fails, 2 for bad options.';

const EXAMPLES = `
With queued processing (@pixhook/bullmq or @pixhook/pg-boss), an event whose handlers failed on
every attempt is kept as a dead letter: list them, look at one, run them again with all their
attempts, or discard them. A dead letter is named by its job id or by its event id.

BullMQ: Redis comes from --redis, else the REDIS_URL environment variable, else ${DEFAULT_REDIS_URL}.
Use the queue name and prefix your BullMQQueue was created with.
pg-boss: --postgres <url>, or --postgres alone to read the DATABASE_URL environment variable. Use
the queue name your PgBossQueue was created with, and --schema if your PgBoss has another schema.
A connection string's password is never printed.

Examples:
  $ export REDIS_URL=redis://:password@redis.internal:6379
  $ pixhook dead-letters list
  $ pixhook dead-letters show evt_1a2b3c
  $ pixhook dead-letters retry evt_1a2b3c                   # once the handler's problem is fixed
  $ pixhook dead-letters retry --all
  $ pixhook dead-letters discard evt_1a2b3c
  $ pixhook dead-letters discard --all --yes
  $ pixhook dead-letters list --queue billing-webhooks --json | jq -r '.[].eventId'
  $ export DATABASE_URL=postgres://app:password@db.internal:5432/app
  $ pixhook dead-letters list --postgres                    # pg-boss, on DATABASE_URL
  $ pixhook dead-letters retry evt_1a2b3c --postgres --queue billing-webhooks

${EXIT_CODES}`;

/** Where the queue is, on each subcommand so that each one's help lists them. */
function addQueueOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--redis <url>',
        'BullMQ: Redis, e.g. redis://:password@host:6379/0 (prefer REDIS_URL for a password: a command line is visible to other users)',
      )
        .env('REDIS_URL')
        .default(DEFAULT_REDIS_URL),
    )
    .option(
      '--postgres [url]',
      'pg-boss: Postgres, e.g. postgres://user:password@host:5432/db; alone, the DATABASE_URL environment variable (prefer it for a password)',
    )
    .option('--queue <name>', "the queue's name", queueName, DEFAULT_QUEUE)
    .option('--prefix <prefix>', "BullMQ: the BullMQQueue's key prefix", queueName, DEFAULT_BULLMQ_PREFIX)
    .option(
      '--schema <name>',
      "pg-boss: the schema of pg-boss's tables (new PgBoss({ schema }))",
      DEFAULT_PGBOSS_SCHEMA,
    );
}

/** `pixhook dead-letters …`: the dead letters of queued processing on BullMQ. */
export function registerDeadLetters(program: Command): void {
  const group = program
    .command('dead-letters')
    .description('list, show, retry or discard the dead letters of queued processing (BullMQ or pg-boss)')
    .addHelpText('after', EXAMPLES);

  addQueueOptions(
    group
      .command('list')
      .description('list dead letters, newest first, with how many there are')
      .option('--limit <n>', 'most dead letters to show', positiveInteger, 20)
      .option('--offset <n>', 'dead letters to skip, newest first', nonNegativeInteger, 0)
      .option('--json', 'print a JSON array instead of a table'),
  ).action((options: ListOptions, command: Command) =>
    withQueue(options, command, (queue, where) => list(queue, where, options)),
  );

  addQueueOptions(
    group
      .command('show')
      .description('show one dead letter: its event, ids, times, attempts, last error and stack')
      .argument('<id>', 'its job id or event id')
      .option('--json', 'print one JSON object instead of text'),
  ).action((id: string, options: ShowOptions, command: Command) =>
    withQueue(options, command, (queue, where) => show(queue, where, id, options)),
  );

  addQueueOptions(
    group
      .command('retry')
      .description('run a dead letter (or every one, --all) again, with all its attempts anew')
      .argument('[id]', 'its job id or event id')
      .option('--all', 'retry every dead letter of the queue'),
  ).action((id: string | undefined, options: RetryOptions, command: Command) => {
    const target = oneOrAll(id, options.all, 'retry');
    return withQueue(options, command, (queue, where) => retry(queue, where, target));
  });

  addQueueOptions(
    group
      .command('discard')
      .description('delete a dead letter (or every one, --all --yes) for good: its event is never run')
      .argument('[id]', 'its job id or event id')
      .option('--all', 'discard every dead letter of the queue (with --yes)')
      .option('--yes', 'confirm --all'),
  ).action((id: string | undefined, options: DiscardOptions, command: Command) => {
    const target = oneOrAll(id, options.all, 'discard');
    if (target === ALL && !options.yes) {
      throw new UsageError(
        `discard --all deletes every dead letter of queue ${options.queue} for good: add --yes to confirm (list shows them first).`,
      );
    }
    return withQueue(options, command, (queue, where) => discard(queue, where, target));
  });
}

const ALL = Symbol('all');

/** The id, or ALL: exactly one of the two. */
function oneOrAll(id: string | undefined, all: boolean | undefined, verb: string): string | typeof ALL {
  if (id !== undefined && all) throw new UsageError("Give a dead letter's id or --all, not both.");
  if (all) return ALL;
  if (id === undefined || id === '') {
    throw new UsageError(
      `Name the dead letter to ${verb} (its job id or event id: see pixhook dead-letters list), or pass --all.`,
    );
  }
  return id;
}

/**
 * Where the queue is: pg-boss on --postgres (a URL, or DATABASE_URL when given alone), else BullMQ
 * on --redis (or REDIS_URL, or the default). --redis typed beside --postgres is refused, as are
 * --schema with BullMQ and --prefix with pg-boss.
 */
function location(options: QueueOptions, command: Command) {
  const typed = (name: string) => command.getOptionValueSource(name) === 'cli';
  if (options.postgres === undefined) {
    if (typed('schema')) throw new UsageError("--schema is pg-boss's: use it with --postgres.");
    return { redis: options.redis, queue: options.queue, prefix: options.prefix };
  }
  if (typed('redis')) throw new UsageError('Give --postgres (pg-boss) or --redis (BullMQ), not both.');
  if (typed('prefix')) throw new UsageError("--prefix is BullMQ's: pg-boss has --schema.");
  let postgres = options.postgres;
  if (postgres === true) {
    postgres = process.env.DATABASE_URL ?? '';
    if (postgres === '') {
      throw new UsageError(
        '--postgres without a URL reads DATABASE_URL, which is not set: set it, or pass --postgres <url>.',
      );
    }
  }
  return { postgres, queue: options.queue, schema: options.schema };
}

/** Opens the queue (within seconds, or a FailedError naming the server), runs `act`, and always closes it. */
async function withQueue(
  options: QueueOptions,
  command: Command,
  act: (queue: OpenedDeadLetters, where: string) => Promise<void>,
) {
  try {
    const queue = await openDeadLetters(location(options, command));
    try {
      await act(queue, queue.where);
    } finally {
      await queue.close();
    }
  } finally {
    endWhenStalled();
  }
}

// ---------------------------------------------------------------------------------------------
// The subcommands.

async function list(queue: OpenedDeadLetters, where: string, options: ListOptions): Promise<void> {
  const [total, letters] = await Promise.all([
    queue.countDeadLetters(),
    queue.listDeadLetters({ offset: options.offset, limit: options.limit }),
  ]);
  if (options.json) {
    printJson(letters.map(jsonOf));
    return;
  }
  if (total === 0) {
    process.stdout.write(`No dead letters in ${escapeText(where)}.\n`);
    return;
  }
  process.stdout.write(`${pc.bold(String(total))} ${plural(total, 'dead letter')} in ${escapeText(where)}\n`);
  if (letters.length === 0) {
    process.stdout.write(`None from --offset ${options.offset}: try a smaller one.\n`);
    return;
  }
  const rows = letters.map((letter) => [
    escapeText(letter.jobId),
    escapeText(letter.delivery?.event.type ?? '-'),
    escapeText(letter.delivery?.event.id ?? '-'),
    String(letter.attemptsMade),
    letter.failedAt === undefined ? '-' : isoSeconds(letter.failedAt),
    escapeText(firstLine(letter.error, ERROR_WIDTH)),
  ]);
  process.stdout.write(table(['JOB ID', 'EVENT TYPE', 'EVENT ID', 'ATTEMPTS', 'FAILED AT', 'LAST ERROR'], rows));
  const first = options.offset + 1;
  const last = options.offset + letters.length;
  const more = last < total ? `; --offset ${last} for the next ones` : '';
  const range = first === last ? String(first) : `${first}–${last}`;
  process.stdout.write(pc.dim(`showing ${range} of ${total}, newest first${more}\n`));
}

async function show(queue: OpenedDeadLetters, where: string, id: string, options: ShowOptions): Promise<void> {
  const letter = await queue.getDeadLetter(id);
  if (!letter) throw notFound(id, where);
  if (options.json) {
    printJson(jsonOf(letter));
    return;
  }
  const { delivery } = letter;
  const field = (name: string, value: string) => process.stdout.write(`  ${pc.dim(name.padEnd(12))} ${value}\n`);
  process.stdout.write(`Dead letter ${pc.bold(escapeText(letter.jobId))} in ${escapeText(where)}\n`);
  if (delivery) {
    field('event type', pc.bold(escapeText(delivery.event.type)));
    field('event id', escapeText(delivery.event.id));
    field('delivery id', escapeText(delivery.deliveryId));
    field('timestamp', `${delivery.timestamp} (${isoSeconds(delivery.timestamp * 1000)}, the signature's t)`);
  } else {
    field('event', pc.yellow('none: this job does not hold a pixhook delivery (was it added by something else?)'));
  }
  field('attempts', `${letter.attemptsMade} failed`);
  field('queued at', iso(letter.queuedAt));
  field('failed at', letter.failedAt === undefined ? '-' : iso(letter.failedAt));
  process.stdout.write(`${pc.bold('Last error')}\n${indented(letter.error || '(no message)')}`);
  if (letter.stack) process.stdout.write(`${pc.bold('Stack')}\n${indented(letter.stack)}`);
  if (delivery) process.stdout.write(`${pc.bold('Event')}\n${safeJson(delivery.event, 2)}\n`);
}

async function retry(queue: OpenedDeadLetters, where: string, target: string | typeof ALL): Promise<void> {
  if (target === ALL) {
    const count = await queue.retryAllDeadLetters();
    process.stdout.write(
      count === 0
        ? `No dead letters to retry in ${escapeText(where)}.\n`
        : `${pc.green('✓')} ${count} ${plural(count, 'dead letter')} queued again, each with all its attempts anew: the queue's workers run them next.\n`,
    );
    return;
  }
  const letter = await queue.getDeadLetter(target);
  if (!letter || !(await queue.retryDeadLetter(letter.jobId))) throw notFound(target, where);
  process.stdout.write(
    `${pc.green('✓')} ${describe(letter)} queued again with all its attempts anew (it had failed ${letter.attemptsMade} ${plural(letter.attemptsMade, 'time')}): the queue's workers run it next.\n`,
  );
}

async function discard(queue: OpenedDeadLetters, where: string, target: string | typeof ALL): Promise<void> {
  if (target === ALL) {
    const count = await queue.discardAllDeadLetters();
    process.stdout.write(
      count === 0
        ? `No dead letters to discard in ${escapeText(where)}.\n`
        : `${pc.green('✓')} ${count} ${plural(count, 'dead letter')} discarded: their events will not run.\n`,
    );
    return;
  }
  const letter = await queue.getDeadLetter(target);
  if (!letter || !(await queue.discardDeadLetter(letter.jobId))) throw notFound(target, where);
  process.stdout.write(
    `${pc.green('✓')} ${describe(letter)} discarded: it will not run (a new delivery of its event id would be queued anew).\n`,
  );
}

// ---------------------------------------------------------------------------------------------
// Formatting. Everything read from Redis (ids, types, errors, stacks, the event) is untrusted
// text: it is escaped before it reaches the terminal.

function notFound(id: string, where: string): FailedError {
  return new FailedError(
    `No dead letter ${safeJson(id)} in ${where}: pixhook dead-letters list shows them (are --queue and --prefix or --schema right?).`,
  );
}

/** `evt_1 (image.created)`, escaped. */
function describe(letter: DeadLetter): string {
  const { delivery } = letter;
  if (!delivery) return `Job ${escapeText(letter.jobId)}`;
  const job = delivery.event.id === letter.jobId ? '' : ` (job ${escapeText(letter.jobId)})`;
  return `${escapeText(delivery.event.id)}${job} (${escapeText(delivery.event.type)})`;
}

/** A dead letter for --json: the event's id and type at the top for `jq`, then all of it. */
function jsonOf(letter: DeadLetter) {
  return {
    jobId: letter.jobId,
    eventId: letter.delivery?.event.id ?? null,
    type: letter.delivery?.event.type ?? null,
    attemptsMade: letter.attemptsMade,
    queuedAt: letter.queuedAt,
    failedAt: letter.failedAt ?? null,
    error: letter.error,
    stack: letter.stack ?? null,
    delivery: letter.delivery ?? null,
  };
}
