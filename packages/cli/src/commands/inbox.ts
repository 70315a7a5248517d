// `pixhook inbox …`: the archive of verified deliveries (PostgresArchive or RedisArchive), read
// through core's InboxReader (io/production.ts). Everything read from it (ids, types, headers,
// bodies, errors) is untrusted text: escaped before it reaches the terminal, `\uXXXX` in JSON.
import { createWriteStream, type WriteStream } from 'node:fs';
import type { InboxEvent, InboxOutcome, InboxQuery, InboxSummary, InboxTimelineEntry } from '@pixhook/core';
import { INBOX_OUTCOMES } from '@pixhook/core';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { FailedError, UsageError } from '../io/errors.js';
import { escapeText, safeJson } from '../io/escape.js';
import { positiveInteger, positiveNumber } from '../io/options.js';
import { pc, printJson } from '../io/output.js';
import {
  DEFAULT_INBOX_PREFIX,
  DEFAULT_INBOX_SCHEMA,
  DEFAULT_INBOX_TABLE,
  endWhenStalled,
  type InboxLocation,
  type OpenedInbox,
  openInbox,
} from '../io/production.js';
import { firstLine, indented, iso, isoSeconds, plural, table } from '../io/table.js';
import { formatDuration } from '../schedule.js';

/** Where the archive is, as typed: `true` is the option given alone (its environment variable). */
interface WhereOptions {
  postgres?: string | true;
  redis?: string | true;
  table?: string;
  schema?: string;
  prefix?: string;
}

/** The filters of list, replay and export. */
interface FilterOptions {
  type?: string;
  outcome?: InboxOutcome;
  since?: number;
  until?: number;
  event?: string;
  delivery?: string;
}

interface ListOptions extends WhereOptions, FilterOptions {
  limit: number;
  cursor?: string;
  json?: boolean;
}

interface ShowOptions extends WhereOptions {
  json?: boolean;
}

interface ReplayOptions extends WhereOptions, FilterOptions {
  yes?: boolean;
  max: number;
  wait?: boolean;
  timeout: number;
  json?: boolean;
}

interface ExportOptions extends WhereOptions, FilterOptions {
  output?: string;
  max?: number;
}

/** Events a filtered replay requests at most unless --max says more. */
const DEFAULT_REPLAY_MAX = 1_000;
/** Seconds `replay --wait` waits for the replays to show in the timelines. */
const DEFAULT_WAIT_SECONDS = 60;
/** Events per page when replay and export walk the inbox (the archives' largest page). */
const PAGE = 500;
/** How often `replay --wait` reads the timelines again, in ms. */
const WAIT_POLL_MS = 250;
/** Characters of an error shown in a timeline line. */
const ERROR_WIDTH = 100;

const EXIT_CODES =
  'Exit code: 0 when done, 1 when an event is not in the inbox, a replay failed or timed out, or the server fails, 2 for bad options.';

const WHERE_HELP = `The inbox is a PostgresArchive (@pixhook/postgres: --postgres <url>, --table, --schema) or a
RedisArchive (@pixhook/redis: --redis <url>, --prefix), the archive your app gives new Webhooks({ archive }).
--postgres or --redis alone reads DATABASE_URL or REDIS_URL (prefer them for a password: a command
line is visible to other users); with neither option, the one of DATABASE_URL and REDIS_URL that is
set. A connection string's password is never printed.`;

