// Types only: @pixhook/bullmq (and BullMQ, ioredis) is an optional peer dependency, imported when a
// dead-letters command runs (loadBullMQ), so that the other commands neither load nor need it.
import type { BullMQQueue, DeadLetter } from '@pixhook/bullmq';
import { type Command, Option } from 'commander';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText, safeJson } from '../io/escape.js';
import { nonNegativeInteger, positiveInteger } from '../io/options.js';
import { pc, printJson } from '../io/output.js';
import {
  DEFAULT_REDIS_URL,
  describeRedisError,
  ONE_SHOT_CONNECTION,
  parseRedisUrl,
  queueName,
  REDIS_TIMEOUT_MS,
  RedisTimeoutError,
  type RedisUrl,
} from '../io/redis.js';

/** Options every dead-letters subcommand takes: where the queue is. */
interface QueueOptions {
  redis: string;
  queue: string;
  prefix: string;
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

const DEFAULT_QUEUE = 'pixhook-webhooks';
const DEFAULT_PREFIX = 'bull';
/** Characters of the last error shown in `list`: its first line, cut to this. */
const ERROR_WIDTH = 60;
/** How long closing the queue may take before the process stops anyway (a stalled Redis). */
const CLOSE_TIMEOUT_MS = 200;

const EXIT_CODES = 'Exit code: 0 when done, 1 when there is no such dead letter or Redis fails, 2 for bad options.';

const EXAMPLES = `
With queued processing (@pixhook/bullmq), an event whose handlers failed on every attempt is kept
in Redis as a dead letter: list them, look at one, run them again with all their attempts, or
discard them. A dead letter is named by its BullMQ job id or by its event id.

Redis comes from --redis, else the REDIS_URL environment variable, else ${DEFAULT_REDIS_URL};
its password is never printed. Use the queue name and prefix your BullMQQueue was created with.

Examples:
  $ export REDIS_URL=redis://:password@redis.internal:6379
  $ pixhook dead-letters list
  $ pixhook dead-letters show evt_1a2b3c
  $ pixhook dead-letters retry evt_1a2b3c                   # once the handler's problem is fixed
  $ pixhook dead-letters retry --all
  $ pixhook dead-letters discard evt_1a2b3c
  $ pixhook dead-letters discard --all --yes
  $ pixhook dead-letters list --queue billing-webhooks --json | jq -r '.[].eventId'

${EXIT_CODES}`;

/** `--redis`, `--queue` and `--prefix`, on each subcommand so that each one's help lists them. */
function addQueueOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--redis <url>',
        'Redis, e.g. redis://:password@host:6379/0 (prefer REDIS_URL for a password: a command line is visible to other users)',
      )
        .env('REDIS_URL')
        .default(DEFAULT_REDIS_URL),
    )
    .option('--queue <name>', "the BullMQQueue's name", queueName, DEFAULT_QUEUE)
    .option('--prefix <prefix>', "the BullMQQueue's key prefix", queueName, DEFAULT_PREFIX);
}

