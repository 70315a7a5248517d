import { randomUUID } from 'node:crypto';
import type { ClaimResult, IdempotencyStore } from '@pixhook/core';
import { type ClientKind, commandSender, type RedisClientLike, type SendCommand } from './client.js';
import { type RedisStoreOptions, type ResolvedRedisStoreOptions, resolveOptions } from './options.js';
import { CLAIM, COMPLETE, RELEASE } from './scripts.js';
import { withTimeout } from './timeout.js';

/** Stands for "no claim of ours" in the scripts: real tokens are UUIDs, never this. */
const NO_TOKEN = '-';

/** How often completions that failed are tried again while Redis is away. */
const RETRY_INTERVAL_MS = 500;
/** Most completions kept for retrying: beyond it, the oldest failures are all that is retried. */
const MAX_UNWRITTEN = 10_000;

const CLAIM_RESULTS: ReadonlySet<string> = new Set<ClaimResult>(['claimed', 'in-flight', 'completed']);

/**
 * An idempotency store on Redis, shared by every app instance behind one webhook URL: each event is
 * processed once across all of them. Pass a client you created (and, for node-redis, connected);
 * the store never connects, closes or configures it.
 *
 * Each event id becomes one key, `prefix + eventId`: while handlers run it holds a random token of
 * the claiming instance and expires after `inFlightTtlMs`; once they succeed it holds `completed`
 * for `completedTtlMs`. Every command is bounded by `timeoutMs`, so an unreachable Redis answers
 * 503 `STORE_UNAVAILABLE` quickly and no handler runs.
 *
 * @example
 * import { Redis } from 'ioredis'
 * const webhooks = new Webhooks({ secret, store: new RedisStore(new Redis(process.env.REDIS_URL), { prefix: 'pixhook:' }) })
 * @example
 * import { createClient } from 'redis'
 * const redis = await createClient({ url: process.env.REDIS_URL }).on('error', log).connect()
 * const webhooks = new Webhooks({ secret, store: new RedisStore(redis) })
 */
export class RedisStore implements IdempotencyStore {
  /**
   * Which library the client passed in comes from, as detected when the store was built.
   * @example new RedisStore(new Redis()).clientKind // 'ioredis'
   */
  readonly clientKind: ClientKind;
  readonly #send: SendCommand;
  readonly #options: ResolvedRedisStoreOptions;
  /** The token of each claim this instance holds; the core interface carries ids only. */
  readonly #tokens = new Map<string, string>();
  /** Completions Redis did not take: retried until they land, for up to completedTtlMs. */
  readonly #unwritten = new Map<string, { key: string; token: string; until: number }>();
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(client: RedisClientLike, options: RedisStoreOptions = {}) {
    const { kind, send } = commandSender(client);
    this.clientKind = kind;
    this.#send = send;
    this.#options = resolveOptions(options);
  }

  /** Claims `eventId` atomically for this instance: `'claimed'` means run the handlers. */
  async claim(eventId: string): Promise<ClaimResult> {
    const key = this.#key(eventId);
    const token = randomUUID();
    let reply: string;
    try {
      reply = String(
        await this.#run('claim', eventId, ['EVAL', CLAIM, '1', key, token, `${this.#options.inFlightTtlMs}`]),
      );
      if (!CLAIM_RESULTS.has(reply)) throw new Error(`RedisStore: unexpected reply to claim(${eventId}): ${reply}`);
    } catch (error) {
      // Clients queue commands while disconnected, so this claim may still reach Redis after we gave
      // up on it. Queue the release of this very token behind it: a late claim then cannot hold the
      // event (409) for inFlightTtlMs while nobody runs it.
      this.#send(['EVAL', RELEASE, '1', key, token]).catch(() => {});
      throw error;
    }
    if (reply === 'claimed') this.#tokens.set(eventId, token);
    return reply as ClaimResult;
  }