const EXAMPLES = `
The inbox keeps every verified delivery your app archived: the exact bytes and headers received,
and what happened to the event (handler runs, queue attempts, dead letter, replays), for its
retention. List and filter it, look at one event, ask the app to run events again, or export them.

${WHERE_HELP}

Examples:
  $ export DATABASE_URL=postgres://app:password@127.0.0.1:5432/app   # e.g. through ssh -L 5432:db:5432
  $ pixhook inbox list --outcome failed --since 2h
  $ pixhook inbox list --type image.created --since 2026-11-26T08:00:00Z --until 2026-11-26T09:00:00Z
  $ pixhook inbox list --json | jq -r '.items[].eventId'
  $ pixhook inbox show evt_1a2b3c
  $ pixhook inbox replay evt_1a2b3c --wait                 # once the handler's bug is fixed
  $ pixhook inbox replay --outcome failed --since 1d --yes
  $ pixhook inbox export --type image.created --since 7d --output fixtures.ndjson
  $ pixhook inbox list --redis redis://127.0.0.1:6379 --prefix billing:inbox

${EXIT_CODES}`;

// ---------------------------------------------------------------------------------------------
// Option parsers.

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * A time: an ISO 8601 date or date-time (`2026-11-26`, `2026-11-26T10:00:00Z`; without a zone, a
 * date-time is local time, a date is UTC midnight), or a duration ago (`90s`, `30m`, `2h`, `7d`,
 * `1w`), in ms since the epoch.
 */
export function timeOption(value: string): number {
  const duration = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(value.trim());
  if (duration) return Date.now() - Number(duration[1]) * (UNITS[duration[2] as string] as number);
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) {
    const ms = Date.parse(value.trim());
    if (Number.isFinite(ms)) return ms;
  }
  throw new InvalidArgumentError(
    'expected an ISO date or date-time (2026-11-26, 2026-11-26T10:00:00Z) or a duration ago (30m, 2h, 7d).',
  );
}

function pageLimit(value: string): number {
  const limit = positiveInteger(value);
  if (limit > PAGE) throw new InvalidArgumentError(`expected a whole number from 1 to ${PAGE}.`);
  return limit;
}

function nonEmpty(value: string): string {
  if (value === '') throw new InvalidArgumentError('expected a non-empty value.');
  return value;
}

/** --postgres, --redis, --table, --schema and --prefix, on each subcommand so that each one's help lists them. */
function addWhereOptions(command: Command): Command {
  return command
    .option(
      '--postgres [url]',
      'the inbox is a PostgresArchive there, e.g. postgres://user:password@host:5432/db; alone: DATABASE_URL',
    )
    .option('--redis [url]', 'the inbox is a RedisArchive there, e.g. redis://:password@host:6379/0; alone: REDIS_URL')
    .option('--table <name>', `Postgres: the archive's table (default: "${DEFAULT_INBOX_TABLE}")`, nonEmpty)
    .option('--schema <name>', `Postgres: the table's schema (default: "${DEFAULT_INBOX_SCHEMA}")`, nonEmpty)
    .option('--prefix <prefix>', `Redis: the archive's key prefix (default: "${DEFAULT_INBOX_PREFIX}")`, nonEmpty);
}

function addFilterOptions(command: Command): Command {
  return command
    .option('--type <type>', 'only events of this type, e.g. image.created')
    .addOption(new Option('--outcome <outcome>', 'only events whose outcome is this').choices(INBOX_OUTCOMES))
    .option(
      '--since <time>',
      'only events last seen at or after this: an ISO date or date-time, or a duration ago (30m, 2h, 7d)',
      timeOption,
    )
    .option('--until <time>', 'only events last seen before this (as --since)', timeOption)
    .option('--event <id>', 'only the event of this id', nonEmpty)
    .option('--delivery <id>', 'only the event one of whose deliveries had this X-Service-Delivery id', nonEmpty);
}

// ---------------------------------------------------------------------------------------------
// The commands.

