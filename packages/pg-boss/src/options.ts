import { assertKnownOptions, describeType } from '@pixhook/core';

/**
 * How a failed job waits before its next run. pg-boss counts retry delays in whole seconds, so
 * `delayMs` is a multiple of 1000.
 */
export interface PgBossBackoffOptions {
  /**
   * `'exponential'`: pg-boss's `retryBackoff`. The n-th retry waits between `delayMs · 2^(n−1)` and
   * twice that (pg-boss draws the extra part at random, so failed jobs do not all retry at once).
   * `'fixed'`: `delayMs` each time, exactly.
   */
  type: 'exponential' | 'fixed';
  /**
   * The first wait, in ms: a multiple of 1000 (pg-boss's `retryDelay` is in seconds); at least 1000
   * for `'exponential'` (pg-boss raises 0 to 1 s there), 0 allowed for `'fixed'`.
   */
  delayMs: number;
}

/**
 * Options of `new PgBossQueue(boss, …)`. `attempts`, `backoff` and `expireInMs` are written into each
 * job when it is queued (pg-boss's per-job settings): the receiving instance's options decide them,
 * and changing them affects jobs queued from then on.
 */
export interface PgBossQueueOptions {
  /**
   * The pg-boss queue's name; receivers and workers of one endpoint use the same. Letters, digits,
   * `_`, `-` and `.`, up to 100 characters. The queue is created (policy `standard`) on first use
   * if it does not exist.
   * @default 'pixhook-webhooks'
   */
  name?: string;
  /**
   * The schema of pg-boss's tables: the `schema` option you gave `new PgBoss(…)`. pixhook reads
   * them for what pg-boss has no API for (listing dead letters, de-duplicating against its
   * archive).
   * @default 'pgboss'
   */
  schema?: string;
  /**
   * Runs a job gets (the first one included) before it becomes a dead letter: pg-boss's
   * `retryLimit` is one less. A run lost with its worker (see `expireInMs`) uses one too.
   * @default 10
   */
  attempts?: number;
  /**
   * How a failed job waits before its next run.
   * @default { type: 'exponential', delayMs: 5_000 } (5–10 s, then 10–20 s, 20–40 s … : about 43 to 85 min in all over 10 attempts)
   */
  backoff?: PgBossBackoffOptions;
  /**
   * How long one run may stay active, in ms (pg-boss's `expireInSeconds`: a whole number of
   * seconds, under 24 hours). pg-boss has no lock that a running worker renews: a job still active
   * this long after it started is taken for lost (its worker died) and failed by pg-boss's
   * maintenance, then retried (it uses an attempt). So keep it above your slowest handler; a
   * crashed worker's job runs again after it plus up to the boss's `maintenanceIntervalSeconds`.
   * @default 900_000 (15 minutes, pg-boss's own default)
   */
  expireInMs?: number;
  /**
   * Longest wait for Postgres to confirm a delivery's job, in ms; past it the delivery answers 503
   * `QUEUE_UNAVAILABLE` and the service retries. At most 9_000 (the service waits 10 s).
   * @default 2_000
   */
  enqueueTimeoutMs?: number;
  /**
   * Most deliveries' jobs written in one statement. Deliveries that arrive together (in the same
   * turn of the event loop, or while `maxBatchesInFlight` batches are out) are written by one
   * `INSERT` (one round trip, one commit), and each answers 202 once that commit is done; a batch
   * that fails answers each of its deliveries 503, as one alone would (a delivery whose data
   * Postgres refuses fails alone: its batch is then written one delivery at a time). `1` writes
   * each delivery's job on its own.
   * @default 100
   */
  batchSize?: number;
  /**
   * Most batches of jobs being written at once by this queue (each holds one connection of the
   * boss's pool while it is written); deliveries that arrive meanwhile wait and go out together as
   * the next batch.
   * @default 4
   */
  maxBatchesInFlight?: number;
  /**
   * Send pixhook's frequent statements (a batch's insert, the workers' fetch and completion) as
   * named prepared statements, prepared once per connection of the boss's pool instead of parsed
   * and planned on every call. Set `false` behind a pooler that cannot keep them, such as PgBouncer
   * before 1.21 in transaction mode (with a boss given your own `db`, they are never prepared).
   * @default true
   */
  preparedStatements?: boolean;
}

