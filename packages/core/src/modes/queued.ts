import { accepted, answer } from '../pipeline/answer.js';
import type { AnyHandler, ErrorContext, HandlerContext } from '../seams/context.js';
import { cancelDeadline, setDeadline } from '../util/deadlines.js';
import { WebhookVerificationError } from '../protocol/errors.js';
import type { AnyEvent } from '../protocol/events.js';
import type { WebhookResponse } from '../seams/handle-input.js';
import { beginEvent } from './store-protocol.js';
import {
  commitFailed,
  commitReadBack,
  type EventTransactions,
  type OpenEvent,
  rollbackFailed,
} from '../seams/transactions.js';

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
}

/**
 * Queued processing, the seam between pixhook and a durable queue engine (`@pixhook/bullmq`,
 * `@pixhook/postgres`' pg-boss queue). With `new Webhooks({ queue })` every adapter answers a
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
   * Stores `delivery` durably, keyed on `delivery.event.id`, and resolves once the engine has
   * confirmed the write. An id already stored (queued, running, done or dead-lettered) resolves
   * too, without a second job. Rejecting answers 503 `QUEUE_UNAVAILABLE`, and the service retries.
   */
  enqueue(delivery: QueuedDelivery): Promise<unknown>;
  /**
   * Optional. Longest wait for `enqueue` to confirm, in ms: core answers 503 `QUEUE_UNAVAILABLE`
   * past it (or past `handlerTimeoutMs`, when that is shorter), on its shared deadline timers, so an
   * engine needs no timer of its own per delivery.
   */
  readonly enqueueTimeoutMs?: number;
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
}