/** `pixhook inbox …`: the archive of verified deliveries. */
export function registerInbox(program: Command): void {
  const group = program
    .command('inbox')
    .description('list, show, replay or export the archived deliveries (a PostgresArchive or RedisArchive)')
    .addHelpText('after', EXAMPLES);

  addWhereOptions(
    addFilterOptions(
      group
        .command('list')
        .description('list archived events, newest first (by their last entry), a page at a time')
        .option('--limit <n>', `most events per page, 1 to ${PAGE}`, pageLimit, 50)
        .option('--cursor <cursor>', "where the page starts: the previous page's next cursor", nonEmpty)
        .option('--json', 'print { items, next } as JSON instead of a table'),
    ),
  )
    .addHelpText('after', `\n${WHERE_HELP}\n\n${EXIT_CODES}`)
    .action((options: ListOptions) => withInbox(options, (inbox) => list(inbox, options)));

  addWhereOptions(
    group
      .command('show')
      .description('show one event: its ids, outcome, headers, the bytes received, and its timeline')
      .argument('<eventId>', "the event's id")
      .option('--json', 'print one JSON object (the body in base64, and as text when it is UTF-8)'),
  )
    .addHelpText('after', `\n${WHERE_HELP}\n\n${EXIT_CODES}`)
    .action((eventId: string, options: ShowOptions) => withInbox(options, (inbox) => show(inbox, eventId, options)));

  addWhereOptions(
    addFilterOptions(
      group
        .command('replay')
        .description("ask the app to run events' handlers again (named, or every one matching the filters with --yes)")
        .argument('[eventIds...]', "the events' ids")
        .option('--yes', 'confirm a replay of every event matching the filters')
        .option(
          '--max <n>',
          'most events a filtered replay requests: more matching is refused',
          positiveInteger,
          DEFAULT_REPLAY_MAX,
        )
        .option('--wait', "wait until each event's timeline shows its replay, and print how it went")
        .option('--timeout <seconds>', 'longest --wait', positiveNumber, DEFAULT_WAIT_SECONDS)
        .option('--json', 'print the result as JSON'),
    ),
  )
    .addHelpText(
      'after',
      `
A replay runs the event's handlers again from the archived bytes (verified on arrival: not signed
again), past its processed record, and is written in its timeline. It is run by your app: each
Webhooks given this archive (new Webhooks({ archive })) takes the requests within the archive's
replayPollMs (1 s by default). Nothing runs while no such app is up; --wait then times out.

${WHERE_HELP}

${EXIT_CODES}`,
    )
    .action((eventIds: string[], options: ReplayOptions) => {
      const target = replayTarget(eventIds, options);
      return withInbox(options, (inbox) => replay(inbox, target, options));
    });

  addWhereOptions(
    addFilterOptions(
      group
        .command('export')
        .description(
          'write the matching events as NDJSON, one event per line (body in base64, headers, timeline), newest first',
        )
        .option('-o, --output <file>', 'write to this file (replaced) instead of stdout')
        .option('--max <n>', 'most events to write (default: every matching one)', positiveInteger),
    ),
  )
    .addHelpText('after', `\n${WHERE_HELP}\n\n${EXIT_CODES}`)
    .action((options: ExportOptions) => withInbox(options, (inbox) => exportEvents(inbox, options)));
}

/** The environment variable's URL for an option given alone, or a usage error. */
function fromEnv(variable: 'DATABASE_URL' | 'REDIS_URL', option: string): string {
  const value = process.env[variable];
  if (!value)
    throw new UsageError(
      `${option} without a URL reads ${variable}, which is not set: set it, or pass ${option} <url>.`,
    );
  return value;
}

