import { assertKnownOptions, DEFAULT_COMPLETED_TTL_MS, DEFAULT_IN_FLIGHT_TTL_MS, describeType } from '@pixhook/core';
import { type ArchiveNames, archiveNames } from './archive-sql.js';
import { type TableName, tableName } from './sql.js';

/** Where the table lives: shared by `migrate()`, `PostgresStore` and `PostgresTransactions`. */
export interface TableOptions {
  /**
   * The schema of pixhook's table. It must exist (`public` always does).
   * @default 'public'
   */
  schema?: string;
  /**
   * The table that records processed events. Several apps or endpoints sharing one database use one
   * table each; instances that must de-duplicate together use the same one.
   * @default 'pixhook_events'
   */
  table?: string;
}

/** Options of `PostgresTransactions`. */
export interface PostgresTransactionsOptions extends TableOptions {
  /**
   * How long a processed event is remembered, in ms. The service's retries span about 32.6 hours
   * (1 min + 5 min + 30 min + 2 h + 6 h + 24 h), so keep it above that.
   * @default 172_800_000 (48 hours, DEFAULT_COMPLETED_TTL_MS)
   */
  completedTtlMs?: number;
  /**
   * Longest wait, in ms, for each of pixhook's own steps: a connection from the pool, the round trip
   * of `BEGIN`, the lock and the check, and that of the record and `COMMIT` (for `PostgresStore`:
   * each call, from when it is made, including its wait for a statement it can share). Past it the
   * delivery answers 503 `STORE_UNAVAILABLE` (the connection is closed, so Postgres rolls back
   * whatever was open) and the service retries; a `COMMIT` that timed out or lost its connection is
   * read back on another connection for up to `timeoutMs` more (200 when the event's record is
   * there, 503 when it is absent or unknown): without it, a pool waiting for a connection to a
   * Postgres that is away would hold the request past the service's 10-second deadline. The
   * handlers' own queries are not bounded by it. At most 9_000.
   * @default 2_000
   */
  timeoutMs?: number;
  /**
   * How often processed events past `completedTtlMs` are deleted, in ms: at most once per interval,
   * in the background of a delivery. `false` turns it off (call `prune()` yourself, from a cron job).
   * @default 600_000 (10 minutes)
   */
  pruneIntervalMs?: number | false;
  /**
   * Send pixhook's statements as named prepared statements (prepared once per connection), which
   * halves Postgres's CPU per event. Set `false` behind a pooler that cannot keep them, such as
   * PgBouncer before 1.21 in transaction mode.
   * @default true
   */
  preparedStatements?: boolean;
}

/** Options of `PostgresStore`. */
export interface PostgresStoreOptions extends PostgresTransactionsOptions {
  /**
   * How long a claim holds while handlers run, in ms. An instance that dies mid-handler blocks its
   * event for this long (retries meanwhile answer 409). Core renews the claim of a handler running
   * past `handlerTimeoutMs`, so a slow handler keeps it.
   * @default 600_000 (10 minutes, DEFAULT_IN_FLIGHT_TTL_MS)
   */
  inFlightTtlMs?: number;
  /**
   * Most claims (and, apart, most completions) sent to Postgres in one statement. Claims made while
   * the store's statements are in flight go together in the next one (group commit): one round trip
   * and one commit for many deliveries. A claim never waits for others to come: when nothing is in
   * flight it goes on the next turn of the event loop. Each call keeps its own `timeoutMs` and gets
   * the answer it would get alone; a statement that fails answers each of its calls with the error
   * (503). `1` sends each claim and completion in a statement of its own.
   * @default 64
   */
  batchSize?: number;
}

export interface ResolvedOptions {
  readonly table: TableName;
  readonly completedTtlMs: number;
  readonly inFlightTtlMs: number;
  readonly timeoutMs: number;
  readonly pruneIntervalMs: number | undefined;
  readonly preparedStatements: boolean;
  /** 1 for `PostgresTransactions`, which has no batches. */
  readonly batchSize: number;
}

/** Default of `batchSize`. */
export const DEFAULT_BATCH_SIZE = 64;
/** Most calls in one statement: its arrays stay small, and one failure answers few deliveries. */
const MAX_BATCH_SIZE = 1_000;

/** Default of `timeoutMs`: leaves the steps and the handlers within the 10 s deadline. */
export const DEFAULT_TIMEOUT_MS = 2_000;
/** The service gives up on an answer after 10 s; a wait near that would always be too late. */
const MAX_TIMEOUT_MS = 9_000;
const DEFAULT_PRUNE_INTERVAL_MS = 10 * 60 * 1000;