  /** Marks `eventId` processed for `completedTtlMs`; rejects if another delivery holds its claim now. */
  async complete(eventId: string): Promise<void> {
    const key = this.#key(eventId);
    const token = this.#tokens.get(eventId) ?? NO_TOKEN;
    this.#tokens.delete(eventId);
    let reply: unknown;
    try {
      reply = await this.#writeCompletion(eventId, key, token);
    } catch (error) {
      // The handlers succeeded, so the answer is 200 and the service will not retry; but a duplicate
      // delivery may still come. Keep trying to record the completion, so that once Redis is back
      // the event does not run twice. Late is still right: the script never overwrites a newer claim.
      this.#retryLater(eventId, key, token);
      throw error;
    }
    if (Number(reply) !== 1) {
      throw new Error(
        `RedisStore: event ${eventId} was not marked completed: its claim expired while the handlers ran (inFlightTtlMs is ${this.#options.inFlightTtlMs} ms) and another delivery claimed it since. Raise inFlightTtlMs above your slowest handler.`,
      );
    }
  }

  /** Drops this instance's claim on `eventId` (a handler failed), never another instance's. */
  async release(eventId: string): Promise<void> {
    const token = this.#tokens.get(eventId);
    this.#tokens.delete(eventId);
    // Not our claim (or already settled): another instance's claim must stay.
    if (token === undefined) return;
    await this.#run('release', eventId, ['EVAL', RELEASE, '1', this.#key(eventId), token]);
  }

  /**
   * Completions that Redis did not take and that the store is still retrying, for monitoring.
   * @example metrics.gauge('pixhook.redis.pending_completions', store.pendingCompletions)
   */
  get pendingCompletions(): number {
    return this.#unwritten.size;
  }

  #writeCompletion(eventId: string, key: string, token: string): Promise<unknown> {
    const ttl = `${this.#options.completedTtlMs}`;
    return this.#run('complete', eventId, ['EVAL', COMPLETE, '1', key, token, ttl]);
  }

  #retryLater(eventId: string, key: string, token: string): void {
    if (this.#unwritten.size >= MAX_UNWRITTEN) return;
    this.#unwritten.set(eventId, { key, token, until: Date.now() + this.#options.completedTtlMs });
    if (this.#retryTimer) return;
    // unref: pending retries must not keep a process alive that is otherwise done.
    this.#retryTimer = setTimeout(() => void this.#retryCompletions(), RETRY_INTERVAL_MS).unref();
  }

  async #retryCompletions(): Promise<void> {
    for (const [eventId, { key, token, until }] of this.#unwritten) {
      if (Date.now() > until) {
        this.#unwritten.delete(eventId);
        continue;
      }
      try {
        await this.#writeCompletion(eventId, key, token);
        this.#unwritten.delete(eventId);
      } catch {
        break; // Redis is still away: try again later, oldest first.
      }
    }
    this.#retryTimer = undefined;
    if (this.#unwritten.size > 0) {
      this.#retryTimer = setTimeout(() => void this.#retryCompletions(), RETRY_INTERVAL_MS).unref();
    }
  }

  #key(eventId: string): string {
    if (typeof eventId !== 'string' || eventId === '') {
      throw new TypeError(`RedisStore: event ids are non-empty strings, got ${JSON.stringify(eventId)}.`);
    }
    return this.#options.prefix + eventId;
  }

  async #run(operation: string, eventId: string, args: string[]): Promise<unknown> {
    const { timeoutMs } = this.#options;
    try {
      return await withTimeout(
        this.#send(args),
        timeoutMs,
        `RedisStore: Redis did not answer ${operation}(${eventId}) within ${timeoutMs} ms; is it reachable?`,
      );
    } catch (cause) {
      if (cause instanceof Error && cause.message.startsWith('RedisStore:')) throw cause;
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new Error(`RedisStore: ${operation}(${eventId}) failed: ${message}`, { cause });
    }
  }
}