/** Where the inbox is, from the options and the environment (see WHERE_HELP). */
export function inboxLocation(options: WhereOptions): InboxLocation {
  let postgres = options.postgres === true ? fromEnv('DATABASE_URL', '--postgres') : options.postgres;
  let redis = options.redis === true ? fromEnv('REDIS_URL', '--redis') : options.redis;
  if (postgres !== undefined && redis !== undefined) {
    throw new UsageError('Give --postgres or --redis, not both: the inbox is on one of them.');
  }
  if (postgres === undefined && redis === undefined) {
    const database = process.env.DATABASE_URL || undefined;
    const redisUrl = process.env.REDIS_URL || undefined;
    if (database && redisUrl) {
      throw new UsageError(
        'Both DATABASE_URL and REDIS_URL are set: say where the inbox is with --postgres or --redis (alone, each reads its variable).',
      );
    }
    if (!database && !redisUrl) {
      throw new UsageError(
        'Where is the inbox? Pass --postgres <url> or --redis <url> (or set DATABASE_URL or REDIS_URL).',
      );
    }
    postgres = database;
    redis = redisUrl;
  }
  if (postgres !== undefined && options.prefix !== undefined) {
    throw new UsageError("--prefix is the Redis archive's: on Postgres, the archive is named by --table and --schema.");
  }
  if (redis !== undefined && (options.table !== undefined || options.schema !== undefined)) {
    throw new UsageError(
      "--table and --schema are the Postgres archive's: on Redis, the archive is named by --prefix.",
    );
  }
  return { postgres, redis, table: options.table, schema: options.schema, prefix: options.prefix };
}

/** Opens the inbox (within seconds, or a FailedError naming the server), runs `act`, and always closes it. */
async function withInbox(options: WhereOptions, act: (inbox: OpenedInbox) => Promise<void>): Promise<void> {
  try {
    const inbox = await openInbox(inboxLocation(options));
    try {
      await act(inbox);
    } finally {
      await inbox.close();
    }
  } finally {
    endWhenStalled();
  }
}

function queryOf(options: FilterOptions): InboxQuery {
  if (options.since !== undefined && options.until !== undefined && options.since >= options.until) {
    throw new UsageError('--since must be before --until.');
  }
  const query: InboxQuery = {};
  if (options.type !== undefined) query.type = options.type;
  if (options.outcome !== undefined) query.outcome = options.outcome;
  if (options.since !== undefined) query.since = Math.floor(options.since);
  if (options.until !== undefined) query.until = Math.floor(options.until);
  if (options.event !== undefined) query.eventId = options.event;
  if (options.delivery !== undefined) query.deliveryId = options.delivery;
  return query;
}

function hasFilter(options: FilterOptions): boolean {
  return ['type', 'outcome', 'since', 'until', 'event', 'delivery'].some(
    (name) => options[name as keyof FilterOptions] !== undefined,
  );
}

/** The filters as typed, for messages: `--outcome failed --since …`. */
function describeFilters(options: FilterOptions): string {
  const parts: string[] = [];
  if (options.type !== undefined) parts.push(`type ${options.type}`);
  if (options.outcome !== undefined) parts.push(`outcome ${options.outcome}`);
  if (options.since !== undefined) parts.push(`since ${iso(options.since)}`);
  if (options.until !== undefined) parts.push(`until ${iso(options.until)}`);
  if (options.event !== undefined) parts.push(`event ${options.event}`);
  if (options.delivery !== undefined) parts.push(`delivery ${options.delivery}`);
  return escapeText(parts.join(', '));
}

/** The events of every page matching `query`, newest first, up to `max` (undefined: all). */
async function* matching(inbox: OpenedInbox, query: InboxQuery, max?: number): AsyncGenerator<InboxSummary> {
  let cursor: string | undefined;
  let count = 0;
  do {
    const limit = max === undefined ? PAGE : Math.min(PAGE, max - count);
    if (limit <= 0) return;
    const page = await inbox.list({ ...query, limit, ...(cursor === undefined ? {} : { cursor }) });
    for (const item of page.items) {
      yield item;
      count++;
    }
    cursor = page.next;
  } while (cursor !== undefined);
}

// ---------------------------------------------------------------------------------------------
// list

