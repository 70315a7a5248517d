import { checkOrdering, orderingOf } from './modes/ordering.js';
import { processQueued } from './modes/queued.js';
import { type ReplayManyOptions, type ReplayResult, replayEvent, replayMatching } from './modes/replay.js';
import { headersOf, rawBytes } from './pipeline/admit.js';
import { type ResolvedOptions, resolveOptions, type WebhooksOptions } from './pipeline/options.js';
import { type PipelineHost, runPipeline } from './pipeline/pipeline.js';
import type { WebhookVerificationError } from './protocol/errors.js';
import {
  type AnyEvent,
  type DefaultEventDataMap,
  EVENT_TYPES,
  type EventDataMap,
  type EventOf,
  type EventType,
} from './protocol/events.js';
import { type HeadersInput, readDeliveryHeaders } from './protocol/headers.js';
import { verifyForTenant } from './protocol/secret-lookup.js';
import { verifyDelivery, verifyDeliveryAnywhere } from './protocol/verify.js';
import type { InboxQuery } from './seams/archive.js';
import {
  type AnyHandler,
  type ErrorContext,
  type ErrorHandler,
  type EventHandler,
  handlerId,
  type Ordering,
  registeredHandler,
} from './seams/context.js';
import type { HandleInput, WebhookResponse } from './seams/handle-input.js';
import type { WebhooksLogger } from './seams/logger.js';
import type { QueuedDelivery, QueuedRun, WebhookQueue } from './seams/queue.js';
import { isStandardSchema, type StandardSchemaV1, validating } from './seams/schema.js';
import { describeType } from './util/option-checks.js';

export type {
  ErrorContext,
  ErrorHandler,
  EventHandler,
  HandlerContext,
  TransactionalHandlerContext,
} from './seams/context.js';

const KNOWN = new Set<string>(EVENT_TYPES);

/**
 * Options of one handler's registration (`webhooks.on(type, options, handler)`).
 * @typeParam S - the schema's type, which types the handler's `data.object`
 */
export interface HandlerOptions<S extends StandardSchemaV1 = StandardSchemaV1, E = AnyEvent> {
  /**
   * A Standard Schema v1 validator (zod, valibot, arktype…) for the event's `data.object`: the
   * handler runs on the validated value; an event that fails it skips this handler and is reported
   * as `SCHEMA_MISMATCH` (acknowledged, never a 4xx).
   * @default none: data.object is not checked
   */
  schema?: S;
  /**
   * A stable name that makes this handler fail alone: it gets its own record that it succeeded, so
   * a retry of the event runs only the named handlers not yet done (and the unnamed ones, as
   * always); the answer is 2xx only once all are done. Transactional mode: it runs in a transaction
   * of its own, committed when it succeeds. Queued mode: it runs as a job of its own, with its own
   * attempts and dead letter. Letters, digits, `_`, `-` and `.`, at most 64; unique per event type.
   * Renaming it makes it a new handler, which runs again for events retried after the rename.
   * @default none: the handler runs with the others, all or nothing
   */
  id?: string;
  /**
   * The ordering guard for this handler (`{ key, version? }`): it runs only for an event at least as
   * new as the newest seen with the same key; an older one is acknowledged, the handler skipped, and
   * `onError` hears `STALE_EVENT`. The version defaults to the event's `created`; on a tie the
   * greater event id wins, so the outcome never depends on arrival order. `false`: not guarded, even
   * with the `ordering` option of `new Webhooks()`. Needs a store (or transactions) that keeps marks.
   * @default the `ordering` option of `new Webhooks()`, if any
   * @example ordering: { key: (event) => `image:${event.data.object.id}` }
   */
  ordering?: Ordering<E> | false;
}

/** A handler id: safe in keys and job ids, and short. */
const HANDLER_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** `E` with `data.object` of type `O`, for each member of a union of events. */
export type WithObject<E, O> = E extends { data: infer D }
  ? Omit<E, 'data'> & { data: Omit<D, 'object'> & { object: O } }
  : never;

const HANDLER_OPTIONS = new Set(['schema', 'id', 'ordering']);