const TABLE_OPTIONS = ['schema', 'table'] as const;
const TRANSACTIONS_OPTIONS = [
  ...TABLE_OPTIONS,
  'completedTtlMs',
  'timeoutMs',
  'pruneIntervalMs',
  'preparedStatements',
] as const;
const STORE_OPTIONS = [...TRANSACTIONS_OPTIONS, 'inFlightTtlMs', 'batchSize'] as const;

function milliseconds(owner: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(
      `pixhook: ${owner}: ${name} must be a positive whole number of milliseconds, got ${describeType(value)}.`,
    );
  }
  return value;
}

function checkedObject(owner: string, options: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`pixhook: ${owner}: options must be an object, got ${describeType(options)}.`);
  }
  return options as Record<string, unknown>;
}

/** The table's name from `schema` and `table`, checked. */
export function resolveTable(owner: string, options: unknown): TableName {
  const given = checkedObject(owner, options);
  return tableName(owner, given.schema ?? 'public', given.table ?? 'pixhook_events');
}

/** `migrate()`'s options, checked. */
export function resolveTableOptions(owner: string, options: unknown): TableName {
  const given = checkedObject(owner, options);
  assertKnownOptions(given, TABLE_OPTIONS, `pixhook: ${owner}`);
  return resolveTable(owner, given);
}

/** Applies the defaults and throws a `TypeError`/`RangeError` for an option that cannot work. */
export function resolveOptions(owner: 'PostgresStore' | 'PostgresTransactions', options: unknown): ResolvedOptions {
  const given = checkedObject(owner, options);
  assertKnownOptions(given, owner === 'PostgresStore' ? STORE_OPTIONS : TRANSACTIONS_OPTIONS, `pixhook: ${owner}`);
  const timeoutMs = milliseconds(owner, 'timeoutMs', given.timeoutMs, DEFAULT_TIMEOUT_MS);
  if (timeoutMs > MAX_TIMEOUT_MS) {
    throw new RangeError(
      `pixhook: ${owner}: timeoutMs is ${timeoutMs}, above ${MAX_TIMEOUT_MS}: the service stops waiting for an answer after 10 s, so a longer wait could never answer in time.`,
    );
  }
  const pruneIntervalMs =
    given.pruneIntervalMs === false
      ? undefined
      : milliseconds(owner, 'pruneIntervalMs', given.pruneIntervalMs, DEFAULT_PRUNE_INTERVAL_MS);
  const preparedStatements = given.preparedStatements ?? true;
  if (typeof preparedStatements !== 'boolean') {
    throw new TypeError(
      `pixhook: ${owner}: preparedStatements must be true or false, got ${describeType(preparedStatements)}.`,
    );
  }
  const batchSize = given.batchSize ?? (owner === 'PostgresStore' ? DEFAULT_BATCH_SIZE : 1);
  if (typeof batchSize !== 'number' || !Number.isSafeInteger(batchSize) || batchSize <= 0) {
    throw new TypeError(
      `pixhook: ${owner}: batchSize must be a positive whole number, got ${describeType(batchSize)}.`,
    );
  }
  if (batchSize > MAX_BATCH_SIZE) {
    throw new RangeError(`pixhook: ${owner}: batchSize is ${batchSize}, above ${MAX_BATCH_SIZE}.`);
  }
  return {
    preparedStatements,
    batchSize,
    table: resolveTable(owner, given),
    completedTtlMs: milliseconds(owner, 'completedTtlMs', given.completedTtlMs, DEFAULT_COMPLETED_TTL_MS),
    inFlightTtlMs: milliseconds(owner, 'inFlightTtlMs', given.inFlightTtlMs, DEFAULT_IN_FLIGHT_TTL_MS),
    timeoutMs,
    pruneIntervalMs,
  };
}

/** Where the archive's tables live: shared by `migrateArchive()` and `PostgresArchive`. */
export interface ArchiveTableOptions {
  /**
   * The schema of the archive's tables. It must exist (`public` always does).
   * @default 'public'
   */
  schema?: string;
  /**
   * The events' table; it also names `<table>_timeline` and `<table>_replays`. At most 45 bytes
   * (the longest derived name must fit Postgres' 63).
   * @default 'pixhook_inbox'
   */
  table?: string;
}