async function list(inbox: OpenedInbox, options: ListOptions): Promise<void> {
  const query: InboxQuery = { ...queryOf(options), limit: options.limit };
  if (options.cursor !== undefined) query.cursor = options.cursor;
  const page = await inbox.list(query).catch((error: unknown) => {
    if (options.cursor !== undefined && error instanceof TypeError && /cursor/i.test(error.message)) {
      throw new UsageError(
        "--cursor is not one this inbox gave: copy the 'next page: --cursor …' of the previous page, with the same filters.",
      );
    }
    throw error;
  });
  if (options.json) {
    printJson({ items: page.items, next: page.next ?? null });
    return;
  }
  const where = escapeText(inbox.where);
  if (page.items.length === 0) {
    const filtered = hasFilter(options) ? ` match ${describeFilters(options)}` : '';
    const start = options.cursor === undefined ? '' : ' from this cursor';
    process.stdout.write(`No events in ${where}${filtered}${start}.\n`);
    return;
  }
  const filtered = hasFilter(options) ? ` matching ${describeFilters(options)}` : '';
  process.stdout.write(`${pc.bold(escapeText(inbox.where))}${filtered}, newest first\n`);
  const rows = page.items.map((item) => [
    isoSeconds(item.lastAt),
    outcomeColour(item.outcome),
    escapeText(item.eventType),
    escapeText(item.eventId),
    String(item.deliveries),
    String(item.bytes),
    item.mode,
  ]);
  process.stdout.write(
    table(['LAST AT', 'OUTCOME', 'EVENT TYPE', 'EVENT ID', 'DELIVERIES', 'BYTES', 'MODE'], rows, (cell) =>
      visibleLength(cell),
    ),
  );
  const count = `${page.items.length} ${plural(page.items.length, 'event')}`;
  process.stdout.write(
    pc.dim(page.next === undefined ? `${count}; the last page\n` : `${count}; next page: --cursor ${page.next}\n`),
  );
}

