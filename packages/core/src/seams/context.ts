import type { WebhookVerificationError } from '../protocol/errors.js';
import type { AnyEvent } from '../protocol/events.js';
import type { SecretMatch } from '../protocol/secrets.js';
import type { QueuedRun } from './queue.js';

/** What a handler receives besides the event. */
export interface HandlerContext<TRequest = unknown> {
  /** The X-Service-Delivery header: one id per delivery attempt's delivery. Not signed. */
  deliveryId: string;
  /** The signature's `t`, in Unix seconds. */
  timestamp: number;
  /**
   * What the adapter passed: Express `req`, Fastify `request`, Koa `ctx`, the fetch `Request`.
   * `undefined` in a queue worker (`job` is set there): the request was answered long ago.
   */
  request: TRequest;
  /** Set when a queue worker runs the handlers (queued mode): which job, which attempt. */
  job?: QueuedRun;
  /**
   * Transactional mode (the `transactions` option): the event's open database transaction, whose
   * commit also records the event as processed. Undefined otherwise. Typed in
   * `TransactionalHandlerContext`, which transactional handlers receive.
   */
  transaction?: unknown;
  /**
   * True when the handlers run because someone asked for a replay from the archive
   * (`webhooks.replay()`, `pixhook inbox replay`, the dashboard), not because the service delivered.
   */
  replay?: boolean;
  /**
   * The tenant whose secret verified the delivery, when secrets are looked up per tenant (`secret`
   * as a function); undefined otherwise.
   */
  tenant?: string;
  /**
   * Which secret verified the delivery: its index in the list (the option's, or the tenant's
   * lookup's) and its `label` when it has one, never the secret. Watch an old secret go quiet
   * before removing it. Undefined on a replay from the archive older than this field.
   */
  secret?: SecretMatch;
}

/**
 * What a handler receives in transactional mode (`new Webhooks({ transactions })`): the context,
 * with the event's open transaction as `transaction` (a `pg` `PoolClient` with `@pixhook/postgres`).
 */
export interface TransactionalHandlerContext<TRequest = unknown, TTransaction = unknown>
  extends HandlerContext<TRequest> {
  /** The event's open transaction: write through it, and your writes commit with the event's record. */
  transaction: TTransaction;
}

/**
 * The context a handler receives: a `HandlerContext` whose `transaction` has the type of the
 * `transactions` option's transaction (`unknown`, and undefined at run time, without it).
 */
export type ContextFor<TRequest, TTransaction> = HandlerContext<TRequest> & { transaction: TTransaction };

/** What an `onError` listener receives besides the error; fields are set when known. */
export interface ErrorContext<TRequest = unknown> {
  request: TRequest;
  /**
   * The X-Service-Delivery header as sent, to match the error with the service's dashboard. It is
   * never signed; for a rejected request it may come from anyone.
   */
  deliveryId?: string;
  /** The signature's `t`, for verified deliveries. */
  timestamp?: number;
  /** The verified event, for handler and store failures. */
  event?: AnyEvent;
  /** The queue job, for failures in a queue worker. */
  job?: QueuedRun;
  /**
   * The tenant, when secrets are looked up per tenant: whose secret verified the delivery, or, for
   * a request refused before that, the tenant it named (unsigned: anyone can send any).
   */
  tenant?: string;
  /** Which secret verified the delivery (index, label), for verified deliveries. */
  secret?: SecretMatch;
}

/**
 * A handler for one or more event types; may be async. Throwing or rejecting answers 500.
 * @typeParam TTransaction - in transactional mode, what `context.transaction` is
 */
export type EventHandler<TEvent, TRequest = unknown, TTransaction = unknown> = (
  event: TEvent,
  context: ContextFor<TRequest, TTransaction>,
) => unknown;

/** An `onError` listener. It is called synchronously and must not throw (if it does, it is ignored). */
export type ErrorHandler<TRequest = unknown> = (
  error: WebhookVerificationError,
  context: ErrorContext<TRequest>,
) => unknown;

/** A handler as the pipeline stores and runs it. */
export type AnyHandler = (event: AnyEvent, context: HandlerContext) => unknown;

/**
 * The ordering guard of a handler, a type or a whole `Webhooks` (the `ordering` options): which
 * events are versions of the same thing (`key`), and which is newer (`version`). A handler guarded
 * by it runs only for an event at least as new as the newest seen for its key; an older one is
 * acknowledged, the handler skipped, and `onError` hears `STALE_EVENT`.
 * @typeParam TEvent - the events it is given
 * @example { key: (event) => `image:${event.data.object.id}` }
 */
export interface Ordering<TEvent = AnyEvent> {
  /**
   * The ordering key: events with the same key are versions of one thing (an image, an account's
   * quota). Keys are shared by every handler that uses them, so name their kind (`image:img_1`).
   * No key (undefined, null, an empty string): the event is not guarded.
   */
  key: (event: TEvent) => string | undefined | null;
  /**
   * The event's version: greater is newer; on a tie the greater event id is taken as the newer,
   * so every instance and every arrival order agree. No finite number: the event is not guarded
   * (its handlers run and the mark does not move).
   * @default the event's signed `created` (seconds)
   */
  version?: (event: TEvent) => number | undefined | null;
}

/** What a registration says of its handler (`on(type, { id, ordering }, handler)`). */
export interface HandlerMeta {
  /** The stable name that gives it its own record (`HandlerOptions.id`). */
  readonly id?: string;
  /** Its ordering guard; `false`: none, even with a `Webhooks`-wide one. */
  readonly ordering?: Ordering | false;
}

/** What registrations said of the functions core runs. */
const HANDLER_META = new WeakMap<AnyHandler, HandlerMeta>();

/**
 * `handler` as registered with `meta`: a function of its own (so one function may be registered
 * twice), named after its id when it has one (the archive and the traces show it).
 */
export function registeredHandler(handler: AnyHandler, meta: HandlerMeta): AnyHandler {
  const registered: AnyHandler = (event, context) => handler(event, context);
  Object.defineProperty(registered, 'name', { value: meta.id ?? handler.name });
  HANDLER_META.set(registered, meta);
  return registered;
}

/** What the registration said of a handler; undefined for one registered without options. */
export function handlerMeta(handler: AnyHandler): HandlerMeta | undefined {
  return HANDLER_META.get(handler);
}

/** The id a handler was registered under; undefined for an unnamed one. */
export function handlerId(handler: AnyHandler): string | undefined {
  return HANDLER_META.get(handler)?.id;
}

/** The ordering a handler was registered with: its own, `false` for none, undefined when it said nothing. */
export function handlerOrdering(handler: AnyHandler): Ordering | false | undefined {
  return HANDLER_META.get(handler)?.ordering;
}
