// What pixhook publishes on Node's `diagnostics_channel` for tracing and metrics
// (`@pixhook/opentelemetry` subscribes), the way undici, Node's http and Fastify do. Nothing is built
// or published while nobody subscribes: each call site checks `hasSubscribers` first.
import type { WebhookErrorCode } from '../protocol/errors.js';
import type { AnyEvent } from '../protocol/events.js';
import type { AnyHandler, HandlerContext } from './context.js';
import type { QueuedRun } from './queue.js';

/**
 * The names of pixhook's tracing channels. Each is a `diagnostics_channel.tracingChannel(name)`:
 * subscribe to `start`, `end`, `asyncStart`, `asyncEnd` and `error` (Node's documentation names
 * the events) and receive the same message object from start to end.
 *
 * @example
 * import diagnostics_channel from 'node:diagnostics_channel'
 * diagnostics_channel.tracingChannel(CHANNELS.delivery).subscribe({
 *   asyncEnd(message) { console.log(message.status, message.code) }, start() {}, end() {}, asyncStart() {}, error() {},
 * })
 */
export const CHANNELS = Object.freeze({
  /** One call of `webhooks.handle()`, from the request's arrival to its answer (`DeliveryMessage`). */
  delivery: 'pixhook:delivery',
  /** One run of one handler, in the request or in a queue worker (`HandlerMessage`). */
  handler: 'pixhook:handler',
  /** One write of a verified delivery to the queue, in queued mode (`EnqueueMessage`). */
  enqueue: 'pixhook:enqueue',
  /** One run of a queued delivery's handlers by a worker (`JobMessage`). */
  job: 'pixhook:job',
  /** One event's database transaction in transactional mode, from BEGIN to COMMIT or ROLLBACK (`TransactionMessage`). */
  transaction: 'pixhook:transaction',
} as const);

/**
 * How the delivery was answered: `processed` (200, the handlers ran, or none was registered),
 * `duplicate` (200, handled before), `queued` (202), `rejected` (any other status).
 */
export type DeliveryOutcome = 'processed' | 'duplicate' | 'queued' | 'rejected';

/**
 * The message of one `pixhook:delivery` trace. Fields are filled in as the delivery goes: at
 * `start` only `mode` is set; by `asyncEnd` everything known is. Only signed data identifies the
 * event; `deliveryId` is an unsigned header (anyone can send any). Never a secret, a signature or
 * the body.
 */
export interface DeliveryMessage {
  /** Which mode handles verified deliveries. */
  readonly mode: 'inline' | 'transactional' | 'queued';
  /** The X-Service-Delivery header as sent (unsigned; for a rejected request it may come from anyone). */
  deliveryId: string | undefined;
  /** The signed event's type, once verified. */
  eventType: string | undefined;
  /** The signed event's id, once verified. */
  eventId: string | undefined;
  /** The signed event's `created`, in Unix seconds, once verified. */
  created: number | undefined;
  /** The signature's `t`, in Unix seconds, once verified. */
  timestamp: number | undefined;
  /** Which secret of the `secret` option matched (0: the first), once verified. */
  secretIndex: number | undefined;
  /** Milliseconds the size check, the signature and the parse took, once the body has arrived. */
  verifyMs: number | undefined;
  /**
   * The service's attempt this delivery most likely is (1: the first, 7: the last), estimated from
   * the signed `t` and `created` and the spec's retry schedule; undefined before verification.
   */
  attempt: number | undefined;
  /** The answer's status, at `asyncEnd`. */
  status: number | undefined;
  /** The error code answered, for any status but 2xx. */
  code: WebhookErrorCode | undefined;
  /** What the answer means. */
  outcome: DeliveryOutcome | undefined;
  /**
   * True when a status other than 2xx answered what was probably one of the service's last two
   * attempts (`onError` heard `ENDPOINT_AT_RISK`): see `LastChance`.
   */
  lastChance: boolean;
  /** As for handlers: set by a subscriber to `start` to run the delivery inside its own context. */
  runInContext?: <T>(fn: () => T) => T;
}