/** Characters shown of a cell that may hold colour codes. */
function visibleLength(cell: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing colour codes is the point.
  return cell.replace(/\u001b\[[0-9;]*m/g, '').length;
}

function outcomeColour(outcome: string): string {
  if (outcome === 'processed') return pc.green(outcome);
  if (outcome === 'failed' || outcome === 'dead-letter') return pc.red(outcome);
  return pc.yellow(escapeText(outcome));
}

// ---------------------------------------------------------------------------------------------
// show

/** An event as --json and export print it: the body in base64, and as text when it is UTF-8. */
function jsonOf(event: InboxEvent) {
  const { body, headers, timeline, ...summary } = event;
  return {
    ...summary,
    created: summary.created ?? null,
    headers,
    body: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'),
    text: utf8(body) ?? null,
    timeline,
  };
}

/** The bytes as text when they are valid UTF-8, else undefined. */
function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function notFound(eventId: string, where: string): FailedError {
  return new FailedError(
    `No event ${safeJson(eventId)} in ${where}: pixhook inbox list shows what is there (is it past the retention, or are --table/--prefix right?).`,
  );
}

async function show(inbox: OpenedInbox, eventId: string, options: ShowOptions): Promise<void> {
  const event = await inbox.get(eventId);
  if (!event) throw notFound(eventId, inbox.where);
  if (options.json) {
    printJson(jsonOf(event));
    return;
  }
  const out = (text: string) => process.stdout.write(text);
  const field = (name: string, value: string) => out(`  ${pc.dim(name.padEnd(12))} ${value}\n`);
  out(`Event ${pc.bold(escapeText(event.eventId))} in ${escapeText(inbox.where)}\n`);
  field('type', pc.bold(escapeText(event.eventType)));
  field('outcome', outcomeColour(event.outcome));
  if (event.created !== undefined) field('created', `${event.created} (${isoSeconds(event.created * 1000)})`);
  field('first at', iso(event.firstAt));
  field('last at', iso(event.lastAt));
  field('deliveries', String(event.deliveries));
  field('mode', event.mode);

  out(`${pc.bold('Headers')} ${pc.dim('(its first delivery, as received)')}\n`);
  for (const [name, value] of Object.entries(event.headers)) out(`  ${escapeText(name)}: ${escapeText(value)}\n`);

  const text = utf8(event.body);
  const size = `${event.body.byteLength} ${plural(event.body.byteLength, 'byte')}`;
  if (text !== undefined) {
    out(
      `${pc.bold('Body')} ${pc.dim(`(${size}, UTF-8 text; control characters shown escaped; --json has the exact bytes)`)}\n`,
    );
    out(text === '' ? pc.dim('  (empty)\n') : indented(text));
  } else {
    out(`${pc.bold('Body')} ${pc.dim(`(${size}, not UTF-8: in hexadecimal)`)}\n${hexDump(event.body)}`);
  }

  out(`${pc.bold('Timeline')} ${pc.dim('(oldest first)')}\n`);
  for (const entry of event.timeline) out(timelineLines(entry));
}

/** 16 bytes a line: the offset, the bytes in hexadecimal, and the printable ASCII ones. */
function hexDump(bytes: Uint8Array): string {
  let text = '';
  for (let offset = 0; offset < bytes.byteLength; offset += 16) {
    const row = bytes.subarray(offset, offset + 16);
    const hex = Array.from(row, (byte) => byte.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (byte) => (byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : '.')).join('');
    text += `  ${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}\n`;
  }
  return text;
}

function resultColour(result: string): string {
  if (result === 'processed' || result === 'duplicate') return pc.green(result);
  if (result === 'failed' || result === 'dead-letter') return pc.red(result);
  return pc.yellow(escapeText(result));
}

/** One timeline entry: a line of what happened, then one per handler run. */
function timelineLines(entry: InboxTimelineEntry): string {
  const parts: string[] = [];
  if (entry.kind === 'delivery') {
    parts.push(`${entry.status}${entry.code ? ` ${escapeText(entry.code)}` : ''}`);
    parts.push(`delivery ${escapeText(entry.deliveryId)}`);
  } else {
    if (entry.attempt !== undefined) {
      parts.push(`attempt ${entry.attempt}${entry.maxAttempts === undefined ? '' : `/${entry.maxAttempts}`}`);
    }
    if (entry.jobId !== undefined) parts.push(`job ${escapeText(entry.jobId)}`);
  }
  parts.push(formatDuration(entry.ms));
  let text = `  ${isoSeconds(entry.at)}  ${entry.kind.padEnd(8)}  ${resultColour(entry.result)}  ${pc.dim(parts.join(', '))}\n`;
  if (entry.kind !== 'delivery' && entry.error) {
    text += `      ${pc.red('error')} ${escapeText(firstLine(entry.error, ERROR_WIDTH))}\n`;
  }
  for (const run of entry.runs) {
    const error = run.error ? ` ${escapeText(firstLine(run.error, ERROR_WIDTH))}` : '';
    text += `      ${run.ok ? pc.green('✓') : pc.red('✗')} ${escapeText(run.handler)} ${pc.dim(formatDuration(run.ms))}${error}\n`;
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// replay

type ReplayTarget = { ids: string[] } | { filtered: true };

function replayTarget(eventIds: string[], options: ReplayOptions): ReplayTarget {
  const ids = [...new Set(eventIds)];
  if (ids.some((id) => id === '')) throw new UsageError('An event id is a non-empty string.');
  if (ids.length > 0 && hasFilter(options)) {
    throw new UsageError('Name the events to replay or give filters (with --yes), not both.');
  }
  if (ids.length > 0) return { ids };
  if (!hasFilter(options) && !options.yes) {
    throw new UsageError(
      'Name the events to replay (pixhook inbox list shows them), or give filters (--type, --outcome, --since …) and --yes.',
    );
  }
  return { filtered: true };
}

interface ReplayReport {
  eventId: string;
  eventType: string;
  /** The replay's result in the timeline; `timeout` when --wait ended first. */
  result: string;
  at?: number;
  ms?: number;
  jobId?: string;
  error?: string;
}

async function replay(inbox: OpenedInbox, target: ReplayTarget, options: ReplayOptions): Promise<void> {
  const where = inbox.where;
  let events: InboxSummary[];
  let missing: string[] = [];
  if ('ids' in target) {
    const found = await Promise.all(
      target.ids.map(async (id) => (await inbox.list({ eventId: id, limit: 1 })).items[0]),
    );
    events = found.filter((item): item is InboxSummary => item !== undefined);
    missing = target.ids.filter((_, index) => found[index] === undefined);
    if (events.length === 0) {
      throw target.ids.length === 1
        ? notFound(target.ids[0] as string, where)
        : new FailedError(`None of these events is in ${where}: pixhook inbox list shows what is there.`);
    }
  } else {
    events = [];
    for await (const item of matching(inbox, queryOf(options), options.max + 1)) events.push(item);
    const filters = hasFilter(options) ? ` matching ${describeFilters(options)}` : '';
    if (events.length === 0) {
      if (options.json) printJson({ requested: 0, missing: [], results: [] });
      else process.stdout.write(`No events in ${escapeText(where)}${filters}: nothing to replay.\n`);
      return;
    }
    if (events.length > options.max) {
      throw new UsageError(
        `More than ${options.max} events in ${where}${filters}: narrow the filters, or raise --max.`,
      );
    }
    if (!options.yes) {
      const count = `${events.length} ${plural(events.length, 'event')}`;
      throw new UsageError(
        `${count} in ${where}${filters}: add --yes to run their handlers again (pixhook inbox list with the same filters shows them).`,
      );
    }
  }
  // Before the requests: each event's replays so far, to see the new one.
  const before = options.wait ? await replaysOf(inbox, events) : undefined;
  let requested = 0;
  for (let start = 0; start < events.length; start += PAGE) {
    requested += await inbox.requestReplay(events.slice(start, start + PAGE).map((event) => event.eventId));
  }
  if (!options.json) {
    for (const id of missing)
      process.stderr.write(`${pc.yellow('!')} ${escapeText(id)} is not in the inbox: skipped\n`);
  }
  if (!before) {
    if (options.json) printJson({ requested, missing, results: null });
    else {
      process.stdout.write(
        `${pc.green('✓')} ${requested} ${plural(requested, 'replay')} requested in ${escapeText(where)}: your app (a Webhooks given this archive) runs ${requested === 1 ? 'it' : 'them'} within its replayPollMs (1 s by default); --wait shows ${requested === 1 ? 'it' : 'them'} run.\n`,
      );
    }
    if (missing.length > 0) process.exitCode = 1;
    return;
  }
  const results = await waitForReplays(inbox, events, before, options);
  const failed = results.filter((result) => result.result === 'failed' || result.result === 'timeout');
  if (options.json) printJson({ requested, missing, results });
  else {
    const timedOut = results.filter((result) => result.result === 'timeout').length;
    if (timedOut > 0) {
      process.stdout.write(
        `${pc.red('✗')} ${timedOut} ${plural(timedOut, 'replay')} not run within ${options.timeout} s: is your app (a Webhooks given this archive) running?\n`,
      );
    }
  }
  if (failed.length > 0 || missing.length > 0) process.exitCode = 1;
}

/** How many replay entries each event's timeline holds now. */
async function replaysOf(inbox: OpenedInbox, events: InboxSummary[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const event of events) {
    const full = await inbox.get(event.eventId);
    counts.set(event.eventId, full?.timeline.filter((entry) => entry.kind === 'replay').length ?? 0);
  }
  return counts;
}

/** Reads the timelines until each shows one replay more than `before`, or the timeout; prints each as it lands. */
async function waitForReplays(
  inbox: OpenedInbox,
  events: InboxSummary[],
  before: Map<string, number>,
  options: ReplayOptions,
): Promise<ReplayReport[]> {
  const deadline = performance.now() + options.timeout * 1000;
  const pending = new Map(events.map((event) => [event.eventId, event]));
  const results: ReplayReport[] = [];
  while (pending.size > 0) {
    for (const [id, summary] of pending) {
      const event = await inbox.get(id);
      const replays = event?.timeline.filter((entry) => entry.kind === 'replay') ?? [];
      const entry = replays[before.get(id) ?? 0];
      if (entry?.kind !== 'replay') continue;
      pending.delete(id);
      const report: ReplayReport = {
        eventId: id,
        eventType: summary.eventType,
        result: entry.result,
        at: entry.at,
        ms: entry.ms,
      };
      if (entry.jobId !== undefined) report.jobId = entry.jobId;
      if (entry.error !== undefined) report.error = entry.error;
      results.push(report);
      if (!options.json) process.stdout.write(replayLine(report));
    }
    if (pending.size === 0 || performance.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
  }
  for (const [id, summary] of pending) results.push({ eventId: id, eventType: summary.eventType, result: 'timeout' });
  return results;
}

function replayLine(report: ReplayReport): string {
  const name = `${escapeText(report.eventId)} (${escapeText(report.eventType)})`;
  const took = report.ms === undefined ? '' : ` in ${formatDuration(report.ms)}`;
  if (report.result === 'processed') return `${pc.green('✓')} ${name} replayed: processed${took}\n`;
  if (report.result === 'queued') {
    const job = report.jobId === undefined ? '' : ` ${escapeText(report.jobId)}`;
    return `${pc.green('✓')} ${name} replayed: queued as a new job${job}; the queue's workers run it\n`;
  }
  const error = report.error ? `: ${escapeText(firstLine(report.error, ERROR_WIDTH))}` : '';
  return `${pc.red('✗')} ${name} replayed: ${escapeText(report.result)}${took}${error}\n`;
}

// ---------------------------------------------------------------------------------------------
// export

async function exportEvents(inbox: OpenedInbox, options: ExportOptions): Promise<void> {
  const file = options.output;
  const stream = file === undefined ? undefined : await openOutput(file);
  const output: NodeJS.WritableStream = stream ?? process.stdout;
  let count = 0;
  try {
    for await (const summary of matching(inbox, queryOf(options), options.max)) {
      const event = await inbox.get(summary.eventId);
      // Pruned since it was listed.
      if (!event) continue;
      await write(output, `${safeJson(jsonOf(event))}\n`, file);
      count++;
    }
  } finally {
    // Closed whether it ended or failed: a failed stream never says it finished, but it closes.
    if (stream) {
      await new Promise<void>((resolve) => {
        if (stream.closed) return resolve();
        stream.once('close', () => resolve());
        stream.end();
      });
    }
  }
  const filters = hasFilter(options) ? ` matching ${describeFilters(options)}` : '';
  const to = file === undefined ? '' : ` to ${escapeText(file)}`;
  process.stderr.write(
    `${pc.green('✓')} ${count} ${plural(count, 'event')} of ${escapeText(inbox.where)}${filters} exported${to} (NDJSON, newest first)\n`,
  );
}

/** A file to write, opened (replaced), or a UsageError naming why it cannot be. */
async function openOutput(file: string): Promise<WriteStream> {
  const stream = createWriteStream(file);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (error: NodeJS.ErrnoException) =>
      reject(new UsageError(`Cannot write ${file}: ${error.code ?? error.message}.`)),
    );
  });
  // From here a failure is heard by the write that met it (write()); this keeps it from being an
  // unhandled 'error' event.
  stream.on('error', () => {});
  return stream;
}

/**
 * Writes `text` and waits until it is handed to the system: a write that fails (a full disk) fails
 * the command, whenever the error comes (the write's own callback hears it, not a listener that
 * may already be gone).
 */
function write(stream: NodeJS.WritableStream, text: string, file: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (error?: NodeJS.ErrnoException | null) => {
      if (error) reject(new FailedError(`Cannot write ${file ?? 'the output'}: ${error.code ?? error.message}.`));
      else resolve();
    });
  });
}