/** A handler registered with options: checked, and wrapped to validate when there is a schema. */
function withOptions(options: unknown, handler: AnyHandler): AnyHandler {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `pixhook: on(type, options, handler): options must be an object such as { schema }; got ${describeType(options)}.`,
    );
  }
  if (isStandardSchema(options)) {
    throw new TypeError('pixhook: on(type, options, handler): options is a schema itself; pass it as { schema }.');
  }
  for (const key of Object.keys(options)) {
    if (!HANDLER_OPTIONS.has(key)) {
      throw new TypeError(
        `pixhook: on(type, options, handler): unknown option ${JSON.stringify(key.slice(0, 40))}; it takes schema, id and ordering.`,
      );
    }
  }
  const { schema, id, ordering } = options as HandlerOptions;
  checkOrdering(ordering, 'on(type, { ordering }, handler): ordering');
  if (id !== undefined && (typeof id !== 'string' || !HANDLER_ID.test(id))) {
    throw new TypeError(
      `pixhook: on(type, { id }, handler): id must be 1 to 64 letters, digits, _, - or .; got ${describeType(id)}.`,
    );
  }
  if (schema !== undefined && !isStandardSchema(schema)) {
    throw new TypeError(
      `pixhook: on(type, { schema }, handler): schema must be a Standard Schema v1 validator (zod 3.24+, valibot 1, arktype 2…); got ${describeType(schema)}.`,
    );
  }
  const checked = schema === undefined ? handler : validating(schema, handler);
  if (id === undefined && ordering === undefined) return checked;
  return registeredHandler(checked, {
    ...(id === undefined ? {} : { id }),
    ...(ordering === undefined ? {} : { ordering: ordering as Ordering | false }),
  });
}

/**
 * Receives the image service's webhooks: verifies, de-duplicates and dispatches them.
 *
 * @typeParam M - optional map from event type to the shape of its `data.object`; a key that is
 *   not an event type is a type error
 * @typeParam TRequest - the request type handlers see as `context.request`
 * @typeParam TTransaction - transactional mode: what handlers see as `context.transaction`
 *   (inferred from the `transactions` option)
 * @example
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET })
 * webhooks.on('image.created', async (event, { deliveryId }) => { await index(event.data.object) })
 * app.post('/webhooks', webhookMiddleware(webhooks))
 */
export class Webhooks<M extends EventDataMap<M> = DefaultEventDataMap, TRequest = unknown, TTransaction = unknown> {
  // Private fields: no reflection (getOwnPropertyDescriptors, showHidden inspection) reaches them.
  readonly #options: ResolvedOptions;
  readonly #byType = new Map<string, AnyHandler[]>();
  readonly #any: AnyHandler[] = [];
  readonly #errorHandlers: ErrorHandler<TRequest>[] = [];
  /** What the pipeline sees: the options, the handlers of a type, and the error reporter. */
  readonly #host: PipelineHost;

