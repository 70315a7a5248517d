import { checkOrdering } from '../modes/ordering.js';
import { type SecretCacheOptions, TenantSecrets } from '../protocol/secret-lookup.js';
import {
  NO_SECRETS,
  resolveSecrets,
  type SecretEntry,
  type SecretLookup,
  type SecretSet,
} from '../protocol/secrets.js';
import { isWebhookArchive, type WebhookArchive } from '../seams/archive.js';
import type { Ordering } from '../seams/context.js';
import { isWebhooksLogger, type WebhooksLogger } from '../seams/logger.js';
import { isWebhookQueue, type WebhookQueue } from '../seams/queue.js';
import { type IdempotencyStore, isIdempotencyStore } from '../seams/store.js';
import { type EventTransactions, isEventTransactions } from '../seams/transactions.js';
import { MemoryStore } from '../stores/memory-store.js';
import { assertKnownOptions, describeType } from '../util/option-checks.js';

/**
 * Options of `new Webhooks(…)`, checked once when the object is built.
 * @typeParam TTransaction - transactional mode: what handlers see as `context.transaction`
 */
export interface WebhooksOptions<TTransaction = unknown> {
  /**
   * The endpoint's signing secret, or several while rotating (a signature matching any is
   * accepted; at most `MAX_SECRETS`, 3). Must be non-empty without leading or trailing white space. No default: a missing
   * secret (an unset environment variable, say) throws at construction.
   *
   * A secret may be given as `{ secret, label, notAfter }`: handlers and `onError` learn its
   * `label` (`context.secret`), and from `notAfter` on it no longer verifies (a rotation that ends
   * on its own). A function of the tenant (`(tenant) => secrets`, sync or async) gives each tenant
   * its own secret or secrets (see `secretCache`, and each adapter's `tenant` option): no tenant,
   * or a tenant the function finds nothing for (`undefined`, `null`, `[]`), answers 400
   * `SIGNATURE_MISMATCH` as a wrong signature would; a function that throws answers 503
   * `SECRET_UNAVAILABLE`.
   * @example secret: process.env.SIGNING_SECRET
   * @example secret: [process.env.NEW_SECRET, { secret: process.env.OLD_SECRET, label: 'old', notAfter: '2026-12-01T00:00:00Z' }]
   * @example secret: async (tenant) => (await db.endpoints.find(tenant))?.signingSecret
   */
  secret: string | SecretEntry | readonly (string | SecretEntry | undefined)[] | SecretLookup | undefined;
  /**
   * With a `secret` function only: how its answers are cached, per tenant. Found and not-found
   * answers are kept for `ttlMs`, failures never; at most `max` tenants (least recently used go
   * first). `false`: every delivery calls the function. `webhooks.forgetSecrets(tenant)` drops one
   * tenant's entry after a rotation.
   * @default { max: 1000, ttlMs: 60_000 }
   */
  secretCache?: SecretCacheOptions | false;
  /**
   * Seconds the signature's `t` may differ from now, past or future; `false` turns the check off
   * (not recommended: it is the replay protection).
   * @default 300
   */
  tolerance?: number | false;
  /**
   * Largest body accepted, in bytes; above it pixhook answers 413 without buffering the rest.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Where processed events are recorded so each runs once; `false` turns de-duplication off. It
   * also keeps the ordering guard's marks (`ordering`), and named handlers' records. In queued mode
   * the queue de-duplicates: a store given to the workers' `Webhooks` keeps the ordering marks only.
   * @default new MemoryStore() (none in queued and transactional modes)
   */
  store?: IdempotencyStore | false;
  /**
   * Queued mode: a verified delivery is written to this queue and answered 202 once the engine has
   * confirmed the write; the engine's workers run the handlers later, with retries and dead letters
   * (`new BullMQQueue(…)` from `@pixhook/bullmq`). The queue de-duplicates on the event id, so
   * `store` is used only for the ordering guard's marks. Unset: handlers run in the request.
   * @default undefined
   */
  queue?: WebhookQueue;
  /**
   * Transactional mode: each event's handlers run inside one database transaction, given to them as
   * `context.transaction`, and the record that the event was processed commits in that same
   * transaction (`new PostgresTransactions(pool)` from `@pixhook/postgres`). Commit: 200. A handler
   * that throws: rollback, none of its writes kept, 500 and the service retries. An event whose
   * transaction is open elsewhere answers 409 at once. It records processed events itself, so
   * `store` may not be given with it. With `queue`, the workers run the handlers this way.
   * @default undefined
   */
  transactions?: EventTransactions<TTransaction>;
  /**
   * Milliseconds the whole body may take to arrive once pixhook starts reading it; past it pixhook
   * answers 408 `BODY_TIMEOUT` and closes the connection, so a client trickling a body cannot hold
   * the server. The service sends whole bodies at once. `false` turns the deadline off.
   * @default 5_000
   */
  bodyTimeoutMs?: number | false;
  /**
   * Milliseconds the handlers of a delivery may run before pixhook answers 503 `HANDLER_TIMEOUT`
   * (the service gives up after 10 s and retries). The handlers keep running; their claim is kept
   * (and renewed where the store can) until they end, at most `maxClaimMs`, so a retry meanwhile
   * answers 409 and the event never runs twice at once; `onError` is told of the timeout and of how
   * the run ended. `false` turns this deadline off (`deliveryTimeoutMs` still answers). In queued
   * mode it bounds the write to the queue instead (with the queue's own `enqueueTimeoutMs`, if
   * shorter): past it pixhook answers 503 `QUEUE_UNAVAILABLE`.
   * @default 8_000
   */
  handlerTimeoutMs?: number | false;
  /**
   * One time budget per delivery, in milliseconds, counted from the call of `handle()` (adapters
   * call it as the request's headers arrive, before its first body byte is read): the body, the
   * verification, the claim and the handlers share it, so the answer comes within it whatever the
   * split (the service gives up after 10 s). `bodyTimeoutMs` and `handlerTimeoutMs` still bound
   * their own step; the earlier deadline wins. Handlers still running when it ends get 503
   * `HANDLER_TIMEOUT` (they keep running, as with `handlerTimeoutMs`); a completion still being
   * written then no longer holds the answer (200: the handlers succeeded). `false` turns it off.
   * @default 8_000
   */
  deliveryTimeoutMs?: number | false;
  /**
   * Longest time, in milliseconds, a run may hold its event's claim while its handlers have not
   * settled, counted from the first handler that returned a promise. Past it the claim is released,
   * so the service's next retry can run the event, and `onError` hears `CLAIM_RELEASED`. The
   * handlers are not stopped (JavaScript cannot stop a promise): if they are still working, the
   * retry runs beside them, so make long handlers idempotent or queue their work. Not used in
   * transactional mode (the database holds the lock; bound it with its own timeouts) nor queued
   * mode. `false` keeps the claim until the handlers settle, however long that takes.
   * @default 900_000 (15 minutes)
   */
  maxClaimMs?: number | false;
  /**
   * Clock in milliseconds, used for the tolerance check and the last-chance alarm's time left;
   * inject one in tests.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Where pixhook writes its own lines: failures of status 500 and above when no `onError` listener
   * is registered, and always the last-chance alarm (`ENDPOINT_AT_RISK`), at error level. Any logger
   * with pino's `error(fields, message)` and `warn(fields, message)`: pino, Fastify's `fastify.log`,
   * Nest's `Logger` through `nestLogger()` of `@pixhook/nestjs`. The fields are `code`, `status`,
   * `eventType`, `eventId`, `deliveryId` (unsigned, capped at 128 characters), `job` and `err` (the cause).
   * @default one line on `console.error` per failure, then its cause
   */
  logger?: WebhooksLogger;
  /**
   * The inbox: every verified delivery is kept (its exact bytes, its headers, the answer and the
   * handlers' runs), with what became of its event afterwards (queue jobs, dead letters, replays),
   * for the retention the archive is given (`new PostgresArchive(pool)` from `@pixhook/postgres`,
   * `new RedisArchive(redis)` from `@pixhook/redis`). Read it with `pixhook inbox` and `pixhook
   * dashboard`; run events again with `webhooks.replay()`. Requests refused before their signature
   * was verified are never kept. The entry is written once the answer is known, before it is sent
   * (transactional mode: in the event's transaction, so it commits with it); a write that fails or
   * takes longer than the archive's `writeTimeoutMs` is told to `onError` as `ARCHIVE_FAILED` and
   * changes no answer. Give the same archive to the workers' `Webhooks` in queued mode.
   * @default undefined (nothing kept)
   */
  archive?: WebhookArchive;
  /**
   * The ordering guard for every handler (`{ key, version? }`): a handler runs only for an event at
   * least as new as the newest seen with the same key (`version` defaults to the signed `created`;
   * a tie goes to the greater event id); an older event is acknowledged, its guarded handlers
   * skipped, and `onError` hears `STALE_EVENT`. Events without a key are not guarded. A handler
   * registered with its own `ordering` (or `ordering: false`) uses that instead. The newest version
   * per key is kept in the store (its `advance()`; in queued mode give the workers' `Webhooks` a
   * `store` for it) or, in transactional mode, in the event's transaction, for as long as
   * completed events are remembered.
   * @default undefined (no guard)
   * @example ordering: { key: (event) => (event.type.startsWith('image.') ? `image:${event.data.object.id}` : undefined) }
   */
  ordering?: Ordering;
}

