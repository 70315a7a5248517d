import { assertKnownOptions, DEFAULT_COMPLETED_TTL_MS, describeType } from '@pixhook/core';
import type { ConnectionOptions } from 'bullmq';
import { hasHashTag, isClusterConnection } from './replicas.js';

/** How a failed job waits before its next run. */
export interface BackoffOptions {
  /** `'exponential'`: `delayMs`, then twice that, four times… `'fixed'`: `delayMs` each time. */
  type: 'exponential' | 'fixed';
  /** The first wait, in ms. */
  delayMs: number;
  /** Up to this fraction of each wait is drawn at random (0 to 1), so failed jobs do not all retry at once. @default 0 */
  jitter?: number;
}

/** Options of `new BullMQQueue(…)`. */
export interface BullMQQueueOptions {
  /**
   * Where Redis is: ioredis options (`{ host, port, password, tls, … }` or `{ url }`), or an ioredis
   * instance to share. No default. The write in the request fails at once while Redis is down
   * (the queue's connection does not hold commands offline), so the delivery answers 503. Without a
   * `retryStrategy` in the options, the queue and its workers reconnect after 100 ms, 200 ms … then
   * every 1 s (BullMQ's own default backs off to 20 s): 202 again about a second after Redis is back.
   * On a Redis Cluster, pass an ioredis `Cluster` instance (`new Cluster([{ host, port }])`) and a
   * `prefix` with a hash tag (`'{bull}'`).
   * @example connection: { url: process.env.REDIS_URL }
   */
  connection: ConnectionOptions;
  /**
   * The BullMQ queue's name; receivers and workers of one endpoint use the same.
   * @default 'pixhook-webhooks'
   */
  name?: string;
  /**
   * BullMQ's key prefix in Redis. On a Redis Cluster it must hold a hash tag (`'{bull}'`, or
   * `'{webhooks}'`…), so that every key of the queue is in one slot and BullMQ's scripts, which
   * touch several keys, run on one node: `new BullMQQueue` throws a `TypeError` for a `Cluster`
   * connection and a prefix without one. No `:` in it.
   * @default 'bull'
   */
  prefix?: string;
  /**
   * Runs a job gets (the first one included) before it becomes a dead letter.
   * @default 10
   */
  attempts?: number;
  /**
   * How a failed job waits before its next run.
   * @default { type: 'exponential', delayMs: 5_000 } (5 s, 10 s, 20 s … 21 min: about 43 min in all over 10 attempts)
   */
  backoff?: BackoffOptions;
  /**
   * How long a processed event's job is kept, in ms: a delivery of its id within this window
   * answers 202 without a second job. The service's retries span about 32.6 hours, so keep it above
   * that. Dead letters are kept until retried or discarded.
   * @default 172_800_000 (48 hours)
   */
  keepCompletedMs?: number;
  /**
   * Longest wait for Redis to confirm a delivery's write, in ms; past it the delivery answers 503
   * `QUEUE_UNAVAILABLE` and the service retries. At most 9_000 (the service waits 10 s).
   * @default 2_000
   */
  enqueueTimeoutMs?: number;
  /**
   * Replicas of its Redis master that must hold a delivery's job before the delivery is answered
   * 202 (Redis `WAIT`, one round trip shared by the deliveries written meanwhile, waiting at most
   * three quarters of `enqueueTimeoutMs`). Redis replicates asynchronously: without it, a job written to a master
   * that dies a moment later may be missing on the replica promoted in its place, and that event
   * would never run although the service was told 202. With it, fewer replicas confirming in time
   * (a replica down, or a master without one) answers 503 and the service delivers again.
   * @default 1 when `connection` is an ioredis `Cluster`, else 0 (a single Redis: nothing to wait for)
   */
  waitForReplicas?: number;
}

/** Options of `queue.startWorker(webhooks, …)`. */
export interface WorkerOptions {
  /**
   * Jobs this worker runs at once. Each worker process (or machine) adds its own.
   * @default 1
   */
  concurrency?: number;
  /**
   * How long a running job's lock holds, in ms; the worker renews it every half of this while the
   * job runs. A worker that dies (or blocks its event loop this long) loses the job, and the job
   * runs again elsewhere once the next stall check sees the lock gone: within `lockDurationMs` +
   * `stalledIntervalMs`, plus the moment a worker with a free slot needs to take it.
   * @default 30_000
   */
  lockDurationMs?: number;
  /**
   * How often this worker looks for jobs whose lock expired (their worker died), in ms.
   * @default 30_000
   */
  stalledIntervalMs?: number;
  /**
   * Times a job may be lost by its worker (see `lockDurationMs`) and run again; once more and it
   * becomes a dead letter. Losing a job does not use up one of its `attempts`.
   * @default 2
   */
  maxStalledCount?: number;
  /**
   * Longest wait for running handlers in `worker.close()`, in ms. Past it the worker lets go of
   * their jobs, which run again on another worker once their lock expires.
   * @default 30_000
   */
  shutdownTimeoutMs?: number;
  /**
   * Where this worker's Redis is, when not the queue's `connection` (the same Redis, reached
   * another way).
   * @default the queue's connection
   */
  connection?: ConnectionOptions;
}

export interface ResolvedQueueOptions {
  connection: ConnectionOptions;
  name: string;
  prefix: string;
  attempts: number;
  backoff: { type: 'exponential' | 'fixed'; delay: number; jitter?: number };
  keepCompletedMs: number;
  enqueueTimeoutMs: number;
  waitForReplicas: number;
}

export interface ResolvedWorkerOptions {
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  shutdownTimeoutMs: number;
  connection: ConnectionOptions | undefined;
}