  constructor(options: WebhooksOptions<TTransaction>) {
    this.#options = resolveOptions(options as WebhooksOptions<unknown>);
    this.#host = {
      options: this.#options,
      handlersFor: (type) => this.#byType.get(type) ?? this.#any,
      reportError: (error, context) => this.#reportError(error, context as ErrorContext<TRequest>),
    };
    // Replay requests from the CLI and the dashboard come through the archive.
    this.#options.archive?.attach?.((eventId) => this.replay(eventId));
  }

  /** What `console.log(webhooks)` shows: the settings, never the secrets. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    const { secrets, tenantSecrets, tolerance, maxBodyBytes, store, queue, transactions } = this.#options;
    const storeName = store === false ? 'false' : (store.constructor?.name ?? 'custom');
    const queued = queue === undefined ? '' : `, queue: ${queue.constructor?.name ?? 'custom'}`;
    const transactional =
      transactions === undefined ? '' : `, transactions: ${transactions.constructor?.name ?? 'custom'}`;
    const secretsShown = tenantSecrets ? 'per tenant (hidden)' : `${secrets.list.length} (hidden)`;
    return `Webhooks { secrets: ${secretsShown}, tolerance: ${tolerance}, maxBodyBytes: ${maxBodyBytes}, store: ${storeName}${queued}${transactional} }`;
  }

  /** Largest body accepted, in bytes (the `maxBodyBytes` option). */
  get maxBodyBytes(): number {
    return this.#options.maxBodyBytes;
  }

  /** Milliseconds a body may take to arrive (the `bodyTimeoutMs` option); undefined when off. */
  get bodyTimeoutMs(): number | undefined {
    return this.#options.bodyTimeoutMs;
  }

  /**
   * Registers a handler for one event type or a list of them. Handlers of an event run one after
   * another, in the order they were registered (with `on` or `onAny`); the first that throws stops
   * the rest and the delivery answers 500, so the service's retry runs them all again.
   *
   * With `{ schema }` (any Standard Schema v1 validator: zod, valibot, arktype), the event's
   * `data.object` is validated right before this handler runs, and the handler gets the validated
   * value, typed by the schema. An event that fails it is not a 4xx (the service would retry the
   * signed event for 32 hours, then disable the endpoint): this handler is skipped, the others run,
   * the event is acknowledged, and `onError` hears `SCHEMA_MISMATCH` with the validator's issues
   * (in a queue worker the job becomes a dead letter at once).
   *
   * With `{ id }`, the handler fails alone: it has its own record that it succeeded, so the
   * service's retry of an event whose other handler failed runs only what is not done yet (see
   * `HandlerOptions.id`).
   *
   * @example
   * webhooks.on('quota.warned', (event) => notify(event.data.object))
   * webhooks.on(['quota.warned', 'quota.exceeded'], (event) => event.type) // narrowed union
   * webhooks.on('image.created', { schema: z.object({ id: z.string(), bytes: z.number() }) }, (event) => event.data.object.bytes)
   * webhooks.on('image.created', { id: 'thumbnails' }, makeThumbnails) // fails alone: a retry skips it once done
   */
  on<K extends EventType>(type: K | readonly K[], handler: EventHandler<EventOf<M, K>, TRequest, TTransaction>): this;
  on<K extends EventType, S extends StandardSchemaV1>(
    type: K | readonly K[],
    options: HandlerOptions<S, EventOf<M, K>> & { schema: S },
    handler: EventHandler<WithObject<EventOf<M, K>, StandardSchemaV1.InferOutput<S>>, TRequest, TTransaction>,
  ): this;
  on<K extends EventType>(
    type: K | readonly K[],
    options: HandlerOptions<never, EventOf<M, K>> & { schema?: undefined },
    handler: EventHandler<EventOf<M, K>, TRequest, TTransaction>,
  ): this;
  on(type: EventType | readonly EventType[], second: unknown, third?: unknown): this {
    const types: readonly string[] = Array.isArray(type) ? type : [type as EventType];
    const options = third === undefined ? undefined : second;
    const given = third === undefined ? second : third;
    if (typeof given !== 'function') {
      throw new TypeError(
        options === undefined
          ? 'pixhook: on(type, handler) needs a handler function.'
          : 'pixhook: on(type, options, handler) needs a handler function.',
      );
    }
    if (types.length === 0) throw new TypeError('pixhook: on([], handler) needs at least one event type.');
    for (const t of types) {
      if (!KNOWN.has(t)) {
        throw new TypeError(
          `pixhook: unknown event type ${JSON.stringify(t)}; known types are ${EVENT_TYPES.join(', ')}. Use onAny() for types pixhook does not know yet.`,
        );
      }
    }
    const handler = options === undefined ? (given as AnyHandler) : withOptions(options, given as AnyHandler);
    const id = handlerId(handler);
    const unique = new Set(types);
    const { store, transactions, queue, ordering } = this.#options;
    if (orderingOf(handler, ordering) !== undefined && !store && !transactions && !queue) {
      throw new TypeError(
        'pixhook: on(type, { ordering }, handler): the ordering guard keeps the newest version per key in the store, and this Webhooks has none (store: false); give it one (MemoryStore, RedisStore, PostgresStore) or transactions.',
      );
    }
    if (id !== undefined) {
      for (const t of unique) {
        if (this.#handlersFor(t).some((other) => handlerId(other) === id)) {
          throw new TypeError(
            `pixhook: on(${JSON.stringify(t)}, { id: ${JSON.stringify(id)} }, handler): a handler of this type already has that id; ids name one handler each.`,
          );
        }
      }
    }
    for (const t of unique) this.#handlersFor(t).push(handler);
    return this;
  }

  /**
   * Registers a handler for every verified event, known types and unknown ones alike.
   * @example
   * webhooks.onAny((event, { deliveryId }) => log.info({ type: event.type, deliveryId }))
   */
  onAny(handler: EventHandler<AnyEvent<M>, TRequest, TTransaction>): this {
    if (typeof handler !== 'function') throw new TypeError('pixhook: onAny(handler) needs a handler function.');
    this.#any.push(handler as AnyHandler);
    for (const list of this.#byType.values()) list.push(handler as AnyHandler);
    return this;
  }

  /**
   * Registers a listener told of every rejected request and every handler or store failure, with a
   * `WebhookVerificationError` (its `cause` holds the handler's own error).
   * @example
   * webhooks.onError((error, { deliveryId }) => log.warn({ code: error.code, deliveryId }, error.message))
   */
  onError(handler: ErrorHandler<TRequest>): this {
    if (typeof handler !== 'function') throw new TypeError('pixhook: onError(handler) needs a function.');
    this.#errorHandlers.push(handler);
    return this;
  }

  /**
   * Verifies a delivery and returns its event: signature, timestamp, JSON, envelope and headers.
   * Synchronous; throws `WebhookVerificationError` with `code` and `status`. It needs `node:crypto`
   * (Node, Bun, Deno, Workers with `nodejs_compat`); elsewhere it throws a plain `Error` saying
   * so: use `verifyAsync()` there.
   *
   * @param rawBody - the exact bytes received (a string is taken as UTF-8)
   * @param headers - Node's lower-case header object, or a `Headers`
   * @example
   * const event = webhooks.verify(req.rawBody, req.headers)
   */
  verify(rawBody: Uint8Array | string, headers: HeadersInput): AnyEvent<M> {
    // Checked first: without the bytes nothing about the request can be judged, and a missing raw
    // copy is this app's setup, which every request would hit.
    const body = rawBytes(rawBody, 'verify()', 'unavailable');
    if (this.#options.tenantSecrets) {
      throw new TypeError(
        "pixhook: verify() is synchronous and cannot look up a tenant's secret; with secret as a function, use verifyAsync(rawBody, headers, { tenant }).",
      );
    }
    return verifyDelivery(this.#options, body, readDeliveryHeaders(headersOf(headers))).event as AnyEvent<M>;
  }

  /**
   * `verify()` for every runtime: the same checks and errors (it rejects with the
   * `WebhookVerificationError`), on `node:crypto` where the runtime has it and on Web Crypto
   * (`crypto.subtle`) elsewhere, such as Cloudflare Workers without Node compatibility.
   *
   * @param rawBody - the exact bytes received (a string is taken as UTF-8)
   * @param headers - Node's lower-case header object, or a `Headers`
   * @param options - `tenant`: whose secret must match, when `secret` is a function
   * @example
   * const event = await webhooks.verifyAsync(new Uint8Array(await request.arrayBuffer()), request.headers)
   */
  async verifyAsync(
    rawBody: Uint8Array | string,
    headers: HeadersInput,
    options?: { tenant?: string | undefined },
  ): Promise<AnyEvent<M>> {
    const body = rawBytes(rawBody, 'verifyAsync()', 'unavailable');
    const read = readDeliveryHeaders(headersOf(headers));
    const tenants = this.#options.tenantSecrets;
    const delivery = tenants
      ? verifyForTenant(this.#options, tenants, body, read, options?.tenant)
      : verifyDeliveryAnywhere(this.#options, body, read);
    return (await delivery).event as AnyEvent<M>;
  }

  /**
   * With `secret` as a function: forgets the cached secrets of `tenant` (or of every tenant), so
   * the next delivery looks them up again: call it when a tenant's secret changes in your database.
   * Does nothing when `secret` is not a function.
   * @example
   * await db.endpoints.update(tenant, { signingSecret }); webhooks.forgetSecrets(tenant)
   */
  forgetSecrets(tenant?: string): void {
    this.#options.tenantSecrets?.forget(tenant);
  }

  /**
   * Runs the whole pipeline for one request — method, size, verification, de-duplication,
   * handlers — and returns the answer for an adapter to send. Never rejects.
   *
   * @example
   * const { status, headers, body } = await webhooks.handle({ method: 'POST', headers, body: rawBody })
   */
  handle(input: HandleInput<TRequest>): Promise<WebhookResponse> {
    return runPipeline(this.#host, input as HandleInput);
  }

  /**
   * Queued mode, for queue engines: runs the handlers registered for a queued delivery's event type
   * one after another, with `context.job` set (attempt number, job id) and `context.request`
   * undefined. Resolves when all succeeded; rejects with the first handler's own error, after
   * telling `onError` (`HANDLER_FAILED`). `@pixhook/bullmq`'s workers call it for each job.
   *
   * Named handlers (`on(type, { id }, handler)`) run as jobs of their own: given `options.queue`
   * (the engine's queue), an event's job writes one job per named handler (`delivery.handler` set,
   * its job id from `deliveryKey(delivery)`) and runs the unnamed ones; a job with
   * `delivery.handler` runs that handler alone. Without `options.queue` they run in the event's job.
   * A rejection for which `isFinalFailure(error)` is true (a `SCHEMA_MISMATCH`) must end the job
   * at once, as a dead letter.
   *
   * @example
   * await webhooks.process(job.data, { engine: 'my-queue', jobId: job.id, attempt: 1, maxAttempts: 5, queuedAt: job.createdAt }, { queue })
   */
  process(
    delivery: QueuedDelivery,
    job: QueuedRun,
    options?: { queue?: Pick<WebhookQueue, 'enqueue'> },
  ): Promise<void> {
    return processQueued(this.#host, delivery, job, options?.queue);
  }

  /**
   * Runs an archived event's handlers again, from the bytes verified when it arrived (no new
   * signature is needed), on purpose past the record that it was processed: a replay after an
   * incident, once the bug is fixed. The run is written to the event's timeline in the archive, and
   * handlers see `context.replay === true`. Inline, with a store: an event running right now (a
   * delivery, another replay) is not run again (`running`). Transactional mode: in the event's
   * transaction, as a delivery would be. Queued mode: written to the queue as a new job (`queued`),
   * which a worker runs with its own attempts. Needs the `archive` option.
   *
   * @example
   * const { outcome } = await webhooks.replay('evt_1a2b3c') // 'processed'
   */
  replay(eventId: string): Promise<ReplayResult> {
    return replayEvent(this.#host, eventId);
  }

  /**
   * `replay()` for every archived event that `query` matches (type, outcome, time range…), newest
   * first and one after another, up to `max` (1000 by default). Resolves with each one's result.
   *
   * @example
   * const results = await webhooks.replayMany({ type: 'image.created', outcome: 'failed', since: Date.parse('2026-11-25T08:00Z') })
   */
  replayMany(query: InboxQuery, options?: ReplayManyOptions): Promise<ReplayResult[]> {
    return replayMatching(this.#host, query, options);
  }

  /**
   * Tells every `onError` listener of `error` (with none, logs failures of status 500 and above):
   * for queue engines, which report their own failures (a lost job, a broken connection) here.
   */
  reportError(error: WebhookVerificationError, context: ErrorContext<TRequest | undefined>): void {
    this.#reportError(error, context as ErrorContext<TRequest>);
  }

  /**
   * Tells every `onError` listener (a listener that throws is ignored); with none, logs failures.
   * The last-chance alarm is logged whoever listens: it must be seen.
   */
  #reportError(error: WebhookVerificationError, context: ErrorContext<TRequest>): void {
    const heard = this.#errorHandlers.length > 0;
    // Like Express's default error handler: a failure nobody listens for must still be seen.
    // Rejected requests (4xx, 409) are not logged: anyone can send them.
    if (
      error.code === 'ENDPOINT_AT_RISK' ||
      (!heard &&
        (error.status >= 500 || error.code === 'DUPLICATE_WINDOW_SHORTENED' || error.code === 'SCHEMA_MISMATCH'))
    ) {
      log(this.#options.logger, error, context);
    }
    for (const listener of this.#errorHandlers) {
      try {
        const result = listener(error, context);
        if (result instanceof Promise) result.catch(() => {});
      } catch {
        // A broken logger must not turn an answer into a crash.
      }
    }
  }

  #handlersFor(type: string): AnyHandler[] {
    let list = this.#byType.get(type);
    if (!list) {
      // Seeded with the onAny handlers registered so far, so registration order holds.
      list = [...this.#any];
      this.#byType.set(type, list);
    }
    return list;
  }
}

// What the default log line prints of a request is untrusted text (the delivery id is an unsigned
// header, anyone can send any): no terminal control or bidi character reaches the log as itself,
// and no value is longer than LOGGED_CHARACTERS.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** Most characters of one untrusted value the default log line prints. */
const LOGGED_CHARACTERS = 128;
const ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `value`, capped at LOGGED_CHARACTERS with how many more there were, its unprintable characters escaped (`\x1b`, `\u202e`). */
function printable(value: string): string {
  let kept = value.length > LOGGED_CHARACTERS ? value.slice(0, LOGGED_CHARACTERS) : value;
  // Not half a surrogate pair at the cut.
  if (kept !== value && /[\ud800-\udbff]$/.test(kept)) kept = kept.slice(0, -1);
  const escaped = kept.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return ESCAPES[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`);
  });
  return kept === value ? escaped : `${escaped}… (${value.length - kept.length} more characters)`;
}

/** One of pixhook's own lines: on `logger` when given, else the default line on `console.error`. */
function log(logger: WebhooksLogger | undefined, error: WebhookVerificationError, context: ErrorContext): void {
  try {
    if (logger === undefined) logUnheard(error, context);
    else logTo(logger, error, context);
  } catch {
    // A broken logger must not turn an answer into a crash.
  }
}

/** The line as fields for a structured logger (pino's `err` for the cause). */
function logTo(logger: WebhooksLogger, error: WebhookVerificationError, context: ErrorContext): void {
  const fields: Record<string, unknown> = { code: error.code, status: error.status };
  if (context.event) {
    fields.eventType = String(context.event.type);
    fields.eventId = String(context.event.id);
  }
  if (context.deliveryId !== undefined) fields.deliveryId = printable(String(context.deliveryId));
  if (context.tenant !== undefined) fields.tenant = printable(String(context.tenant));
  if (context.job) {
    const { engine, jobId, attempt, maxAttempts } = context.job;
    fields.job = { engine, jobId, attempt, maxAttempts };
  }
  if (error.cause !== undefined) fields.err = error.cause;
  const message = `pixhook: ${error.code}: ${error.message}`;
  if (error.code === 'DUPLICATE_WINDOW_SHORTENED' || error.code === 'SCHEMA_MISMATCH') logger.warn(fields, message);
  else logger.error(fields, message);
}

/** The default line: the code, the event and delivery, then the cause. */
function logUnheard(error: WebhookVerificationError, context: ErrorContext): void {
  const where = [
    context.event && `${printable(String(context.event.type))} ${printable(String(context.event.id))}`,
    context.deliveryId && `delivery ${printable(String(context.deliveryId))}`,
    context.tenant && `tenant ${printable(String(context.tenant))}`,
    context.job &&
      `job ${printable(String(context.job.jobId))}, attempt ${context.job.attempt} of ${context.job.maxAttempts}`,
  ]
    .filter(Boolean)
    .join(', ');
  const hint = error.code === 'ENDPOINT_AT_RISK' ? '' : ' (register webhooks.onError() to handle these yourself)';
  const line = `pixhook: ${error.code}${where ? ` (${where})` : ''}: ${error.message}${hint}`;
  // A schema's issues quote the event (untrusted text, printed raw by console.error's inspection):
  // the message lists them, escaped.
  if (error.cause === undefined || error.code === 'SCHEMA_MISMATCH') console.error(line);
  else console.error(line, error.cause);
}

export type { HeadersInput };
