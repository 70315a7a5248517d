import { InvalidArgumentError } from 'commander';
import { parseServerUrl, type ServerUrl, type ServerUrlKind } from './server-url.js';

/** Where Redis is when neither `--redis` nor REDIS_URL says. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Longest wait for Redis to accept the connection and answer, in ms: a command fails, never hangs. */
export const REDIS_TIMEOUT_MS = 3_000;

/** A Redis URL checked by {@link parseRedisUrl}, and how to show it without its password. */
export type RedisUrl = ServerUrl;

const REDIS: ServerUrlKind = {
  option: '--redis (or REDIS_URL)',
  protocols: ['redis:', 'rediss:'],
  shape: 'redis://[[user]:password@]host[:port][/db], or rediss:// for TLS',
  example: 'redis://127.0.0.1:6379',
  defaultPort: '6379',
};

/**
 * Checks a `redis://` or `rediss://` URL; the error never quotes the value.
 *
 * @example
 * parseRedisUrl('redis://:s3cret@127.0.0.1:6380/2').shown // 'redis://:***@127.0.0.1:6380/2'
 */
export function parseRedisUrl(value: string): RedisUrl {
  return parseServerUrl(value, REDIS);
}

/** Parses a BullMQ queue name or key prefix: non-empty, without `:` (BullMQ's key separator). */
export function queueName(value: string): string {
  if (value === '' || value.includes(':')) throw new InvalidArgumentError("expected a non-empty name without ':'.");
  return value;
}

/**
 * ioredis options for a command that runs once: no reconnection, no command retried, and every
 * wait bounded, so that a Redis that is down or stalled fails the command within seconds.
 */
export const ONE_SHOT_CONNECTION = {
  connectTimeout: REDIS_TIMEOUT_MS,
  commandTimeout: REDIS_TIMEOUT_MS,
  maxRetriesPerRequest: 1,
  retryStrategy: () => null,
  // ioredis keeps a socket that never opened for this long after disconnect(): keep it short.
  disconnectTimeout: 200,
};

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** Redis did not get ready within REDIS_TIMEOUT_MS: it accepted the connection (or not) but did not answer. */
export class RedisTimeoutError extends Error {
  override readonly name = 'RedisTimeoutError';
  constructor() {
    super(`Redis did not answer within ${REDIS_TIMEOUT_MS / 1000} s`);
  }
}

/**
 * What went wrong with Redis, in a sentence naming the URL (password masked) and what to check.
 * The driver's message is scrubbed of the password, in case it quoted it.
 *
 * @example
 * describeRedisError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }), url)
 * // 'Cannot reach Redis at redis://127.0.0.1:6379: nothing accepts connections on 127.0.0.1:6379 …'
 */
export function describeRedisError(error: unknown, redis: RedisUrl): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  let detail = error instanceof Error ? error.message : String(error);
  for (const secret of redis.secrets) detail = detail.replaceAll(secret, '***');
  const where = `Redis at ${redis.shown}`;
  const check = 'Check --redis (or REDIS_URL)';
  if (code === 'ECONNREFUSED') {
    return `Cannot reach ${where}: nothing accepts connections on ${redis.address} (${detail}). Is Redis running there? ${check}.`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return `Cannot reach ${where}: the host name does not resolve (${detail}). ${check}.`;
  }
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    return `Cannot reach ${where} (${detail}). ${check}, and any firewall or VPN in between.`;
  }
  if (/\b(NOAUTH|WRONGPASS)\b|invalid password|invalid username-password/i.test(detail)) {
    return `${where} refused the credentials (${detail}): check the user and password in the URL.`;
  }
  if (error instanceof RedisTimeoutError || /Command timed out/i.test(detail)) {
    const why = error instanceof RedisTimeoutError ? '' : ` (${detail})`;
    return `${where} did not answer within ${REDIS_TIMEOUT_MS / 1000} s${why}. Is it overloaded, or is something other than Redis listening on ${redis.address}?`;
  }
  return `${where} failed: ${detail}`;
}