/**
 * An event whose job ran out of attempts, kept by its queue engine until retried or discarded
 * (`listDeadLetters()` of `@pixhook/bullmq` and of `@pixhook/postgres`' pg-boss queue). Every string
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

/** What the queued paths need from a `Webhooks`. */
export interface QueueHost {
  readonly options: {
    readonly queue: WebhookQueue | undefined;
    /** How long a write to the queue may take, and the option that says so; undefined: no limit. */
    readonly enqueueDeadline: { readonly ms: number; readonly option: string } | undefined;
    /** The budget of a whole delivery, from the call of `handle()`; undefined: none. */
    readonly deliveryTimeoutMs?: number | undefined;
    /** Transactional mode: the worker runs each job's handlers in the event's transaction. */
    readonly transactions: EventTransactions | undefined;
  };
  handlersFor(type: string): readonly AnyHandler[];
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

/** The write deadline: the queue's own, or what is left of the delivery's budget if that is shorter. */
function writeDeadline(
  options: QueueHost['options'],
  startedAt: number,
): { readonly ms: number; readonly option: string } | undefined {
  const own = options.enqueueDeadline;
  const budget = options.deliveryTimeoutMs;
  if (budget === undefined) return own;
  // Rounded down to 10 ms: deadlines are grouped by duration (deadlines.ts).
  const left = Math.max(1, Math.floor((budget - (performance.now() - startedAt)) / 10) * 10);
  return own !== undefined && own.ms <= left ? own : { ms: left, option: 'what was left of deliveryTimeoutMs' };
}

/**
 * Queued mode, in the request: writes the verified delivery to the queue and answers 202 once the
 * engine confirmed it; 503 `QUEUE_UNAVAILABLE` when it failed, or did not confirm within the
 * queue's `enqueueTimeoutMs` (or `handlerTimeoutMs`, the shorter). Never rejects. A write that completes after the 503 is harmless: the
 * service's retry finds the job and is answered 202 without a second one.
 */
export function enqueueAndAnswer(
  host: QueueHost,
  queue: WebhookQueue,
  delivery: QueuedDelivery,
  request: unknown,
  startedAt = performance.now(),
): Promise<WebhookResponse> {
  const { event, deliveryId, timestamp } = delivery;
  const refuse = (error: WebhookVerificationError): WebhookResponse => {
    host.reportError(error, { request, deliveryId, timestamp, event });
    return answer(error);
  };
  // A queue that throws synchronously, or returns something that is not a promise, is handled alike.
  const written = new Promise((resolve) => resolve(queue.enqueue({ event, deliveryId, timestamp })));
  const limit = writeDeadline(host.options, startedAt);
  return new Promise<WebhookResponse>((resolve) => {
    let answered = false;
    const deadline =
      limit === undefined
        ? undefined
        : setDeadline(limit.ms, () => {
            answered = true;
            resolve(
              refuse(
                new WebhookVerificationError(
                  'QUEUE_UNAVAILABLE',
                  `The queue did not confirm the event within ${limit.option} (${limit.ms} ms), so it was not acknowledged; the service will retry.`,
                ),
              ),
            );
          });
    written.then(
      () => {
        if (deadline) cancelDeadline(deadline);
        if (!answered) resolve(accepted());
      },
      (cause: unknown) => {
        if (deadline) cancelDeadline(deadline);
        if (answered) return;
        resolve(
          refuse(
            new WebhookVerificationError(
              'QUEUE_UNAVAILABLE',
              'The queue could not store the event, so it was not acknowledged; the service will retry.',
              { cause },
            ),
          ),
        );
      },
    );
  });
}

/**
 * Queued mode, in a worker: runs the handlers of a queued delivery one after another, with
 * `context.job` set and `context.request` undefined. Rejects with the first handler's own error
 * (the engine keeps it as the job's last error), after telling `onError` (`HANDLER_FAILED`).
 *
 * In transactional mode the handlers run in the event's transaction, as in the request: an event
 * already committed resolves without running them (a job run again after its worker died past the
 * commit), and one whose transaction is open elsewhere, or a failed commit, rejects so the engine
 * runs the job again later.
 */
export async function processQueued(host: QueueHost, delivery: QueuedDelivery, job: QueuedRun): Promise<void> {
  if (!isQueuedDelivery(delivery)) {
    throw new TypeError('pixhook: process(delivery, job): delivery is not a queued pixhook delivery.');
  }
  const { event, deliveryId, timestamp } = delivery;
  const handlers = host.handlersFor(event.type);
  const report = (error: WebhookVerificationError) =>
    host.reportError(error, { request: undefined, deliveryId, timestamp, event, job });
  const transactions = host.options.transactions;
  let open: OpenEvent<unknown> | undefined;
  if (transactions !== undefined && handlers.length > 0) {
    const begun = await beginEvent(transactions, event.id);
    if (begun.kind === 'completed') return;
    if (begun.kind === 'rejected') {
      report(begun.error);
      throw begun.error;
    }
    open = begun.open;
  }
  const context: HandlerContext = { deliveryId, timestamp, request: undefined, job };
  if (open) context.transaction = open.transaction;
  for (const handler of handlers) {
    try {
      await handler(event, context);
    } catch (cause) {
      const held = open;
      if (held) {
        await new Promise<void>((resolve) => resolve(held.rollback())).catch((failure: unknown) =>
          report(rollbackFailed(event.id, failure)),
        );
      }
      const last = job.attempt >= job.maxAttempts;
      report(
        new WebhookVerificationError(
          'HANDLER_FAILED',
          `A handler for ${event.type} failed on attempt ${job.attempt} of ${job.maxAttempts}; ${
            last
              ? 'no attempts remain, so the job is kept as a dead letter to retry or discard.'
              : 'the queue will run the event again after its backoff.'
          }`,
          { cause },
        ),
      );
      throw cause;
    }
  }
  if (open) {
    let answer: unknown;
    try {
      answer = await open.commit();
    } catch (cause) {
      const error = commitFailed(event.id, cause);
      report(error);
      throw error;
    }
    const lost = commitReadBack(event.id, answer);
    if (lost) report(lost);
  }
}