/** Options after validation. */
export interface ResolvedOptions {
  /** The secrets; `NO_SECRETS` when they are looked up per tenant. */
  secrets: SecretSet;
  /** Secrets per tenant (`secret` as a function); undefined: one set for every delivery. */
  tenantSecrets: TenantSecrets | undefined;
  tolerance: number | false;
  maxBodyBytes: number;
  store: IdempotencyStore | false;
  /** undefined: handlers run in the request. */
  queue: WebhookQueue | undefined;
  /** Transactional mode; undefined: the store records processed events. */
  transactions: EventTransactions | undefined;
  /** Queued mode: the shorter of the queue's `enqueueTimeoutMs` and `handlerTimeoutMs`; undefined: none. */
  enqueueDeadline: { ms: number; option: string } | undefined;
  /** undefined: no deadline. */
  bodyTimeoutMs: number | undefined;
  /** undefined: no deadline. */
  handlerTimeoutMs: number | undefined;
  /** The budget of a whole delivery, from the call of `handle()`; undefined: none. */
  deliveryTimeoutMs: number | undefined;
  /** How long a run may hold its claim while its handlers have not settled; undefined: no bound. */
  maxClaimMs: number | undefined;
  now: () => number;
  /** undefined: the default line on `console.error`. */
  logger: WebhooksLogger | undefined;
  /** undefined: nothing archived. */
  archive: WebhookArchive | undefined;
  /** The ordering guard for every handler; undefined: none (handlers may have their own). */
  ordering: Ordering | undefined;
}

