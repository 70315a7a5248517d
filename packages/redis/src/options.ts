import { assertKnownOptions, DEFAULT_COMPLETED_TTL_MS, DEFAULT_IN_FLIGHT_TTL_MS, describeType } from '@pixhook/core';

/** Options of `RedisStore`. */
export interface RedisStoreOptions {
  /**
   * Prepended to every event id to make its key, so several apps (or endpoints) can share one Redis.
   * Instances that must de-duplicate together need the same prefix.
   * @default 'pixhook:'
   * @example new RedisStore(redis, { prefix: 'shop-webhooks:' })
   */
  prefix?: string;
  /**
   * How long a claim holds unless renewed, in ms. Core renews it every third of this while the
   * handlers run, from the start of the run, so it need not exceed your slowest handler; an instance
   * that dies mid-handler blocks its event for this long (retries meanwhile answer 409), after which
   * the next retry processes it. A claim lapses under a running handler only if Redis is away for
   * longer than two thirds of it.
   * @default 600_000 (10 minutes, DEFAULT_IN_FLIGHT_TTL_MS)
   * @example new RedisStore(redis, { inFlightTtlMs: 60_000 })
   */
  inFlightTtlMs?: number;
  /**
   * How long a completed event is remembered, in ms. The service's retries span about 32.6 hours
   * (1 min + 5 min + 30 min + 2 h + 6 h + 24 h), so keep it above that.
   * @default 172_800_000 (48 hours, DEFAULT_COMPLETED_TTL_MS)
   * @example new RedisStore(redis, { completedTtlMs: 72 * 60 * 60 * 1000 })
   */
  completedTtlMs?: number;
  /**
   * Longest wait for one Redis command, in ms. Past it the request answers 503 `STORE_UNAVAILABLE`
   * and the service retries later: without it, a client that queues commands while Redis is down
   * (ioredis and node-redis both do by default) would hold the request past the service's 10-second
   * deadline. At most 9_000.
   * @default 2_000
   * @example new RedisStore(redis, { timeoutMs: 500 })
   */
  timeoutMs?: number;
}

/** The names `new RedisStore(client, options)` takes; any other key throws, naming the closest. */
const OPTION_NAMES = [
  'prefix',
  'inFlightTtlMs',
  'completedTtlMs',
  'timeoutMs',
] as const satisfies readonly (keyof RedisStoreOptions)[];

/** The options with their defaults applied, checked. */
export interface ResolvedRedisStoreOptions {
  prefix: string;
  inFlightTtlMs: number;
  completedTtlMs: number;
  timeoutMs: number;
}

/** Default of `timeoutMs`: leaves a claim, the handlers and a completion within the 10 s deadline. */
export const DEFAULT_TIMEOUT_MS = 2_000;

/** The service gives up on an answer after 10 s; a store wait near that would always be too late. */
const MAX_TIMEOUT_MS = 9_000;

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(
      `pixhook: RedisStore: ${name} must be a positive whole number of milliseconds, got ${describeType(value)}.`,
    );
  }
  return value;
}

/** Applies the defaults and throws a `TypeError`/`RangeError` for an option that cannot work. */
export function resolveOptions(options: RedisStoreOptions | undefined): ResolvedRedisStoreOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError('pixhook: RedisStore: options must be an object.');
  }
  // A misspelled prefix would silently share the default 'pixhook:' keys with other apps.
  if (options !== undefined) {
    assertKnownOptions(options, OPTION_NAMES, 'pixhook: RedisStore: new RedisStore(client, options)');
  }
  const prefix = options?.prefix ?? 'pixhook:';
  if (typeof prefix !== 'string') {
    throw new TypeError(`pixhook: RedisStore: prefix must be a string, got ${describeType(prefix)}.`);
  }
  const timeoutMs = positiveInteger(options?.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
  if (timeoutMs > MAX_TIMEOUT_MS) {
    throw new RangeError(
      `pixhook: RedisStore: timeoutMs must be at most ${MAX_TIMEOUT_MS}: the service gives up on an answer after 10 s; got ${timeoutMs}.`,
    );
  }
  return {
    prefix,
    inFlightTtlMs: positiveInteger(options?.inFlightTtlMs, DEFAULT_IN_FLIGHT_TTL_MS, 'inFlightTtlMs'),
    completedTtlMs: positiveInteger(options?.completedTtlMs, DEFAULT_COMPLETED_TTL_MS, 'completedTtlMs'),
    timeoutMs,
  };
}
