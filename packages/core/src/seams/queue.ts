// The queue seam: what a durable queue engine implements (WebhookQueue), what it stores
// (QueuedDelivery), what its workers tell handlers (QueuedRun) and list (DeadLetter), and the
// guards that check them. The queued mode that uses it is modes/queued.ts.
import type { AnyEvent } from '../protocol/events.js';
import type { SecretMatch } from '../protocol/secrets.js';

/**
 * A verified delivery as a queue stores it: the signed event, and the delivery's id and signature
 * timestamp. Nothing else from the request is kept.
 */
export interface QueuedDelivery {
  /** The verified event, as parsed from the signed body. */
  readonly event: AnyEvent;
  /** The X-Service-Delivery header of the delivery that was queued. */
  readonly deliveryId: string;
  /** The signature's `t`, in Unix seconds. */
  readonly timestamp: number;
  /**
   * Trace context headers (W3C `traceparent`, `tracestate`) set by a tracer subscribed to
   * `pixhook:enqueue` (`@pixhook/opentelemetry`), so the worker's span joins the request's trace.
   * Absent when nothing traces.
   */
  readonly traceContext?: Readonly<Record<string, string>>;
  /**
   * Set on a replay from the archive (`webhooks.replay()`): an id unique to this replay, so the
   * engine stores it as a new job (its own job id) instead of finding the event's first job, and
   * the handlers run again. Absent on deliveries.
   */
  readonly replay?: string;
  /**
   * With secrets per tenant: the tenant whose secret verified the delivery. Engines derive their
   * job ids from `deliveryKey(delivery)`, which scopes the event id by it.
   */
  readonly tenant?: string;
  /** Which secret verified the delivery (index, label), told to the worker's handlers. */
  readonly secret?: SecretMatch;
  /**
   * The job of one named handler (`on(type, { id }, handler)`): the worker runs only the handler
   * registered under this id, with its own attempts and dead letter. Absent on an event's job.
   */
  readonly handler?: string;
}

/**
 * Queued processing, the seam between pixhook and a durable queue engine (`@pixhook/bullmq`,
 * `@pixhook/pg-boss`). With `new Webhooks({ queue })` every adapter answers a
 * verified delivery 202 once `enqueue` resolves, and the engine's workers run the handlers later
 * through `webhooks.process()`.
 *
 * @example
 * const queue: WebhookQueue = {
 *   async enqueue(delivery) { await jobs.insert({ id: delivery.event.id, data: delivery }) }, // ignore a duplicate id
 * }
 */
export interface WebhookQueue {
  /**
   * Stores `delivery` durably, keyed on `deliveryKey(delivery)` (the event id, scoped by tenant
   * when there is one), and resolves once the engine has confirmed the write. An id already stored (queued, running, done or dead-lettered) resolves
   * too, without a second job. Rejecting answers 503 `QUEUE_UNAVAILABLE`, and the service retries.
   */
  enqueue(delivery: QueuedDelivery): Promise<unknown>;
  /**
   * Optional. Longest wait for `enqueue` to confirm, in ms: core answers 503 `QUEUE_UNAVAILABLE`
   * past it (or past `handlerTimeoutMs`, when that is shorter), on its shared deadline timers, so an
   * engine needs no timer of its own per delivery.
   */
  readonly enqueueTimeoutMs?: number;
  /** Optional. The engine's name for traces and metrics (`bullmq`, `pg-boss`). */
  readonly engine?: string;
  /** Optional. The queue's name for traces and metrics. */
  readonly queueName?: string;
}

/** What a handler run by a queue worker learns of its job (`context.job`). */
export interface QueuedRun {
  /** The engine that runs it, e.g. `'bullmq'`. */
  readonly engine: string;
  /** The job's id in the engine (derived from the event id). */
  readonly jobId: string;
  /** 1 for the first run, 2 for the first retry, and so on. */
  readonly attempt: number;
  /** Runs the job gets before it becomes a dead letter. */
  readonly maxAttempts: number;
  /** When the delivery was queued, in milliseconds since the epoch. */
  readonly queuedAt: number;
  /** The queue's name, when the engine says (traces name the worker's span after it). */
  readonly queueName?: string;
}