/** Options of `PostgresArchive`. */
export interface PostgresArchiveOptions extends ArchiveTableOptions {
  /**
   * How long an event is kept after its last entry, in ms; older ones are pruned.
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number;
  /**
   * Most bytes kept (bodies, headers and timeline entries): past it the oldest events (by their
   * last entry) are pruned until under.
   * @default 1_073_741_824 (1 GiB)
   */
  maxBytes?: number;
  /**
   * How often pruning runs, in ms: in the background of `record()` (so only an app that writes
   * prunes, never the CLI or the dashboard), at most once per interval, one instance at a time.
   * `false` turns it off (call `prune()` yourself, from a cron job).
   * @default 60_000
   */
  pruneIntervalMs?: number | false;
  /**
   * How often an attached `Webhooks` looks for replay requests, in ms.
   * @default 1_000
   */
  replayPollMs?: number;
  /**
   * Longest wait for `record()`, in ms (core answers anyway past it and reports `ARCHIVE_FAILED`).
   * At most 9_000.
   * @default 2_000
   */
  writeTimeoutMs?: number;
  /**
   * Send the archive's statements as named prepared statements (prepared once per connection).
   * Set `false` behind a pooler that cannot keep them (PgBouncer before 1.21 in transaction mode).
   * @default true
   */
  preparedStatements?: boolean;
  /**
   * Hears what fails in the background: a replay poll or a prune (both are tried again on the
   * next tick). Errors of `record()` reach core, which reports `ARCHIVE_FAILED`.
   * @default none (ignored)
   */
  onError?: (error: Error) => void;
}

export interface ResolvedArchiveOptions {
  readonly names: ArchiveNames;
  readonly retentionMs: number;
  readonly maxBytes: number;
  readonly pruneIntervalMs: number | undefined;
  readonly replayPollMs: number;
  readonly writeTimeoutMs: number;
  readonly preparedStatements: boolean;
  readonly onError: ((error: Error) => void) | undefined;
}

export const DEFAULT_ARCHIVE_TABLE = 'pixhook_inbox';
const ARCHIVE_TABLE_OPTIONS = ['schema', 'table'] as const;
const ARCHIVE_OPTIONS = [
  ...ARCHIVE_TABLE_OPTIONS,
  'retentionMs',
  'maxBytes',
  'pruneIntervalMs',
  'replayPollMs',
  'writeTimeoutMs',
  'preparedStatements',
  'onError',
] as const;

function bytesOption(owner: string, value: unknown): number {
  if (value === undefined) return 1024 ** 3;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(
      `pixhook: ${owner}: maxBytes must be a positive whole number of bytes, got ${describeType(value)}.`,
    );
  }
  return value;
}

/** `migrateArchive()`'s options, checked. */
export function resolveArchiveTableOptions(owner: string, options: unknown): ArchiveNames {
  const given = checkedObject(owner, options);
  assertKnownOptions(given, ARCHIVE_TABLE_OPTIONS, `pixhook: ${owner}`);
  return archiveNames(owner, given.schema ?? 'public', given.table ?? DEFAULT_ARCHIVE_TABLE);
}

/** `PostgresArchive`'s options with their defaults; throws a `TypeError`/`RangeError` for one that cannot work. */
export function resolveArchiveOptions(options: unknown): ResolvedArchiveOptions {
  const owner = 'PostgresArchive';
  const given = checkedObject(owner, options);
  assertKnownOptions(given, ARCHIVE_OPTIONS, `pixhook: ${owner}`);
  const writeTimeoutMs = milliseconds(owner, 'writeTimeoutMs', given.writeTimeoutMs, DEFAULT_TIMEOUT_MS);
  if (writeTimeoutMs > MAX_TIMEOUT_MS) {
    throw new RangeError(
      `pixhook: ${owner}: writeTimeoutMs is ${writeTimeoutMs}, above ${MAX_TIMEOUT_MS}: the delivery's answer waits for it, and the service stops waiting after 10 s.`,
    );
  }
  const preparedStatements = given.preparedStatements ?? true;
  if (typeof preparedStatements !== 'boolean') {
    throw new TypeError(
      `pixhook: ${owner}: preparedStatements must be true or false, got ${describeType(preparedStatements)}.`,
    );
  }
  if (given.onError !== undefined && typeof given.onError !== 'function') {
    throw new TypeError(`pixhook: ${owner}: onError must be a function, got ${describeType(given.onError)}.`);
  }
  return {
    names: archiveNames(owner, given.schema ?? 'public', given.table ?? DEFAULT_ARCHIVE_TABLE),
    retentionMs: milliseconds(owner, 'retentionMs', given.retentionMs, 7 * 24 * 60 * 60 * 1000),
    maxBytes: bytesOption(owner, given.maxBytes),
    pruneIntervalMs:
      given.pruneIntervalMs === false
        ? undefined
        : milliseconds(owner, 'pruneIntervalMs', given.pruneIntervalMs, 60_000),
    replayPollMs: milliseconds(owner, 'replayPollMs', given.replayPollMs, 1_000),
    writeTimeoutMs,
    preparedStatements,
    onError: given.onError as ((error: Error) => void) | undefined,
  };
}