/** Options of `queue.startWorker(webhooks, …)`. */
export interface PgBossWorkerOptions {
  /**
   * Jobs this worker runs at once. Each worker process (or machine) adds its own. The worker asks
   * pg-boss for as many jobs as it has free slots, in one query.
   * @default 1
   */
  concurrency?: number;
  /**
   * How long an idle worker waits before asking Postgres for jobs again, in ms (pg-boss's
   * `pollingIntervalSeconds`). A worker with every slot busy asks again as soon as one frees; a
   * delivery queued by this process, or a dead letter retried here, wakes its workers at once.
   * @default 2_000
   */
  pollingIntervalMs?: number;
  /**
   * Whether the worker listens for new jobs (Postgres `LISTEN`, on one connection of its own per
   * worker, opened with the boss's connection settings): every batch of jobs queued, in any
   * process, notifies the queue's channel when it commits, and an idle worker fetches at once
   * instead of at its next poll. Polling goes on as the fallback (a lost notification, the
   * connection down: it reconnects, and the worker polls meanwhile). `false` where `LISTEN` does
   * not work (PgBouncer in transaction mode) or with a boss given your own `db` (pixhook then
   * cannot open a connection: it polls only).
   * @default true
   */
  listen?: boolean;
  /**
   * Longest wait for running handlers in `worker.close()`, in ms. Past it the worker lets go of
   * their jobs: it fails them (pg-boss runs them again after their backoff, on another worker; this
   * uses an attempt) and ignores how their handlers end.
   * @default 30_000
   */
  shutdownTimeoutMs?: number;
}

export interface ResolvedPgBossQueueOptions {
  name: string;
  schema: string;
  attempts: number;
  backoff: { type: 'exponential' | 'fixed'; delaySeconds: number };
  expireInSeconds: number;
  enqueueTimeoutMs: number;
  batchSize: number;
  maxBatchesInFlight: number;
  preparedStatements: boolean;
}

export interface ResolvedPgBossWorkerOptions {
  concurrency: number;
  pollingIntervalMs: number;
  listen: boolean;
  shutdownTimeoutMs: number;
}

const QUEUE_OPTIONS = [
  'name',
  'schema',
  'attempts',
  'backoff',
  'expireInMs',
  'enqueueTimeoutMs',
  'batchSize',
  'maxBatchesInFlight',
  'preparedStatements',
] as const satisfies readonly (keyof PgBossQueueOptions)[];

const WORKER_OPTIONS = [
  'concurrency',
  'pollingIntervalMs',
  'listen',
  'shutdownTimeoutMs',
] as const satisfies readonly (keyof PgBossWorkerOptions)[];

/** The service gives up on an answer after 10 s: a write allowed to take that long is always late. */
const MAX_ENQUEUE_TIMEOUT_MS = 9_000;
/** pg-boss refuses an expiration of 24 hours or more. */
const MAX_EXPIRE_IN_MS = 24 * 60 * 60 * 1000 - 1000;
/** pg-boss's own rule for a schema name, which it writes into SQL unquoted. */
const SCHEMA = /^[A-Za-z_]\w{0,49}$/;
const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

const QUEUE_OWNER = 'new PgBossQueue(boss, options)';
const WORKER_OWNER = 'queue.startWorker(webhooks, options)';

/** A whole number from `min` to `max`: TypeError when not a whole number, RangeError when out of range. */
function whole(owner: string, name: string, value: unknown, fallback: number, min: number, max?: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new TypeError(`pixhook: ${owner}: ${name} must be a whole number; got ${describeType(value)}.`);
  }
  if (value < min || (max !== undefined && value > max)) {
    const range = max === undefined ? `at least ${min}` : `from ${min} to ${max}`;
    throw new RangeError(`pixhook: ${owner}: ${name} must be ${range}; got ${value}.`);
  }
  return value;
}

function flag(owner: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(`pixhook: ${owner}: ${name} must be true or false; got ${describeType(value)}.`);
  }
  return value;
}

/** Whole seconds of a duration given in ms. */
function seconds(owner: string, name: string, ms: number): number {
  if (ms % 1000 !== 0) {
    throw new RangeError(
      `pixhook: ${owner}: ${name} must be a multiple of 1000 (pg-boss counts it in whole seconds); got ${ms}.`,
    );
  }
  return ms / 1000;
}