/** The message of one `pixhook:handler` trace: one handler, run for one event. */
export interface HandlerMessage {
  readonly eventType: string;
  readonly eventId: string;
  /** The X-Service-Delivery header of the delivery it runs for (unsigned). */
  readonly deliveryId: string;
  /** The handler function's name, or `anonymous`. */
  readonly handlerName: string;
  /** Its place among the event's handlers, from 0. */
  readonly index: number;
  /** In a queue worker: the job. */
  readonly job: QueuedRun | undefined;
  /** The message of the delivery (in the request) or of the job (in a worker) it runs in, when that is traced. */
  readonly parent: DeliveryMessage | JobMessage | undefined;
  /** What it threw or rejected with, at `error`. */
  error?: unknown;
  /**
   * Set when the handler did not run: `stale` (the ordering guard saw a newer event with the same
   * key). The trace then starts and ends at once. (A handler skipped by its schema runs the
   * validation and ends with the `SCHEMA_MISMATCH` as its `error`.)
   */
  readonly skipped?: 'stale';
  /**
   * Set by a subscriber to `start` to run the handler inside its own context (OpenTelemetry's
   * active span): pixhook calls the handler through it.
   */
  runInContext?: <T>(fn: () => T) => T;
}

/** The message of one `pixhook:enqueue` trace: a verified delivery written to the queue. */
export interface EnqueueMessage {
  readonly eventType: string;
  readonly eventId: string;
  readonly deliveryId: string;
  /** The queue engine (`bullmq`, `pg-boss`), when the queue says. */
  readonly engine: string | undefined;
  /** The queue's name, when the queue says. */
  readonly queueName: string | undefined;
  readonly parent: DeliveryMessage | undefined;
  /**
   * Set by a subscriber to `start`: trace context headers (W3C `traceparent`, `tracestate`) that are
   * stored in the job with the delivery, and handed to the worker's `pixhook:job` message.
   */
  traceContext?: Record<string, string>;
  /** Why the write failed, at `error` (a refusal or a deadline passed). */
  error?: unknown;
}

/** The message of one `pixhook:job` trace: a worker runs a queued delivery's handlers. */
export interface JobMessage {
  readonly eventType: string;
  readonly eventId: string;
  readonly deliveryId: string;
  readonly job: QueuedRun;
  /** The trace context stored with the job at enqueue, if any. Untrusted text from the queue's storage. */
  readonly traceContext: Readonly<Record<string, string>> | undefined;
  /** What the run failed with, at `error`. */
  error?: unknown;
  /** As for handlers: set by a subscriber to `start` to run the job's handlers in its context. */
  runInContext?: <T>(fn: () => T) => T;
}

/** The message of one `pixhook:transaction` trace: one event's transaction. */
export interface TransactionMessage {
  readonly eventId: string;
  readonly eventType: string;
  /** How it ended, at `asyncEnd`: committed, rolled back, or never opened (`begin-failed`, `busy`, `completed`). */
  result: 'committed' | 'rolled-back' | 'commit-failed' | 'begin-failed' | 'busy' | 'completed' | undefined;
  /** What failed, at `error`. */
  error?: unknown;
}

/** The part of Node's `TracingChannel` pixhook uses. */
export interface Traced<M extends object> {
  readonly hasSubscribers: boolean;
  readonly start: { publish(message: M): void; runStores<T>(message: M, fn: () => T): T };
  readonly end: { publish(message: M): void };
  readonly asyncStart: { publish(message: M): void };
  readonly asyncEnd: { publish(message: M): void };
  readonly error: { publish(message: M): void };
}

type TracingChannelFactory = <M extends object>(name: string) => Traced<M>;

/**
 * `diagnostics_channel.tracingChannel`, where the runtime has it (Node, Bun, Deno, workerd with
 * `nodejs_compat`), loaded without a static import so the Web-standard build needs no `node:`
 * module. Elsewhere a channel that never has subscribers.
 */
function tracingChannelFactory(): TracingChannelFactory | undefined {
  try {
    const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const dc = process?.getBuiltinModule?.('node:diagnostics_channel') as
      | { tracingChannel?: TracingChannelFactory }
      | undefined;
    return typeof dc?.tracingChannel === 'function' ? dc.tracingChannel : undefined;
  } catch {
    return undefined;
  }
}

const nothing = { publish() {} };
const SILENT: Traced<object> = {
  hasSubscribers: false,
  start: { publish() {}, runStores: (_message, fn) => fn() },
  end: nothing,
  asyncStart: nothing,
  asyncEnd: nothing,
  error: nothing,
};

