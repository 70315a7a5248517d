// Opening production data for `pixhook inbox`, `pixhook dead-letters` and `pixhook dashboard`: an
// archive (`PostgresArchive` of @pixhook/postgres, `RedisArchive` of @pixhook/redis) read through
// core's `InboxReader`, and a queue's dead letters (`BullMQQueue` on Redis, `PgBossQueue` on a
// pg-boss started for the command). Every package here is an optional peer dependency of the CLI,
// imported when a command needs it. A connection string's password is never printed: every
// message names the URL with it masked, and a driver's message is scrubbed of it.
import {
  DEAD_LETTER_METHODS,
  type DeadLetterSource,
  type InboxEvent,
  type InboxPage,
  type InboxQuery,
  type InboxReader,
} from '@pixhook/core';
import { FailedError, UsageError } from './errors.js';
import {
  describePostgresError,
  errorCode,
  POSTGRES_TIMEOUT_MS,
  PostgresTimeoutError,
  type PostgresUrl,
  parsePostgresUrl,
} from './postgres.js';
import {
  describeRedisError,
  ONE_SHOT_CONNECTION,
  parseRedisUrl,
  REDIS_TIMEOUT_MS,
  RedisTimeoutError,
  type RedisUrl,
} from './redis.js';

/** The archive's table on Postgres when `table` is not given (PostgresArchive's default). */
export const DEFAULT_INBOX_TABLE = 'pixhook_inbox';
/** The archive's schema on Postgres when `schema` is not given (PostgresArchive's default). */
export const DEFAULT_INBOX_SCHEMA = 'public';
/** The archive's key prefix on Redis when `prefix` is not given (RedisArchive's default). */
export const DEFAULT_INBOX_PREFIX = 'pixhook:inbox';
/** The queue's name when `queue` is not given (BullMQQueue's and PgBossQueue's default). */
export const DEFAULT_QUEUE = 'pixhook-webhooks';
/** BullMQ's key prefix when `prefix` is not given. */
export const DEFAULT_BULLMQ_PREFIX = 'bull';
/** pg-boss's schema when `schema` is not given. */
export const DEFAULT_PGBOSS_SCHEMA = 'pgboss';

/** Where an archive is: exactly one of `postgres` and `redis`. */
export interface InboxLocation {
  /** A `postgres://` URL: the archive is a PostgresArchive there. */
  postgres?: string | undefined;
  /** A `redis://` or `rediss://` URL: the archive is a RedisArchive there. */
  redis?: string | undefined;
  /** Postgres: the archive's table (PostgresArchive's `table`). @default 'pixhook_inbox' */
  table?: string | undefined;
  /** Postgres: the table's schema (PostgresArchive's `schema`). @default 'public' */
  schema?: string | undefined;
  /** Redis: the archive's key prefix (RedisArchive's `prefix`). @default 'pixhook:inbox' */
  prefix?: string | undefined;
  /**
   * Redis: reconnect after a lost connection (for a process that stays up, like the dashboard);
   * false fails at once instead (a command that runs once). Postgres always takes a new
   * connection from its pool. @default false
   */
  reconnect?: boolean | undefined;
}

/** An archive opened by {@link openInbox}: core's `InboxReader`, plus where it is (password masked). */
export interface OpenedInbox extends InboxReader {
  /** `inbox public.pixhook_inbox on postgres://app:***@db:5432/app`: printable, never the password. */
  readonly where: string;
  /** `'postgres'` or `'redis'`. */
  readonly kind: 'postgres' | 'redis';
  /** Closes the archive and the connection opened for it; resolves within half a second, even with a stalled server. */
  close(): Promise<void>;
}

/** Where a queue's dead letters are: exactly one of `postgres` (pg-boss) and `redis` (BullMQ). */
export interface DeadLetterLocation {
  /** A `postgres://` URL: the queue is a pg-boss queue there (PgBossQueue). */
  postgres?: string | undefined;
  /** A `redis://` or `rediss://` URL: the queue is a BullMQ queue there (BullMQQueue). */
  redis?: string | undefined;
  /** The queue's name, as given to BullMQQueue or PgBossQueue. @default 'pixhook-webhooks' */
  queue?: string | undefined;
  /** BullMQ: the key prefix. @default 'bull' */
  prefix?: string | undefined;
  /** pg-boss: the schema of its tables. @default 'pgboss' */
  schema?: string | undefined;
  /** Redis: reconnect after a lost connection (see {@link InboxLocation.reconnect}). @default false */
  reconnect?: boolean | undefined;
}