const QUEUE_OPTIONS = [
  'connection',
  'name',
  'prefix',
  'attempts',
  'backoff',
  'keepCompletedMs',
  'enqueueTimeoutMs',
  'waitForReplicas',
] as const satisfies readonly (keyof BullMQQueueOptions)[];

const WORKER_OPTIONS = [
  'concurrency',
  'lockDurationMs',
  'stalledIntervalMs',
  'maxStalledCount',
  'shutdownTimeoutMs',
  'connection',
] as const satisfies readonly (keyof WorkerOptions)[];

/** The service gives up on an answer after 10 s: a write allowed to take that long is always late. */
const MAX_ENQUEUE_TIMEOUT_MS = 9_000;

function whole(owner: string, name: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(
      `pixhook: ${owner}: ${name} must be a whole number of at least ${min}; got ${describeType(value)}.`,
    );
  }
  return value;
}

function name(owner: string, label: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value === '' || value.includes(':')) {
    throw new TypeError(
      `pixhook: ${owner}: ${label} must be a non-empty string without ':'; got ${describeType(value)}.`,
    );
  }
  return value;
}

function connectionOf(owner: string, value: unknown): ConnectionOptions {
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(
      `pixhook: ${owner}: connection is required: ioredis options such as { host: '127.0.0.1', port: 6379 } or { url: process.env.REDIS_URL }, or an ioredis instance; got ${describeType(value)}.`,
    );
  }
  return value as ConnectionOptions;
}

function backoffOf(value: unknown): ResolvedQueueOptions['backoff'] {
  const owner = 'new BullMQQueue(options)';
  if (value === undefined) return { type: 'exponential', delay: 5_000 };
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(
      `pixhook: ${owner}: backoff must be { type: 'exponential' | 'fixed', delayMs, jitter? }; got ${describeType(value)}.`,
    );
  }
  assertKnownOptions(value, ['type', 'delayMs', 'jitter'], `pixhook: ${owner}: backoff`);
  const { type, delayMs, jitter } = value as BackoffOptions;
  if (type !== 'exponential' && type !== 'fixed') {
    throw new TypeError(`pixhook: ${owner}: backoff.type must be 'exponential' or 'fixed'; got ${describeType(type)}.`);
  }
  const delay = whole(owner, 'backoff.delayMs', delayMs, 5_000, 0);
  if (jitter !== undefined && (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1))) {
    throw new TypeError(`pixhook: ${owner}: backoff.jitter must be a number from 0 to 1; got ${describeType(jitter)}.`);
  }
  return jitter === undefined ? { type, delay } : { type, delay, jitter };
}

/** Checks `new BullMQQueue(options)` and applies the defaults; throws a `TypeError` for what cannot work. */
export function resolveQueueOptions(options: BullMQQueueOptions): ResolvedQueueOptions {
  const owner = 'new BullMQQueue(options)';
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`pixhook: ${owner} needs an options object with a connection.`);
  }
  assertKnownOptions(options, QUEUE_OPTIONS, `pixhook: ${owner}`);
  const enqueueTimeoutMs = whole(owner, 'enqueueTimeoutMs', options.enqueueTimeoutMs, 2_000);
  if (enqueueTimeoutMs > MAX_ENQUEUE_TIMEOUT_MS) {
    throw new TypeError(
      `pixhook: ${owner}: enqueueTimeoutMs must be at most ${MAX_ENQUEUE_TIMEOUT_MS}: the service gives up on an answer after 10 s; got ${enqueueTimeoutMs}.`,
    );
  }
  const connection = connectionOf(owner, options.connection);
  const prefix = name(owner, 'prefix', options.prefix, 'bull');
  const cluster = isClusterConnection(connection);
  if (cluster && !hasHashTag(prefix)) {
    // Not added silently: the prefix names the keys, and every receiver, worker and reader
    // (pixhook dead-letters --prefix) of the queue must give the same one.
    throw new TypeError(
      `pixhook: ${owner}: on a Redis Cluster the prefix needs a hash tag, so that every key of the queue is in one slot (BullMQ's scripts touch several keys): use prefix: '{bull}' (the same in every receiver, worker and reader of the queue); got ${JSON.stringify(prefix.slice(0, 60))}.`,
    );
  }
  return {
    connection,
    name: name(owner, 'name', options.name, 'pixhook-webhooks'),
    prefix,
    attempts: whole(owner, 'attempts', options.attempts, 10),
    backoff: backoffOf(options.backoff),
    keepCompletedMs: whole(owner, 'keepCompletedMs', options.keepCompletedMs, DEFAULT_COMPLETED_TTL_MS),
    enqueueTimeoutMs,
    waitForReplicas: whole(owner, 'waitForReplicas', options.waitForReplicas, cluster ? 1 : 0, 0),
  };
}

/** Checks `queue.startWorker(webhooks, options)` and applies the defaults. */
export function resolveWorkerOptions(options: WorkerOptions | undefined): ResolvedWorkerOptions {
  const owner = 'queue.startWorker(webhooks, options)';
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`pixhook: ${owner}: options must be an object.`);
  }
  const given = options ?? {};
  assertKnownOptions(given, WORKER_OPTIONS, `pixhook: ${owner}`);
  return {
    concurrency: whole(owner, 'concurrency', given.concurrency, 1),
    lockDurationMs: whole(owner, 'lockDurationMs', given.lockDurationMs, 30_000),
    stalledIntervalMs: whole(owner, 'stalledIntervalMs', given.stalledIntervalMs, 30_000),
    maxStalledCount: whole(owner, 'maxStalledCount', given.maxStalledCount, 2, 0),
    shutdownTimeoutMs: whole(owner, 'shutdownTimeoutMs', given.shutdownTimeoutMs, 30_000, 0),
    connection: given.connection === undefined ? undefined : connectionOf(owner, given.connection),
  };
}