function text(owner: string, name: string, value: unknown, fallback: string, pattern: RegExp, rule: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') {
    throw new TypeError(`pixhook: ${owner}: ${name} must be a string; got ${describeType(value)}.`);
  }
  if (!pattern.test(value)) {
    // Not echoed: a string in the wrong place may be a secret.
    throw new RangeError(`pixhook: ${owner}: ${name} must be ${rule}; got a string of ${value.length} characters.`);
  }
  return value;
}

function backoffOf(value: unknown): ResolvedPgBossQueueOptions['backoff'] {
  if (value === undefined) return { type: 'exponential', delaySeconds: 5 };
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(
      `pixhook: ${QUEUE_OWNER}: backoff must be { type: 'exponential' | 'fixed', delayMs }; got ${describeType(value)}.`,
    );
  }
  assertKnownOptions(value, ['type', 'delayMs'], `pixhook: ${QUEUE_OWNER}: backoff`);
  const { type, delayMs } = value as PgBossBackoffOptions;
  if (type !== 'exponential' && type !== 'fixed') {
    throw new TypeError(
      `pixhook: ${QUEUE_OWNER}: backoff.type must be 'exponential' or 'fixed'; got ${describeType(type)}.`,
    );
  }
  if (delayMs === undefined) {
    throw new TypeError(`pixhook: ${QUEUE_OWNER}: backoff.delayMs is required (a multiple of 1000).`);
  }
  const min = type === 'exponential' ? 1000 : 0;
  const delay = whole(QUEUE_OWNER, 'backoff.delayMs', delayMs, 5_000, min, 24 * 60 * 60 * 1000);
  return { type, delaySeconds: seconds(QUEUE_OWNER, 'backoff.delayMs', delay) };
}

/** Checks `new PgBossQueue(boss, options)` and applies the defaults. */
export function resolveQueueOptions(options: PgBossQueueOptions | undefined): ResolvedPgBossQueueOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`pixhook: ${QUEUE_OWNER}: options must be an object; got ${describeType(options)}.`);
  }
  const given = options ?? {};
  assertKnownOptions(given, QUEUE_OPTIONS, `pixhook: ${QUEUE_OWNER}`);
  const expireInMs = whole(QUEUE_OWNER, 'expireInMs', given.expireInMs, 900_000, 1000, MAX_EXPIRE_IN_MS);
  return {
    name: text(
      QUEUE_OWNER,
      'name',
      given.name,
      'pixhook-webhooks',
      QUEUE_NAME,
      'letters, digits, _, - and . (1 to 100 characters)',
    ),
    schema: text(
      QUEUE_OWNER,
      'schema',
      given.schema,
      'pgboss',
      SCHEMA,
      "pg-boss's schema name: letters, digits and _, not starting with a digit, up to 50 characters",
    ),
    attempts: whole(QUEUE_OWNER, 'attempts', given.attempts, 10, 1, 1_000),
    backoff: backoffOf(given.backoff),
    expireInSeconds: seconds(QUEUE_OWNER, 'expireInMs', expireInMs),
    enqueueTimeoutMs: whole(QUEUE_OWNER, 'enqueueTimeoutMs', given.enqueueTimeoutMs, 2_000, 1, MAX_ENQUEUE_TIMEOUT_MS),
    batchSize: whole(QUEUE_OWNER, 'batchSize', given.batchSize, 100, 1, 10_000),
    maxBatchesInFlight: whole(QUEUE_OWNER, 'maxBatchesInFlight', given.maxBatchesInFlight, 4, 1, 100),
    preparedStatements: flag(QUEUE_OWNER, 'preparedStatements', given.preparedStatements, true),
  };
}

/** Checks `queue.startWorker(webhooks, options)` and applies the defaults. */
export function resolveWorkerOptions(options: PgBossWorkerOptions | undefined): ResolvedPgBossWorkerOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`pixhook: ${WORKER_OWNER}: options must be an object; got ${describeType(options)}.`);
  }
  const given = options ?? {};
  assertKnownOptions(given, WORKER_OPTIONS, `pixhook: ${WORKER_OWNER}`);
  return {
    concurrency: whole(WORKER_OWNER, 'concurrency', given.concurrency, 1, 1, 1_000),
    pollingIntervalMs: whole(WORKER_OWNER, 'pollingIntervalMs', given.pollingIntervalMs, 2_000, 100, 3_600_000),
    listen: flag(WORKER_OWNER, 'listen', given.listen, true),
    shutdownTimeoutMs: whole(WORKER_OWNER, 'shutdownTimeoutMs', given.shutdownTimeoutMs, 30_000, 0),
  };
}
