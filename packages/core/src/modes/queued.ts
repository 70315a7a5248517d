// Queued mode: in the request, the write of a verified delivery to the queue (enqueue); in a
// worker, the run of a queued delivery's handlers (processQueued).
import { WebhookVerificationError } from '../protocol/errors.js';
import { eventKey, handlerKey } from '../protocol/event-key.js';
import type { SecretMatch } from '../protocol/secrets.js';
import type { ArchivedRun, WebhookArchive } from '../seams/archive.js';
import { type AnyHandler, type ErrorContext, type HandlerContext, handlerId, type Ordering } from '../seams/context.js';
import {
  callHandler,
  type DeliveryMessage,
  type EnqueueMessage,
  enqueueChannel,
  type JobMessage,
  jobChannel,
  traceSkipped,
  traceStep,
} from '../seams/diagnostics.js';
import { isQueuedDelivery, type QueuedDelivery, type QueuedRun, type WebhookQueue } from '../seams/queue.js';
import { isSchemaMismatch } from '../seams/schema.js';
import type { IdempotencyStore } from '../seams/store.js';
import {
  commitFailed,
  commitReadBack,
  type EventTransactions,
  type OpenEvent,
  rollbackFailed,
} from '../seams/transactions.js';
import { cancelDeadline, setDeadline } from '../util/deadlines.js';
import { describeFailure, timedCall, writeEntry } from './archiving.js';
import { type Decisions, type MarkKeeper, orderingOf, shouldRun } from './ordering.js';
import { type Outcome, QUEUED } from './outcome.js';
import { beginEvent } from './store-protocol.js';

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
    /** Where each job's run is archived; undefined: nowhere. */
    readonly archive?: WebhookArchive | undefined;
    /** Workers: where the ordering guard's marks are kept (outside transactional mode). */
    readonly store?: IdempotencyStore | false;
    /** The ordering guard for every handler; undefined: none. */
    readonly ordering?: Ordering | undefined;
    readonly now: () => number;
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
  // Rounded down to 10 ms: deadlines are grouped by duration (util/deadlines.ts).
  const left = Math.max(1, Math.floor((budget - (performance.now() - startedAt)) / 10) * 10);
  return own !== undefined && own.ms <= left ? own : { ms: left, option: 'what was left of deliveryTimeoutMs' };
}

/**
 * Queued mode, in the request: writes the verified delivery to the queue; `queued` once the engine
 * confirmed it (the pipeline answers 202), `rejected` with 503 `QUEUE_UNAVAILABLE` (told to
 * `onError`) when it failed, or did not confirm within the queue's `enqueueTimeoutMs` (or
 * `handlerTimeoutMs`, the shorter). Never rejects. A write that completes after the 503 is
 * harmless: the service's retry finds the job and is answered 202 without a second one.
 */
export function enqueue(
  host: QueueHost,
  queue: WebhookQueue,
  delivery: QueuedDelivery,
  request: unknown,
  startedAt = performance.now(),
  trace?: DeliveryMessage,
): Promise<Outcome> {
  if (!enqueueChannel.hasSubscribers) return write(host, queue, delivery, request, startedAt, undefined);
  const { event, deliveryId } = delivery;
  const message: EnqueueMessage = {
    eventType: event.type,
    eventId: event.id,
    deliveryId,
    // Read as given: a queue written by hand may set anything there.
    engine: typeof queue.engine === 'string' ? queue.engine : undefined,
    queueName: typeof queue.queueName === 'string' ? queue.queueName : undefined,
    parent: trace,
  };
  return traceStep(enqueueChannel, message, () => write(host, queue, delivery, request, startedAt, message));
}