const factory = tracingChannelFactory();
function channel<M extends object>(name: string): Traced<M> {
  return factory ? factory<M>(name) : (SILENT as Traced<M>);
}

/** The channels, made once. Check `hasSubscribers` before building a message. */
export const deliveryChannel: Traced<DeliveryMessage> = channel(CHANNELS.delivery);
export const handlerChannel: Traced<HandlerMessage> = channel(CHANNELS.handler);
export const enqueueChannel: Traced<EnqueueMessage> = channel(CHANNELS.enqueue);
export const jobChannel: Traced<JobMessage> = channel(CHANNELS.job);
export const transactionChannel: Traced<TransactionMessage> = channel(CHANNELS.transaction);

/**
 * Runs `fn` as one traced step with `message`: `start` (in the channel's bound stores, and in the
 * subscriber's context when it set `runInContext`), `end`, then `asyncStart` and `asyncEnd` when a
 * promise it returned settles, with `error` first when it threw or rejected, or resolved after
 * setting `message.error` itself (a step that fails without rejecting). Returns what `fn`
 * returned (the same promise), so a synchronous step stays synchronous.
 */
export function traceStep<M extends { error?: unknown; runInContext?: <T>(fn: () => T) => T }, T>(
  traced: Traced<M>,
  message: M,
  fn: () => T,
): T {
  let result: T;
  try {
    result = traced.start.runStores(message, () => (message.runInContext ? message.runInContext(fn) : fn()));
  } catch (error) {
    message.error = error;
    traced.error.publish(message);
    traced.end.publish(message);
    // As for every step, asyncEnd comes last: a subscriber ends its span there, whatever happened.
    traced.asyncStart.publish(message);
    traced.asyncEnd.publish(message);
    throw error;
  }
  traced.end.publish(message);
  let settled: PromiseLike<unknown> | undefined;
  try {
    // Reading `then` may throw (a hostile getter): the caller meets that itself; the trace just ends.
    if (isPromiseLike(result)) settled = result;
  } catch {}
  if (settled) {
    Promise.resolve(settled).then(
      () => endStep(traced, message),
      (error: unknown) => {
        message.error = error;
        endStep(traced, message);
      },
    );
  } else {
    // Published for a synchronous step too, so a subscriber always ends its span at asyncEnd.
    endStep(traced, message);
  }
  return result;
}

/**
 * The end of a traced step whose start was published: `error` when `message.error` is set (a step
 * may fail without rejecting, as an enqueue answered 503 does), then `asyncStart` and `asyncEnd`.
 */
export function endStep<M extends { error?: unknown }>(traced: Traced<M>, message: M): void {
  if (message.error !== undefined) traced.error.publish(message);
  traced.asyncStart.publish(message);
  traced.asyncEnd.publish(message);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/**
 * Calls one handler, traced on `pixhook:handler` when someone subscribes (one property read when
 * nobody does). Returns what the handler returned, so a synchronous handler stays synchronous.
 */
export function callHandler(
  handler: AnyHandler,
  index: number,
  event: AnyEvent,
  context: HandlerContext,
  parent: DeliveryMessage | JobMessage | undefined,
): unknown {
  if (!handlerChannel.hasSubscribers) return handler(event, context);
  return traceStep(handlerChannel, handlerMessage(handler, index, event, context, parent), () =>
    handler(event, context),
  );
}

/** The message of one handler's trace; `skipped` for a handler that does not run. */
function handlerMessage(
  handler: AnyHandler,
  index: number,
  event: AnyEvent,
  context: HandlerContext,
  parent: DeliveryMessage | JobMessage | undefined,
  skipped?: 'stale',
): HandlerMessage {
  const message: HandlerMessage = {
    eventType: event.type,
    eventId: event.id,
    deliveryId: context.deliveryId,
    handlerName: handler.name || 'anonymous',
    index,
    job: context.job,
    parent,
  };
  return skipped === undefined ? message : { ...message, skipped };
}

/** Traces a handler the ordering guard skipped (`skipped: 'stale'`), when someone subscribes. */
export function traceSkipped(
  handler: AnyHandler,
  index: number,
  event: AnyEvent,
  context: HandlerContext,
  parent: DeliveryMessage | JobMessage | undefined,
): void {
  if (!handlerChannel.hasSubscribers) return;
  traceStep(handlerChannel, handlerMessage(handler, index, event, context, parent, 'stale'), () => undefined);
}
