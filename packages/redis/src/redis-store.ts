import { randomUUID } from 'node:crypto';
import { type ClaimResult, describeType, type IdempotencyStore } from '@pixhook/core';
import { type ClientKind, commandSender, type RedisClientLike, type SendCommand } from './client.js';
import { type RedisStoreOptions, type ResolvedRedisStoreOptions, resolveOptions } from './options.js';
import { PendingWrites, type Write } from './pending-writes.js';
import { ABANDON, ADVANCE, CLAIM, COMPLETE, COMPLETED, EXTEND, RELEASE } from './scripts.js';
import { withTimeout } from './timeout.js';

/** Stands for "no claim of ours" in the scripts: tokens are never empty, so no key holds it. */
const NO_TOKEN = '';

const CLAIM_RESULTS: ReadonlySet<string> = new Set<ClaimResult>(['claimed', 'in-flight', 'completed']);

/**
 * Starts the key of an ordering mark, after the prefix: `<prefix>order:<mark key>`. No event's key
 * can take that form (an event id starts with `evt_`; a tenant's key is `<tenant, URI-encoded>/…`,
 * and an encoded tenant holds no `:`), so marks and events never share a key. One key per script:
 * fine on Redis Cluster, as the store's other keys.
 */
const MARK = 'order:';

/**
 * An idempotency store on Redis, shared by every app instance behind one webhook URL: each event is
 * processed once across all of them. Pass a client you created (and, for node-redis, connected);
 * the store never connects, closes or configures it.
 *
 * Each event id becomes one key, `prefix + eventId`: while handlers run it holds the claim token
 * core passed to `claim()` and expires after `inFlightTtlMs` (renewed by `extend()`); once they
 * succeed it holds `completed` for `completedTtlMs`. `complete()`, `release()` and `extend()` act
 * only on the key while it holds the caller's token. Every command is bounded by `timeoutMs`, so an
 * unreachable Redis answers 503 `STORE_UNAVAILABLE` quickly and no handler runs; completions and
 * releases that Redis did not take are retried until they land.
 *
 * @example
 * import { Redis } from 'ioredis'
 * const webhooks = new Webhooks({ secret, store: new RedisStore(new Redis(process.env.REDIS_URL), { prefix: 'pixhook:' }) })
 * @example
 * import { Cluster } from 'ioredis' // Redis Cluster: each event's key goes to the master of its slot
 * const store = new RedisStore(new Cluster([{ host: 'redis-1', port: 6379 }]), { prefix: 'pixhook:' })
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
  /**
   * How long a claim holds while handlers run, in ms; core renews the claim of a handler still
   * running past its deadline every third of it.
   * @example new RedisStore(redis).inFlightTtlMs // 600_000
   */
  readonly inFlightTtlMs: number;
  readonly #send: SendCommand;
  readonly #options: ResolvedRedisStoreOptions;
  /**
   * Only for a core older than claim tokens, which calls `claim(id)`, `complete(id)`, `release(id)`:
   * the token the store made up for each such claim this instance holds, keyed by event id.
   */
  readonly #untokened = new Map<string, string>();
  /** Completions and releases Redis did not take, retried until they land. */
  readonly #pending: PendingWrites;

  constructor(client: RedisClientLike, options: RedisStoreOptions = {}) {
    const { kind, send } = commandSender(client);
    this.clientKind = kind;
    this.#send = send;
    this.#options = resolveOptions(options);
    this.inFlightTtlMs = this.#options.inFlightTtlMs;
    this.#pending = new PendingWrites({
      send: (command) => this.#send([...command]),
      wait: (sent, write) => this.#wait(sent, write.operation, write.eventId),
    });
  }

  /**
   * Claims `eventId` atomically for `token`: `'claimed'` means run the handlers. Called without a
   * token (a core older than claim tokens), the store makes one up and remembers it for this
   * instance's `complete(eventId)` and `release(eventId)`, as before tokens existed.
   */
  async claim(eventId: string, token?: string): Promise<ClaimResult> {
    const key = this.#key(eventId);
    const claimToken = token === undefined ? randomUUID() : checkToken(token);
    let reply: string;
    try {
      reply = String(
        await this.#run('claim', eventId, ['EVAL', CLAIM, '1', key, claimToken, `${this.#options.inFlightTtlMs}`]),
      );
      if (!CLAIM_RESULTS.has(reply))
        throw new Error(`pixhook: RedisStore: unexpected reply to claim(${eventId}): ${reply}`);
    } catch (error) {
      // Clients queue commands while disconnected, and a claim whose answer was lost may have run:
      // either way it may hold the event (409) for inFlightTtlMs while nobody runs it. Abandon this
      // very token, retried until it lands: the claim is released if it landed, and cannot land
      // after (an ioredis Cluster retrying it on another node during a failover may send it later).
      this.#pending.send(this.#releaseWrite(eventId, key, claimToken, true)).catch(() => {});
      throw error;
    }
    if (token === undefined && reply === 'claimed') this.#untokened.set(eventId, claimToken);
    return reply as ClaimResult;
  }

  /**
   * Marks `eventId` processed for `completedTtlMs` if `token` still holds its claim or nobody does;
   * rejects, changing nothing, if another delivery holds its claim now. If Redis does not take it,
   * rejects and keeps retrying until it lands.
   */
  async complete(eventId: string, token?: string): Promise<void> {
    const key = this.#key(eventId);
    const claimToken = this.#settle(eventId, token) ?? NO_TOKEN;
    const write: Write = {
      operation: 'complete',
      eventId,
      command: ['EVAL', COMPLETE, '1', key, claimToken, `${this.#options.completedTtlMs}`],
      until: Date.now() + this.#options.completedTtlMs,
    };
    // The handlers succeeded, so the answer is 200 and the service will not retry; but a duplicate
    // delivery may still come. Retrying keeps it from running the event once Redis is back; late is
    // still right: the script never overwrites a newer claim.
    const reply = await this.#pending.send(write);
    if (Number(reply) !== 1) {
      throw new Error(
        `pixhook: RedisStore: event ${eventId} was not marked completed: its claim expired while the handlers ran (inFlightTtlMs is ${this.#options.inFlightTtlMs} ms) and another delivery claimed it since. Raise inFlightTtlMs above your slowest handler.`,
      );
    }
  }

  /**
   * Drops the claim on `eventId` if `token` still holds it (a handler failed), never another
   * delivery's. If Redis does not take it, rejects and keeps retrying until it lands, so the next
   * delivery can run the event without waiting for `inFlightTtlMs`.
   */
  async release(eventId: string, token?: string): Promise<void> {
    const key = this.#key(eventId);
    const claimToken = this.#settle(eventId, token);
    // Called without a token for a claim this instance does not hold: another instance's claim stays.
    if (claimToken === undefined) return;
    await this.#pending.send(this.#releaseWrite(eventId, key, claimToken));
  }

  /**
   * Renews `token`'s claim on `eventId` for another `inFlightTtlMs`; resolves `false` when the key
   * no longer holds that claim (it expired, was taken over, or completed).
   * @example await store.extend('evt_1', token) // true while the claim is still the caller's
   */
  async extend(eventId: string, token?: string): Promise<boolean> {
    const key = this.#key(eventId);
    const claimToken = token === undefined ? this.#untokened.get(eventId) : checkToken(token);
    if (claimToken === undefined) return false;
    const ttl = `${this.#options.inFlightTtlMs}`;
    return Number(await this.#run('extend', eventId, ['EVAL', EXTEND, '1', key, claimToken, ttl])) === 1;
  }

  /**
   * The ordering guard's compare-and-set (core calls it; you do not need to): when (`version`,
   * `eventId`) is at least as new as the mark kept for `key` (a greater version, or an equal one
   * with an event id that is not smaller), or there is none, keeps it as the mark for
   * `completedTtlMs` and resolves `'current'`; else changes nothing and resolves `'stale'`. One
   * script, atomic across instances, on the key `<prefix>order:<key>`. Rejects when Redis fails or
   * does not answer within `timeoutMs`.
   * @example await store.advance('image:img_1', 1_700_000_000, 'evt_1') // 'current'
   */
  async advance(key: string, version: number, eventId: string): Promise<'current' | 'stale'> {
    if (typeof key !== 'string' || key === '') {
      throw new TypeError(`pixhook: RedisStore: advance() takes a non-empty string key, got ${describeType(key)}.`);
    }
    if (typeof version !== 'number' || !Number.isFinite(version)) {
      throw new TypeError(
        `pixhook: RedisStore: advance() takes a finite number version, got ${describeType(version)}.`,
      );
    }
    if (typeof eventId !== 'string' || eventId === '') {
      throw new TypeError(
        `pixhook: RedisStore: advance() takes a non-empty string event id, got ${describeType(eventId)}.`,
      );
    }
    // The key comes from the event: quoted, and cut short in messages.
    const named = JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key);
    // String(version): the shortest decimal that reads back as the same double, in JavaScript and in Lua.
    const reply = String(
      await this.#run('advance', named, [
        'EVAL',
        ADVANCE,
        '1',
        `${this.#options.prefix}${MARK}${key}`,
        String(version),
        eventId,
        `${this.#options.completedTtlMs}`,
      ]),
    );
    if (reply !== 'current' && reply !== 'stale') {
      throw new Error(`pixhook: RedisStore: unexpected reply to advance(${named}): ${reply.slice(0, 80)}`);
    }
    return reply;
  }

  /**
   * Completions that Redis did not take and that the store is still retrying, for monitoring.
   * @example metrics.gauge('pixhook.redis.pending_completions', store.pendingCompletions)
   */
  get pendingCompletions(): number {
    return this.#pending.count('complete');
  }

  /**
   * Releases of claims that Redis did not take and that the store is still retrying, for monitoring.
   * @example metrics.gauge('pixhook.redis.pending_releases', store.pendingReleases)
   */
  get pendingReleases(): number {
    return this.#pending.count('release');
  }

  /** The token `complete`/`release` act with: the caller's, or (without one) this instance's own. */
  #settle(eventId: string, token: string | undefined): string | undefined {
    if (token !== undefined) return checkToken(token);
    const own = this.#untokened.get(eventId);
    this.#untokened.delete(eventId);
    return own;
  }

  /** The release of `token`'s claim; `abandon`: of a claim whose reply never came (see `ABANDON`). */
  #releaseWrite(eventId: string, key: string, token: string, abandon = false): Write {
    // Past inFlightTtlMs the claim has expired by itself: nothing left to release.
    return {
      operation: 'release',
      eventId,
      command: abandon
        ? ['EVAL', ABANDON, '1', key, token, `${this.#options.inFlightTtlMs}`]
        : ['EVAL', RELEASE, '1', key, token],
      until: Date.now() + this.#options.inFlightTtlMs,
    };
  }

  #key(eventId: string): string {
    if (typeof eventId !== 'string' || eventId === '') {
      throw new TypeError(`pixhook: RedisStore: event ids are non-empty strings, got ${JSON.stringify(eventId)}.`);
    }
    return this.#options.prefix + eventId;
  }

  #run(operation: string, eventId: string, args: string[]): Promise<unknown> {
    let sent: Promise<unknown>;
    try {
      sent = this.#send(args);
    } catch (error) {
      sent = Promise.reject(error);
    }
    return this.#wait(sent, operation, eventId);
  }

  /** Waits for a command's reply for at most `timeoutMs`, with errors named after the operation. */
  async #wait(sent: Promise<unknown>, operation: string, eventId: string): Promise<unknown> {
    const { timeoutMs } = this.#options;
    try {
      return await withTimeout(
        sent,
        timeoutMs,
        `pixhook: RedisStore: Redis did not answer ${operation}(${eventId}) within ${timeoutMs} ms; is it reachable?`,
      );
    } catch (cause) {
      if (cause instanceof Error && cause.message.startsWith('pixhook: RedisStore:')) throw cause;
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new Error(`pixhook: RedisStore: ${operation}(${eventId}) failed: ${message}`, { cause });
    }
  }
}

/** Core's tokens are non-empty ASCII strings; `completed` would read as a completed event. */
function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token === '' || token === COMPLETED) {
    throw new TypeError(
      `pixhook: RedisStore: claim tokens are non-empty strings other than '${COMPLETED}', got ${typeof token === 'string' ? JSON.stringify(token) : typeof token}.`,
    );
  }
  return token;
}