/** The write itself; with a trace, the trace context its subscriber set is stored with the delivery. */
function write(
  host: QueueHost,
  queue: WebhookQueue,
  delivery: QueuedDelivery,
  request: unknown,
  startedAt: number,
  message: EnqueueMessage | undefined,
): Promise<Outcome> {
  const { event, deliveryId, timestamp } = delivery;
  const refuse = (error: WebhookVerificationError): Outcome => {
    host.reportError(error, { request, deliveryId, timestamp, event });
    // The trace's step ends in an error: the write was not confirmed.
    if (message) message.error = error;
    return { kind: 'rejected', error };
  };
  const stored = storedDelivery(delivery, message?.traceContext);
  // A queue that throws synchronously, or returns something that is not a promise, is handled alike.
  const written = new Promise((resolve) => resolve(queue.enqueue(stored)));
  const limit = writeDeadline(host.options, startedAt);
  return new Promise<Outcome>((resolve) => {
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
        if (!answered) resolve(QUEUED);
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
export function processQueued(
  host: QueueHost,
  delivery: QueuedDelivery,
  job: QueuedRun,
  jobs?: Pick<WebhookQueue, 'enqueue'>,
): Promise<void> {
  if (!isQueuedDelivery(delivery)) {
    return Promise.reject(new TypeError('pixhook: process(delivery, job): delivery is not a queued pixhook delivery.'));
  }
  if (!jobChannel.hasSubscribers) return runQueued(host, delivery, job, undefined, jobs);
  const message: JobMessage = {
    eventType: delivery.event.type,
    eventId: delivery.event.id,
    deliveryId: delivery.deliveryId,
    job,
    traceContext: storedTraceContext(delivery.traceContext),
  };
  return traceStep(jobChannel, message, () => runQueued(host, delivery, job, message, jobs));
}

/**
 * What one job runs: the job of a named handler, that handler alone (an error when this worker has
 * none of that id: the job fails and is retried, a deploy may bring it back); an event's job, its
 * unnamed handlers, the named ones being written as jobs of their own when the engine can (`jobs`),
 * else run with the others.
 */
function jobHandlers(
  all: readonly AnyHandler[],
  delivery: QueuedDelivery,
  jobs: Pick<WebhookQueue, 'enqueue'> | undefined,
): { handlers: readonly AnyHandler[]; own: string | undefined; fanOut: string[] } {
  const own = typeof delivery.handler === 'string' ? delivery.handler : undefined;
  if (own !== undefined) {
    const one = all.find((handler) => handlerId(handler) === own);
    const missing: AnyHandler = () => {
      throw new Error(
        `pixhook: this worker has no handler with id ${JSON.stringify(own.slice(0, 64))} for ${delivery.event.type}; the job fails, and runs again once a worker has it (or discard its dead letter).`,
      );
    };
    return { handlers: [one ?? missing], own, fanOut: [] };
  }
  const fanOut: string[] = [];
  if (jobs === undefined) return { handlers: all, own, fanOut };
  const handlers = all.filter((handler) => {
    const id = handlerId(handler);
    if (id !== undefined) fanOut.push(id);
    return id === undefined;
  });
  return { handlers, own, fanOut };
}

/**
 * An event's job in a worker: each named handler written as a job of its own (one per handler id,
 * which the engine keeps once: a job run again writes none twice), before the unnamed handlers run.
 * A write that fails fails the event's job, which runs again.
 */
async function writeHandlerJobs(
  jobs: Pick<WebhookQueue, 'enqueue'>,
  delivery: QueuedDelivery,
  ids: readonly string[],
  report: (error: WebhookVerificationError) => void,
): Promise<void> {
  const { event } = delivery;
  const base = storedDelivery(delivery, storedTraceContext(delivery.traceContext));
  try {
    await Promise.all(ids.map((handler) => jobs.enqueue({ ...base, handler })));
  } catch (cause) {
    const error = new WebhookVerificationError(
      'QUEUE_UNAVAILABLE',
      `The jobs of the named handlers of ${event.type} event ${event.id} could not all be written to the queue; the event's job fails and runs again.`,
      { cause },
    );
    report(error);
    throw error;
  }
}

/**
 * What a queue stores of `delivery`: the signed event, the delivery's id and `t`, and what is set of
 * the trace context, the replay, the tenant and the secret that matched; nothing else it may hold.
 */
function storedDelivery(
  delivery: QueuedDelivery,
  traceContext: Readonly<Record<string, string>> | undefined,
): { -readonly [K in keyof QueuedDelivery]: QueuedDelivery[K] } {
  const { event, deliveryId, timestamp, replay, tenant } = delivery;
  const stored: { -readonly [K in keyof QueuedDelivery]: QueuedDelivery[K] } = { event, deliveryId, timestamp };
  if (traceContext !== undefined) stored.traceContext = traceContext;
  if (replay !== undefined) stored.replay = replay;
  if (tenant !== undefined) stored.tenant = tenant;
  const secret = storedSecret(delivery.secret);
  if (secret !== undefined) stored.secret = secret;
  return stored;
}

/** The secret a job says verified its delivery, when it has the shape core wrote; else undefined. */
function storedSecret(value: unknown): SecretMatch | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { index, label } = value as { index?: unknown; label?: unknown };
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0) return undefined;
  return typeof label === 'string' && label.length <= 64 ? { index, label } : { index };
}

/** Most trace context entries read back from a job, and the longest value: it is untrusted storage. */
const TRACE_CONTEXT_ENTRIES = 8;
const TRACE_CONTEXT_CHARACTERS = 512;

/** The trace context stored with a job, if it is one: string values only, bounded. */
function storedTraceContext(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const kept: Record<string, string> = {};
  let entries = 0;
  for (const [key, text] of Object.entries(value)) {
    if (typeof text !== 'string' || key.length > 64 || text.length > TRACE_CONTEXT_CHARACTERS) continue;
    kept[key] = text;
    if (++entries === TRACE_CONTEXT_ENTRIES) break;
  }
  return entries === 0 ? undefined : kept;
}

async function runQueued(
  host: QueueHost,
  delivery: QueuedDelivery,
  job: QueuedRun,
  trace: JobMessage | undefined,
  jobs: Pick<WebhookQueue, 'enqueue'> | undefined,
): Promise<void> {
  const { event, deliveryId, timestamp } = delivery;
  const { handlers, own, fanOut } = jobHandlers(host.handlersFor(event.type), delivery, jobs);
  // Read from the engine's storage: kept only when they have the shapes core wrote.
  const tenant = typeof delivery.tenant === 'string' ? delivery.tenant : undefined;
  const secret = storedSecret(delivery.secret);
  const key = eventKey(event.id, tenant);
  // A named handler's job has its own transaction, as it has its own record inline.
  const runKey = own === undefined ? key : handlerKey(key, own);
  const report = (error: WebhookVerificationError) =>
    host.reportError(error, { request: undefined, deliveryId, timestamp, event, job, tenant, secret });
  const { transactions, archive } = host.options;
  // The job's entry in the archive, once it ends: its runs, timed as they end.
  const runs: ArchivedRun[] | undefined = archive ? [] : undefined;
  const started = performance.now();
  const archived = (result: 'processed' | 'failed' | 'dead-letter', transaction?: unknown, cause?: unknown) =>
    archive
      ? writeEntry(
          archive,
          {
            kind: 'job',
            eventId: key,
            eventType: event.type,
            at: host.options.now(),
            result,
            jobId: job.jobId,
            attempt: job.attempt,
            maxAttempts: job.maxAttempts,
            ms: performance.now() - started,
            runs: runs ? runs.slice() : [],
            ...(cause === undefined ? {} : { error: describeFailure(cause) }),
          },
          report,
          transaction,
        )
      : Promise.resolve(false);
  if (fanOut.length > 0 && jobs !== undefined) await writeHandlerJobs(jobs, delivery, fanOut, report);
  let open: OpenEvent<unknown> | undefined;
  if (transactions !== undefined && handlers.length > 0) {
    const begun = await beginEvent(transactions, runKey, event.type, delivery.replay !== undefined);
    if (begun.kind === 'completed') return;
    if (begun.kind === 'rejected') {
      await archived(job.attempt >= job.maxAttempts ? 'dead-letter' : 'failed', undefined, begun.error);
      report(begun.error);
      throw begun.error;
    }
    open = begun.open;
  }
  const context: HandlerContext = { deliveryId, timestamp, request: undefined, job };
  if (open) context.transaction = open.transaction;
  if (delivery.replay !== undefined) context.replay = true;
  if (tenant !== undefined) context.tenant = tenant;
  if (secret !== undefined) context.secret = secret;
  const rollback = async () => {
    const held = open;
    if (held) {
      await new Promise<void>((resolve) => resolve(held.rollback())).catch((failure: unknown) =>
        report(rollbackFailed(runKey, failure)),
      );
    }
  };
  // A handler skipped by its schema: the others run, then the job fails for good (the same bytes
  // fail the same schema on every attempt), as a dead letter to retry once the schema is fixed.
  let mismatch: WebhookVerificationError | undefined;
  // The ordering guard decides when the job runs: workers may run an event's jobs in any order.
  const marks: MarkKeeper = { store: host.options.store, open };
  const decisions: Decisions = new Map();
  for (let i = 0; i < handlers.length; i++) {
    try {
      const handler = handlers[i] as AnyHandler;
      const ordering = orderingOf(handler, host.options.ordering);
      if (
        ordering !== undefined &&
        !(await shouldRun(ordering, event, tenant, marks, decisions, report, handler.name))
      ) {
        traceSkipped(handler, i, event, context, trace);
        continue;
      }
      await (runs
        ? timedCall(runs, handler, i, event, context, trace)
        : callHandler(handler, i, event, context, trace));
    } catch (cause) {
      if (isSchemaMismatch(cause)) {
        report(cause);
        mismatch ??= cause;
        continue;
      }
      await rollback();
      const last = job.attempt >= job.maxAttempts;
      await archived(last ? 'dead-letter' : 'failed', undefined, cause);
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
  if (mismatch) {
    // Transactional: nothing commits, so retrying the dead letter runs every handler again.
    await rollback();
    await archived('dead-letter', undefined, mismatch);
    throw mismatch;
  }
  if (open) {
    // The job's entry commits with the event; a commit that fails is archived after it, as a failure.
    await archived('processed', open.transaction);
    let answer: unknown;
    try {
      answer = await open.commit();
    } catch (cause) {
      const error = commitFailed(runKey, cause);
      await archived(job.attempt >= job.maxAttempts ? 'dead-letter' : 'failed', undefined, error);
      report(error);
      throw error;
    }
    const lost = commitReadBack(runKey, answer);
    if (lost) report(lost);
    return;
  }
  await archived('processed');
}