/**
 * An event whose job ran out of attempts, kept by its queue engine until retried or discarded
 * (`listDeadLetters()` of `@pixhook/bullmq` and of `@pixhook/pg-boss`). Every string
 * in it was read from the engine's storage: treat it as untrusted text where you show it.
 */
export interface DeadLetter {
  /** The engine's job id, derived from the event id. */
  readonly jobId: string;
  /** The queued delivery: the verified event, its delivery id and signature timestamp; undefined for a job that held none. */
  readonly delivery: QueuedDelivery | undefined;
  /** Runs that failed. */
  readonly attemptsMade: number;
  /** When the delivery was queued, in ms since the epoch. */
  readonly queuedAt: number;
  /** When the last run failed, in ms since the epoch. */
  readonly failedAt: number | undefined;
  /** The last error's message. */
  readonly error: string;
  /** The last error's stack, when the handler's error had one. */
  readonly stack: string | undefined;
}

/** Which dead letters to list. */
export interface DeadLetterListOptions {
  /** Dead letters to skip, newest first. @default 0 */
  offset?: number;
  /** Most dead letters to return. @default 100 */
  limit?: number;
}

/**
 * Where the dead letters of one queue are listed, shown, retried and discarded: `BullMQQueue`
 * (`@pixhook/bullmq`) and `PgBossQueue` (`@pixhook/pg-boss`) are both one, and the dashboard and
 * `pixhook dead-letters` take any.
 */
export interface DeadLetterSource {
  /** The engine's name, e.g. `'bullmq'` or `'pg-boss'`. */
  readonly engine: string;
  /** The queue's name. */
  readonly queueName: string;
  /** Dead letters, newest first. */
  listDeadLetters(options?: DeadLetterListOptions): Promise<DeadLetter[]>;
  countDeadLetters(): Promise<number>;
  /** One dead letter by job id or event id; undefined when there is none. */
  getDeadLetter(id: string): Promise<DeadLetter | undefined>;
  /** Runs it again with all its attempts; false when there is no such dead letter. */
  retryDeadLetter(id: string): Promise<boolean>;
  /** Deletes it for good; false when there is no such dead letter. */
  discardDeadLetter(id: string): Promise<boolean>;
  /** Runs every dead letter again; resolves with how many. */
  retryAllDeadLetters(): Promise<number>;
  /** Deletes every dead letter for good; resolves with how many. */
  discardAllDeadLetters(): Promise<number>;
}

/** The methods of a `DeadLetterSource`, for checking one that was given. */
export const DEAD_LETTER_METHODS = [
  'listDeadLetters',
  'countDeadLetters',
  'getDeadLetter',
  'retryDeadLetter',
  'discardDeadLetter',
  'retryAllDeadLetters',
  'discardAllDeadLetters',
] as const satisfies readonly (keyof DeadLetterSource)[];

/** True when `value` has an `enqueue` method (a `WebhookQueue`). */
export function isWebhookQueue(value: unknown): value is WebhookQueue {
  return typeof value === 'object' && value !== null && typeof (value as WebhookQueue).enqueue === 'function';
}

/**
 * True when `value` has the shape of a `QueuedDelivery` (an engine checks a job's data with it
 * before running it: a job written by something else is failed, not run).
 */
export function isQueuedDelivery(value: unknown): value is QueuedDelivery {
  if (typeof value !== 'object' || value === null) return false;
  const { event, deliveryId, timestamp } = value as Record<string, unknown>;
  if (typeof event !== 'object' || event === null) return false;
  const { id, type } = event as Record<string, unknown>;
  return (
    typeof id === 'string' &&
    typeof type === 'string' &&
    typeof deliveryId === 'string' &&
    typeof timestamp === 'number' &&
    Number.isFinite(timestamp)
  );
}