/**
 * A queue's dead letters, opened by {@link openDeadLetters}: the dead-letter methods of BullMQQueue
 * and PgBossQueue, the engine and the queue's name, and where it is (password masked).
 */
export interface OpenedDeadLetters extends DeadLetterSource {
  readonly engine: 'bullmq' | 'pg-boss';
  /** `queue pixhook-webhooks (prefix bull) on redis://:***@host:6379`: printable, never the password. */
  readonly where: string;
  /** Closes the queue and the connection (and the pg-boss) opened for it; resolves within half a second, even with a stalled server. */
  close(): Promise<void>;
}

/** How long `close()` waits for a connection to end (a stalled server may never answer). */
const CLOSE_TIMEOUT_MS = 500;
/** How long after a command that runs once a socket may still hold the process open. */
const STALLED_EXIT_MS = 1_000;

/**
 * For a command that runs once (not the dashboard, not a library user): ends the process if a
 * stalled server's socket still holds it open `STALLED_EXIT_MS` after the command is done, with
 * the exit code already set. Unref'd: when nothing else holds the process, it ends by itself first.
 */
export function endWhenStalled(): void {
  setTimeout(() => process.exit(), STALLED_EXIT_MS).unref();
}

/** Exactly one of the two URLs, or a usage error saying so. */
function oneServer(location: { postgres?: string | undefined; redis?: string | undefined }, what: string) {
  const postgres = location.postgres === '' ? undefined : location.postgres;
  const redis = location.redis === '' ? undefined : location.redis;
  if (postgres !== undefined && redis !== undefined) {
    throw new UsageError(
      `${what}: give --postgres or --redis, not both (DATABASE_URL and REDIS_URL both set? pass the one you mean).`,
    );
  }
  if (postgres === undefined && redis === undefined) {
    throw new UsageError(
      `${what}: say where it is with --postgres <url> (or DATABASE_URL) or --redis <url> (or REDIS_URL).`,
    );
  }
  return postgres !== undefined
    ? ({ kind: 'postgres', url: parsePostgresUrl(postgres) } as const)
    : ({ kind: 'redis', url: parseRedisUrl(redis as string) } as const);
}

/** A name for a table, schema or prefix: non-empty, printable. */
function checkName(value: string | undefined, fallback: string, option: string): string {
  if (value === undefined) return fallback;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
  if (value === '' || value.length > 200 || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new UsageError(`${option} must be a non-empty name without control characters.`);
  }
  return value;
}

/**
 * An optional peer dependency, or a FailedError naming the command that installs it. Only a
 * missing `name` itself is reported so; an error inside it is rethrown.
 */
async function loadPeer<T>(name: string, load: () => Promise<T>, purpose: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException)?.code;
    const missing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      (error as Error).message.includes(`'${name}'`);
    if (!missing) throw error;
    throw new FailedError(
      `pixhook: ${purpose} needs ${name}, which is not installed: install it beside @pixhook/cli (npm install --save-dev ${name}), in the project whose data it reads.`,
    );
  }
}

