import { randomUUID } from 'node:crypto';
import type { ClaimResult, IdempotencyStore } from '@pixhook/core';
import { type ClientKind, commandSender, type RedisClientLike, type SendCommand } from './client.js';
import { type RedisStoreOptions, type ResolvedRedisStoreOptions, resolveOptions } from './options.js';
import { CLAIM, COMPLETE, RELEASE } from './scripts.js';
import { withTimeout } from './timeout.js';

/** Stands for "no claim of ours" in the scripts: real tokens are UUIDs, never this. */
const NO_TOKEN = '-';

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
  /** Which library the client passed in comes from. */
  readonly clientKind: ClientKind;
  readonly #send: SendCommand;
  readonly #options: ResolvedRedisStoreOptions;
  /** The token of each claim this instance holds; the core interface carries ids only. */
  readonly #tokens = new Map<string, string>();

  constructor(client: RedisClientLike, options: RedisStoreOptions = {}) {
    const { kind, send } = commandSender(client);
    this.clientKind = kind;
    this.#send = send;
    this.#options = resolveOptions(options);
  }

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

  async complete(eventId: string): Promise<void> {
    const token = this.#tokens.get(eventId) ?? NO_TOKEN;
    this.#tokens.delete(eventId);
    const key = this.#key(eventId);
    const reply = await this.#run('complete', eventId, [
      'EVAL',
      COMPLETE,
      '1',
      key,
      token,
      `${this.#options.completedTtlMs}`,
    ]);
    if (Number(reply) !== 1) {
      throw new Error(
        `RedisStore: event ${eventId} was not marked completed: its claim expired while the handlers ran (inFlightTtlMs is ${this.#options.inFlightTtlMs} ms) and another delivery claimed it since. Raise inFlightTtlMs above your slowest handler.`,
      );
    }
  }

  async release(eventId: string): Promise<void> {
    const token = this.#tokens.get(eventId);
    this.#tokens.delete(eventId);
    // Not our claim (or already settled): another instance's claim must stay.
    if (token === undefined) return;
    await this.#run('release', eventId, ['EVAL', RELEASE, '1', this.#key(eventId), token]);
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