/** `pixhook dead-letters …`: the dead letters of queued processing on BullMQ. */
export function registerDeadLetters(program: Command): void {
  const group = program
    .command('dead-letters')
    .description('list, show, retry or discard the dead letters of queued processing (@pixhook/bullmq)')
    .addHelpText('after', EXAMPLES);

  addQueueOptions(
    group
      .command('list')
      .description('list dead letters, newest first, with how many there are')
      .option('--limit <n>', 'most dead letters to show', positiveInteger, 20)
      .option('--offset <n>', 'dead letters to skip, newest first', nonNegativeInteger, 0)
      .option('--json', 'print a JSON array instead of a table'),
  ).action((options: ListOptions) => withQueue(options, (queue, where) => list(queue, where, options)));

  addQueueOptions(
    group
      .command('show')
      .description('show one dead letter: its event, ids, times, attempts, last error and stack')
      .argument('<id>', 'its job id or event id')
      .option('--json', 'print one JSON object instead of text'),
  ).action((id: string, options: ShowOptions) => withQueue(options, (queue, where) => show(queue, where, id, options)));

  addQueueOptions(
    group
      .command('retry')
      .description('run a dead letter (or every one, --all) again, with all its attempts anew')
      .argument('[id]', 'its job id or event id')
      .option('--all', 'retry every dead letter of the queue'),
  ).action((id: string | undefined, options: RetryOptions) => {
    const target = oneOrAll(id, options.all, 'retry');
    return withQueue(options, (queue, where) => retry(queue, where, target));
  });

  addQueueOptions(
    group
      .command('discard')
      .description('delete a dead letter (or every one, --all --yes) for good: its event is never run')
      .argument('[id]', 'its job id or event id')
      .option('--all', 'discard every dead letter of the queue (with --yes)')
      .option('--yes', 'confirm --all'),
  ).action((id: string | undefined, options: DiscardOptions) => {
    const target = oneOrAll(id, options.all, 'discard');
    if (target === ALL && !options.yes) {
      throw new UsageError(
        `discard --all deletes every dead letter of queue ${options.queue} for good: add --yes to confirm (list shows them first).`,
      );
    }
    return withQueue(options, (queue, where) => discard(queue, where, target));
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
 * Opens the queue, waits (at most REDIS_TIMEOUT_MS) for Redis to answer, runs `act`, and always
 * closes the queue. A Redis failure becomes a FailedError naming the URL, its password masked.
 */
async function withQueue(options: QueueOptions, act: (queue: BullMQQueue, where: string) => Promise<void>) {
  const redis = parseRedisUrl(options.redis);
  const where = `queue ${options.queue} (prefix ${options.prefix}) on ${redis.shown}`;
  const { BullMQQueue } = await loadBullMQ();
  const queue = new BullMQQueue({
    connection: { url: redis.href, ...ONE_SHOT_CONNECTION },
    name: options.queue,
    prefix: options.prefix,
  });
  try {
    await readyWithin(queue, REDIS_TIMEOUT_MS);
    await act(queue, where);
  } catch (error) {
    throw error instanceof UsageError || error instanceof FailedError ? error : redisFailure(error, redis);
  } finally {
    await close(queue);
  }
}

/**
 * `@pixhook/bullmq`, which only the dead-letters commands need: an optional peer dependency of the
 * CLI, installed beside it by those who process deliveries with BullMQ. Missing, it is named with
 * the command that installs it.
 */
async function loadBullMQ(): Promise<typeof import('@pixhook/bullmq')> {
  try {
    return await import('@pixhook/bullmq');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException)?.code;
    const missing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      /['"]@pixhook\/bullmq['"]/.test((error as Error).message);
    if (!missing) throw error;
    throw new FailedError(
      'pixhook: dead-letters needs @pixhook/bullmq, which is not installed: install it beside @pixhook/cli (npm install --save-dev @pixhook/bullmq), in the project whose queue it reads.',
    );
  }
}

function redisFailure(error: unknown, redis: RedisUrl): FailedError {
  return new FailedError(describeRedisError(error, redis));
}

/** Resolves once Redis answered, rejects with its error, or with a RedisTimeoutError after `ms`. */
function readyWithin(queue: BullMQQueue, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError()), ms);
  });
  return Promise.race([queue.bullQueue.waitUntilReady(), timeout]).finally(() => clearTimeout(timer));
}

/**
 * Closes the queue's connection. A stalled Redis can hold it open past CLOSE_TIMEOUT_MS: the
 * process then ends anyway, once the result (or the error) has been printed.
 */
async function close(queue: BullMQQueue): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    queue.close().then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  // Unref'd: it only fires if something (the stalled socket) still keeps the process alive, after
  // the message has been printed (cli.ts prints it in the promise chain that ends here).
  if (!closed) setTimeout(() => process.exit(), 100).unref();
}

// ---------------------------------------------------------------------------------------------
// The subcommands.

async function list(queue: BullMQQueue, where: string, options: ListOptions): Promise<void> {
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

async function show(queue: BullMQQueue, where: string, id: string, options: ShowOptions): Promise<void> {
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

async function retry(queue: BullMQQueue, where: string, target: string | typeof ALL): Promise<void> {
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

async function discard(queue: BullMQQueue, where: string, target: string | typeof ALL): Promise<void> {
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
    `No dead letter ${safeJson(id)} in ${where}: pixhook dead-letters list shows them (are --queue and --prefix right?).`,
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

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function isoSeconds(ms: number): string {
  return iso(ms).replace(/\.\d{3}Z$/, 'Z');
}

/** The first line of a text, cut to `width` characters (whole code points), unescaped. */
function firstLine(text: string, width: number): string {
  const line = text.split(/\r\n|[\r\n\u2028\u2029]/, 1)[0] ?? '';
  const chars = Array.from(line);
  const more = chars.length > width || line.length < text.length;
  return `${chars.slice(0, width).join('')}${more ? '…' : ''}`;
}

/** Each line escaped on its own and indented, so that a stack keeps its shape and nothing raw gets through. */
function indented(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => `  ${escapeText(line)}\n`)
    .join('');
}

/** Left-aligned columns, two spaces apart; the cells are escaped already. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ');
  return `${pc.dim(line(header))}\n${rows.map((row) => `${line(row)}\n`).join('')}`;
}