/** Rejects with `timeout()` after `ms`, else settles as `promise`. */
function within<T>(promise: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Runs `close`, waiting at most CLOSE_TIMEOUT_MS: a stalled server never holds up the caller (a
 * command ends with {@link endWhenStalled}). A failure to close is not the caller's failure.
 */
async function closeWithin(close: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    close().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
}

/** Errors from a server, as a FailedError naming it (password masked); a TypeError (bad input) passes. */
function failure(error: unknown, describe: (error: unknown) => string): Error {
  if (error instanceof TypeError || error instanceof UsageError || error instanceof FailedError) return error;
  return new FailedError(describe(error));
}

/** Every method of `target` named in `names`, with its errors made into FailedErrors by `describe`. */
function guarded<T extends object>(target: T, names: readonly (keyof T)[], describe: (error: unknown) => string): T {
  const wrapped = {} as T;
  for (const name of names) {
    const method = target[name] as unknown as (...args: unknown[]) => Promise<unknown>;
    (wrapped as Record<keyof T, unknown>)[name] = async (...args: unknown[]) => {
      try {
        return await method.apply(target, args);
      } catch (error) {
        throw failure(error, describe);
      }
    };
  }
  return wrapped;
}

// ---------------------------------------------------------------------------------------------
// The inbox.

type ArchiveConstructor = new (client: unknown, options?: Record<string, unknown>) => InboxReader;

/** The Postgres errors that mean the archive's table is not there, explained. */
function explainInbox(error: unknown, url: PostgresUrl, schema: string, table: string): string {
  const code = errorCode(error);
  if (code === '42P01' || code === '3F000') {
    return `There is no inbox table ${schema}.${table} on Postgres at ${url.shown}: is the archive on (new Webhooks({ archive: new PostgresArchive(pool) })) and migrated (migrateArchive(pool))? Check --table and --schema.`;
  }
  return describePostgresError(error, url);
}

/**
 * Opens the archive at `location` for reading: a PostgresArchive (a `pg` pool of a few connections)
 * or a RedisArchive (an ioredis connection), with background pruning off (reading never deletes).
 * Resolves once a first page was read (within a few seconds); rejects with a UsageError for bad
 * options, a FailedError naming the server (password masked) when it cannot be read.
 *
 * @example
 * const inbox = await openInbox({ postgres: process.env.DATABASE_URL })
 * const { items } = await inbox.list({ outcome: 'failed' })
 * await inbox.close()
 */
export async function openInbox(location: InboxLocation): Promise<OpenedInbox> {
  const server = oneServer(location, 'The inbox');
  if (server.kind === 'postgres') {
    const table = checkName(location.table, DEFAULT_INBOX_TABLE, '--table');
    const schema = checkName(location.schema, DEFAULT_INBOX_SCHEMA, '--schema');
    const url = server.url;
    const [{ PostgresArchive }, pg] = await Promise.all([
      loadPeer('@pixhook/postgres', () => import('@pixhook/postgres'), 'inbox --postgres') as Promise<{
        PostgresArchive?: ArchiveConstructor;
      }>,
      loadPeer('pg', () => import('pg'), 'inbox --postgres'),
    ]);
    if (typeof PostgresArchive !== 'function') {
      throw new FailedError(
        'pixhook: the installed @pixhook/postgres has no PostgresArchive: install the same version as @pixhook/cli.',
      );
    }
    const pool = newPool(pg, url);
    const where = `inbox ${schema}.${table} on ${url.shown}`;
    const archive = openArchive(
      () => new PostgresArchive(pool, { schema, table, pruneIntervalMs: false }),
      () => pool.end(),
    );
    return opened(archive, 'postgres', where, (error) => explainInbox(error, url, schema, table));
  }
  const prefix = checkName(location.prefix, DEFAULT_INBOX_PREFIX, '--prefix');
  const url = server.url;
  const [{ RedisArchive }, Redis] = await Promise.all([
    loadPeer('@pixhook/redis', () => import('@pixhook/redis'), 'inbox --redis') as Promise<{
      RedisArchive?: ArchiveConstructor;
    }>,
    loadIoRedis('inbox --redis'),
  ]);
  if (typeof RedisArchive !== 'function') {
    throw new FailedError(
      'pixhook: the installed @pixhook/redis has no RedisArchive: install the same version as @pixhook/cli.',
    );
  }
  const client = newRedis(Redis, url, location.reconnect === true);
  const where = `inbox ${prefix} on ${url.shown}`;
  const describe = (error: unknown) => describeRedisError(error, url);
  try {
    await within(client.connect(), REDIS_TIMEOUT_MS, () => new RedisTimeoutError());
  } catch (error) {
    client.disconnect();
    throw failure(error, describe);
  }
  const archive = openArchive(
    () => new RedisArchive(client, { prefix, pruneIntervalMs: false }),
    async () => {
      await client.quit().catch(() => client.disconnect());
    },
  );
  return opened(archive, 'redis', where, describe);
}

/** The archive and how to end its connection; a constructor that throws ends the connection first. */
function openArchive(create: () => InboxReader, end: () => Promise<unknown>): { reader: InboxReader; end: typeof end } {
  try {
    return { reader: create(), end };
  } catch (error) {
    void end().catch(() => {});
    throw error;
  }
}

/** The reader, checked with a first read, its errors named, its close ending the connection. */
async function opened(
  archive: { reader: InboxReader; end: () => Promise<unknown> },
  kind: 'postgres' | 'redis',
  where: string,
  describe: (error: unknown) => string,
): Promise<OpenedInbox> {
  const { reader, end } = archive;
  const close = () =>
    closeWithin(async () => {
      await reader.close().catch(() => {});
      await end();
    });
  const methods = guarded(reader, ['list', 'get', 'requestReplay', 'prune'], describe);
  const inbox: OpenedInbox = {
    kind,
    where,
    list: (query?: InboxQuery): Promise<InboxPage> => methods.list(query),
    get: (eventId: string): Promise<InboxEvent | undefined> => methods.get(eventId),
    requestReplay: (eventIds: readonly string[]) => methods.requestReplay(eventIds),
    prune: () => methods.prune(),
    close,
  };
  try {
    await within(inbox.list({ limit: 1 }), POSTGRES_TIMEOUT_MS, () =>
      kind === 'postgres' ? new PostgresTimeoutError() : new RedisTimeoutError(),
    ).catch((error: unknown) => {
      throw failure(error, describe);
    });
  } catch (error) {
    await close();
    throw error;
  }
  return inbox;
}

interface PgModule {
  Pool?: new (config: Record<string, unknown>) => PgPool;
  default?: { Pool: new (config: Record<string, unknown>) => PgPool };
}

interface PgPool {
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** A small pool with bounded waits; an idle connection Postgres drops is not a crash. */
function newPool(pg: unknown, url: PostgresUrl): PgPool {
  const module = pg as PgModule;
  const Pool = module.default?.Pool ?? module.Pool;
  if (!Pool) throw new FailedError('pixhook: the installed pg has no Pool: install pg 8.');
  const pool = new Pool({
    connectionString: url.href,
    max: 4,
    connectionTimeoutMillis: POSTGRES_TIMEOUT_MS,
    idleTimeoutMillis: 10_000,
    application_name: 'pixhook-cli',
  });
  pool.on('error', () => {});
  return pool;
}

interface IoRedisClient {
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

type IoRedisConstructor = new (url: string, options: Record<string, unknown>) => IoRedisClient;

async function loadIoRedis(purpose: string): Promise<IoRedisConstructor> {
  const module = (await loadPeer('ioredis', () => import('ioredis'), purpose)) as unknown as {
    Redis?: IoRedisConstructor;
    default?: IoRedisConstructor | { Redis?: IoRedisConstructor };
  };
  const Redis =
    module.Redis ??
    (typeof module.default === 'function' ? module.default : (module.default as { Redis?: IoRedisConstructor })?.Redis);
  if (!Redis) throw new FailedError('pixhook: the installed ioredis has no Redis class: install ioredis 5.');
  return Redis;
}

/** An ioredis client connected on `connect()`: once (a command) or reconnecting (the dashboard). */
function newRedis(Redis: IoRedisConstructor, url: RedisUrl, reconnect: boolean): IoRedisClient {
  const client = new Redis(url.href, {
    ...ONE_SHOT_CONNECTION,
    lazyConnect: true,
    ...(reconnect ? { retryStrategy: (times: number) => Math.min(times * 200, 2_000) } : {}),
  });
  // Errors reach the commands that fail; an 'error' event with no listener would end the process.
  client.on('error', () => {});
  return client;
}

// ---------------------------------------------------------------------------------------------
// Dead letters.

type DeadLetterMethods = Pick<OpenedDeadLetters, (typeof DEAD_LETTER_METHODS)[number]>;

/** A BullMQ prefix or queue name: non-empty, without `:` (BullMQ's separator). */
function bullName(value: string | undefined, fallback: string, option: string): string {
  if (value === undefined) return fallback;
  if (value === '' || value.includes(':')) throw new UsageError(`${option}: expected a non-empty name without ':'.`);
  return value;
}

/** A pg-boss queue name: letters, digits, `_`, `-` and `.`, up to 100 characters (pg-boss's rule). */
function pgBossName(value: string | undefined): string {
  if (value === undefined) return DEFAULT_QUEUE;
  if (!/^[\w.-]{1,100}$/.test(value)) {
    throw new UsageError(
      "--queue: a pg-boss queue's name has letters, digits, '_', '-' and '.', up to 100 characters.",
    );
  }
  return value;
}

/** A Postgres schema name: an identifier (pixhook puts it in its statements). */
function schemaName(value: string | undefined): string {
  if (value === undefined) return DEFAULT_PGBOSS_SCHEMA;
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(value)) {
    throw new UsageError(
      "--schema: expected a Postgres identifier (letters, digits and '_', not starting with a digit).",
    );
  }
  return value;
}

/**
 * Opens a queue's dead letters: a BullMQQueue on `redis`, or a PgBossQueue on a pg-boss started
 * here on `postgres` (no maintenance, no cron, no migration: it only reads and changes dead
 * letters; a queue that does not exist is reported, not created). Resolves once the server
 * answered (within a few seconds); rejects with a UsageError for bad options, a FailedError
 * naming the server (password masked) otherwise.
 *
 * @example
 * const letters = await openDeadLetters({ postgres: process.env.DATABASE_URL, queue: 'billing' })
 * console.log(await letters.countDeadLetters())
 * await letters.close()
 */
export async function openDeadLetters(location: DeadLetterLocation): Promise<OpenedDeadLetters> {
  const server = oneServer(location, 'The dead letters');
  if (server.kind === 'redis') {
    const name = bullName(location.queue, DEFAULT_QUEUE, '--queue');
    const prefix = bullName(location.prefix, DEFAULT_BULLMQ_PREFIX, '--prefix');
    return openBullMQ(server.url, name, prefix, location.reconnect === true);
  }
  return openPgBoss(server.url, pgBossName(location.queue), schemaName(location.schema));
}

async function openBullMQ(url: RedisUrl, name: string, prefix: string, reconnect: boolean) {
  const { BullMQQueue } = await loadPeer('@pixhook/bullmq', () => import('@pixhook/bullmq'), 'dead-letters');
  const where = `queue ${name} (prefix ${prefix}) on ${url.shown}`;
  const describe = (error: unknown) => describeRedisError(error, url);
  const queue = new BullMQQueue({
    connection: {
      url: url.href,
      ...ONE_SHOT_CONNECTION,
      ...(reconnect ? { retryStrategy: (times: number) => Math.min(times * 200, 2_000) } : {}),
    },
    name,
    prefix,
  });
  const close = () => closeWithin(() => queue.close());
  try {
    await within(queue.bullQueue.waitUntilReady(), REDIS_TIMEOUT_MS, () => new RedisTimeoutError());
  } catch (error) {
    await close();
    throw failure(error, describe);
  }
  return deadLetters(queue, 'bullmq', name, where, describe, close);
}

interface PgBossInstance {
  start(): Promise<unknown>;
  stop(options?: Record<string, unknown>): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  getQueue(name: string): Promise<unknown>;
}

async function openPgBoss(url: PostgresUrl, name: string, schema: string) {
  const [{ PgBossQueue }, pgBoss] = await Promise.all([
    loadPeer('@pixhook/pg-boss', () => import('@pixhook/pg-boss'), 'dead-letters --postgres'),
    loadPeer('pg-boss', () => import('pg-boss'), 'dead-letters --postgres'),
  ]);
  const PgBoss = ((pgBoss as { default?: unknown }).default ?? pgBoss) as new (
    options: Record<string, unknown>,
  ) => PgBossInstance;
  const where = `pg-boss queue ${name} (schema ${schema}) on ${url.shown}`;
  const describe = (error: unknown) => explainPgBoss(error, url, schema);
  // Only what reading and changing dead letters needs: no maintenance, no cron, no migration
  // (a pg-boss of another version, or none, is reported, never installed or migrated here).
  const boss = new PgBoss({
    connectionString: url.href,
    schema,
    supervise: false,
    schedule: false,
    migrate: false,
    max: 2,
    connectionTimeoutMillis: POSTGRES_TIMEOUT_MS,
    application_name: 'pixhook-cli',
  });
  boss.on('error', () => {});
  const close = () => closeWithin(() => boss.stop({ graceful: false, close: true }));
  try {
    await within(boss.start(), POSTGRES_TIMEOUT_MS, () => new PostgresTimeoutError());
    if (!(await within(boss.getQueue(name), POSTGRES_TIMEOUT_MS, () => new PostgresTimeoutError()))) {
      throw new FailedError(
        `There is no pg-boss queue ${name} in schema ${schema} on Postgres at ${url.shown}: check --queue (the name given to PgBossQueue) and --schema.`,
      );
    }
  } catch (error) {
    await close();
    throw failure(error, describe);
  }
  const queue = new PgBossQueue(boss as never, { name, schema });
  return deadLetters(queue, 'pg-boss', name, where, describe, close);
}

function explainPgBoss(error: unknown, url: PostgresUrl, schema: string): string {
  const message = error instanceof Error ? error.message : '';
  if (message === 'pg-boss is not installed' || errorCode(error) === '3F000') {
    return `pg-boss is not installed in schema ${schema} on Postgres at ${url.shown}: check --schema (the schema given to new PgBoss()).`;
  }
  if (message === 'pg-boss database requires migrations') {
    return `pg-boss in schema ${schema} on Postgres at ${url.shown} is of another version than the CLI's pg-boss: start your app's pg-boss once (it migrates), or use the CLI of the same release.`;
  }
  return describePostgresError(error, url);
}

function deadLetters(
  queue: DeadLetterMethods,
  engine: 'bullmq' | 'pg-boss',
  queueName: string,
  where: string,
  describe: (error: unknown) => string,
  close: () => Promise<void>,
): OpenedDeadLetters {
  return { engine, queueName, where, ...guarded(queue, DEAD_LETTER_METHODS, describe), close };
}