/**
 * The names of `new Webhooks()` options, for integrations that take them with options of their own
 * (`PixhookModule.forRoot()`) and check for misspellings with `assertKnownOptions`.
 */
export const WEBHOOKS_OPTION_NAMES = [
  'secret',
  'tolerance',
  'maxBodyBytes',
  'store',
  'queue',
  'transactions',
  'bodyTimeoutMs',
  'handlerTimeoutMs',
  'deliveryTimeoutMs',
  'maxClaimMs',
  'now',
  'logger',
  'archive',
  'secretCache',
  'ordering',
] as const satisfies readonly (keyof WebhooksOptions<unknown>)[];

function deadline(value: unknown, fallback: number, name: string): number | undefined {
  if (value === undefined) return fallback;
  if (value === false) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(
      `pixhook: ${name} must be a positive whole number of milliseconds, or false to turn the deadline off; got ${describeType(value)}.`,
    );
  }
  return value;
}

/** The earlier of two optional deadlines. */
function earlier(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** The write deadline of queued mode: the queue's own `enqueueTimeoutMs`, or `handlerTimeoutMs` if shorter. */
function enqueueDeadline(
  queue: WebhookQueue,
  handlerTimeoutMs: number | undefined,
): ResolvedOptions['enqueueDeadline'] {
  const own = queue.enqueueTimeoutMs;
  if (own !== undefined && (typeof own !== 'number' || !Number.isSafeInteger(own) || own <= 0)) {
    throw new TypeError(
      `pixhook: queue.enqueueTimeoutMs must be a positive whole number of milliseconds, or undefined; got ${describeType(own)}.`,
    );
  }
  if (own !== undefined && (handlerTimeoutMs === undefined || own <= handlerTimeoutMs)) {
    return { ms: own, option: `the queue's enqueueTimeoutMs` };
  }
  return handlerTimeoutMs === undefined ? undefined : { ms: handlerTimeoutMs, option: 'handlerTimeoutMs' };
}

/** Validates the options of `new Webhooks(…)` and fills in defaults. */
export function resolveOptions(options: WebhooksOptions<unknown>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('pixhook: new Webhooks(options) needs an options object with a secret.');
  }
  assertKnownOptions(options, WEBHOOKS_OPTION_NAMES, 'pixhook: new Webhooks(options)');
  const lookup = typeof options.secret === 'function' ? (options.secret as SecretLookup) : undefined;
  const secrets = lookup === undefined ? resolveSecrets(options.secret) : NO_SECRETS;
  if (lookup === undefined && options.secretCache !== undefined) {
    throw new TypeError('pixhook: secretCache caches the answers of a secret function; secret is not one.');
  }
  const tenantSecrets = lookup === undefined ? undefined : new TenantSecrets(lookup, options.secretCache);

  const tolerance = options.tolerance === undefined ? 300 : options.tolerance;
  if (tolerance !== false && (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance <= 0)) {
    throw new TypeError(
      `pixhook: tolerance must be a positive number of seconds, or false to turn the check off; got ${describeType(tolerance)}.`,
    );
  }

  const maxBodyBytes = options.maxBodyBytes === undefined ? 1_048_576 : options.maxBodyBytes;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) {
    throw new TypeError(
      `pixhook: maxBodyBytes must be a positive whole number of bytes; got ${describeType(maxBodyBytes)}.`,
    );
  }

  const transactions = options.transactions;
  if (transactions !== undefined) {
    if (!isEventTransactions(transactions)) {
      throw new TypeError(
        `pixhook: transactions must have a begin() method (an EventTransactions such as @pixhook/postgres' PostgresTransactions); got ${describeType(transactions)}.`,
      );
    }
    if (options.store !== undefined && options.store !== false) {
      throw new TypeError(
        'pixhook: give either store or transactions, not both: in transactional mode the event is recorded as processed in its own transaction, and the store would never be asked.',
      );
    }
  }
  // Queued and transactional modes need no store: do not build a MemoryStore that is never asked.
  const store =
    options.store === undefined
      ? options.queue === undefined && transactions === undefined
        ? new MemoryStore()
        : false
      : options.store;
  if (store !== false && !isIdempotencyStore(store)) {
    throw new TypeError(
      `pixhook: store must implement claim(), complete() and release() (an IdempotencyStore), or be false; got ${describeType(store)}.`,
    );
  }

  const queue = options.queue;
  if (queue !== undefined) {
    if (!isWebhookQueue(queue)) {
      throw new TypeError(
        `pixhook: queue must have an enqueue() method (a WebhookQueue such as @pixhook/bullmq's BullMQQueue); got ${describeType(queue)}.`,
      );
    }
    // With a queue, the queue de-duplicates: a store given too keeps only the ordering guard's marks.
  }

  const now = options.now === undefined ? Date.now : options.now;
  if (typeof now !== 'function') {
    throw new TypeError(`pixhook: now must be a function returning milliseconds; got ${describeType(now)}.`);
  }
  const logger = options.logger;
  if (logger !== undefined && !isWebhooksLogger(logger)) {
    throw new TypeError(
      `pixhook: logger must have error(fields, message) and warn(fields, message) methods (pino, fastify.log, or nestLogger() of @pixhook/nestjs); got ${describeType(logger)}.`,
    );
  }
  const archive = options.archive;
  if (archive !== undefined && !isWebhookArchive(archive)) {
    throw new TypeError(
      `pixhook: archive must have a record() method (a WebhookArchive such as @pixhook/postgres' PostgresArchive or @pixhook/redis' RedisArchive); got ${describeType(archive)}.`,
    );
  }
  checkOrdering(options.ordering, 'ordering');
  if ((options.ordering as unknown) === false)
    throw new TypeError('pixhook: ordering must be { key, version? }; leave it out for no guard.');
  if (options.ordering !== undefined && !store && !transactions && !options.queue) {
    throw new TypeError(
      'pixhook: the ordering guard keeps the newest version per key in the store, and store is false: give a store (MemoryStore, RedisStore, PostgresStore) or transactions.',
    );
  }
  const bodyTimeoutMs = deadline(options.bodyTimeoutMs, 5_000, 'bodyTimeoutMs');
  const handlerTimeoutMs = deadline(options.handlerTimeoutMs, 8_000, 'handlerTimeoutMs');
  const deliveryTimeoutMs = deadline(options.deliveryTimeoutMs, 8_000, 'deliveryTimeoutMs');
  const maxClaimMs = deadline(options.maxClaimMs, 900_000, 'maxClaimMs');

  return {
    secrets,
    tenantSecrets,
    tolerance,
    maxBodyBytes,
    store,
    queue,
    transactions,
    enqueueDeadline: queue === undefined ? undefined : enqueueDeadline(queue, handlerTimeoutMs),
    // The body is read from the call of handle(): the budget bounds it from the start.
    bodyTimeoutMs: earlier(bodyTimeoutMs, deliveryTimeoutMs),
    handlerTimeoutMs,
    deliveryTimeoutMs,
    maxClaimMs,
    now,
    logger,
    archive,
    ordering: options.ordering,
  };
}
