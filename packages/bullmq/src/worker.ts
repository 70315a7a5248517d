import {
  type ErrorContext,
  isFinalFailure,
  isQueuedDelivery,
  type QueuedDelivery,
  type QueuedRun,
  type WebhookQueue,
  WebhookVerificationError,
} from '@pixhook/core';
import { type ConnectionOptions, Job, UnrecoverableError, Worker } from 'bullmq';
import type { ResolvedQueueOptions, ResolvedWorkerOptions } from './options.js';

/**
 * What a worker needs from a `Webhooks`: `process()` runs the handlers of a queued delivery (given
 * the queue, an event's job writes one job per named handler), `reportError()` tells `onError`.
 * Structural, so a `Webhooks` from another copy of `@pixhook/core` fits too.
 */
export interface ProcessingWebhooks {
  process(delivery: QueuedDelivery, job: QueuedRun, options?: { queue?: Pick<WebhookQueue, 'enqueue'> }): Promise<void>;
  reportError(error: WebhookVerificationError, context: ErrorContext<undefined>): void;
}

/** A running worker: `close()` it on shutdown. */
export interface QueueWorker {
  /** Handlers (jobs) running on this worker now. */
  readonly running: number;
  /**
   * Stops taking jobs and waits for the running ones, up to `shutdownTimeoutMs`; then lets go of
   * the rest (they run again on another worker once their lock expires). Resolves `true` when every
   * running job finished. Safe to call more than once.
   */
  close(): Promise<boolean>;
  /** The BullMQ `Worker` underneath, for its events and metrics. */
  readonly bullWorker: Worker;
}

/** Connection errors repeat on every reconnection attempt: tell `onError` at most this often. */
const ERROR_REPORT_INTERVAL_MS = 10_000;

function asError(cause: unknown): Error {
  if (cause instanceof Error) return cause;
  const what =
    cause === null || cause === undefined ? String(cause) : `a ${typeof cause} (${String(cause).slice(0, 200)})`;
  return new Error(`A handler threw ${what} instead of an Error.`);
}

/** BullMQ's error that fails a job without further attempts, with `failure`'s message, stack and itself as cause. */
function finalFailure(failure: Error): UnrecoverableError {
  const error = new UnrecoverableError(failure.message);
  error.cause = failure;
  // The dead letter's stack is the failure's own (where core found it), not this line's.
  if (typeof failure.stack === 'string') error.stack = failure.stack;
  return error;
}

/** What a handler sees as `context.job` for a run of `job` (the run it is about to start, or the one it lost). */
function runOf(job: Job): QueuedRun {
  return {
    engine: 'bullmq',
    jobId: String(job.id),
    attempt: job.attemptsMade + 1,
    maxAttempts: job.opts.attempts ?? 1,
    queuedAt: job.timestamp,
    queueName: job.queueName,
  };
}

/** `onError`'s context for a job (read from Redis; undefined when it could not be): its event and run. */
function contextOf(job: Job | undefined): ErrorContext<undefined> {
  if (!job) return { request: undefined };
  const delivery: unknown = job.data;
  if (!isQueuedDelivery(delivery)) return { request: undefined, job: runOf(job) };
  const { event, deliveryId, timestamp, tenant } = delivery;
  const context: ErrorContext<undefined> = { request: undefined, deliveryId, timestamp, event, job: runOf(job) };
  // Read from Redis: kept only when it has the shape core wrote.
  if (typeof tenant === 'string') context.tenant = tenant;
  return context;
}

/**
 * Starts a BullMQ worker that runs `webhooks`' handlers for each job of the queue; `jobs` is that
 * queue, where an event's job writes the jobs of its named handlers.
 */
export function startWorker(
  webhooks: ProcessingWebhooks,
  queue: ResolvedQueueOptions,
  options: ResolvedWorkerOptions,
  connection: ConnectionOptions,
  jobs: Pick<WebhookQueue, 'enqueue'>,
  onClosed: () => void,
): QueueWorker {
  let running = 0;
  // Errors thrown by the handlers were told to onError by process(); the rest are told here.
  const fromHandlers = new WeakSet<Error>();
  const report = (error: WebhookVerificationError, context: ErrorContext<undefined> = { request: undefined }) => {
    try {
      webhooks.reportError(error, context);
    } catch {
      // A broken logger must not stop the worker.
    }
  };

  const processor = async (job: Job) => {
    const delivery: unknown = job.data;
    if (!isQueuedDelivery(delivery)) {
      const error = new UnrecoverableError(
        'pixhook: this job does not hold a pixhook delivery (was it added by something else?); it was failed without running handlers.',
      );
      fromHandlers.add(error);
      report(new WebhookVerificationError('INTERNAL_ERROR', error.message.replace(/^pixhook: /, '')));
      throw error;
    }
    running++;
    try {
      // The job's data whole: the event, and the tenant and secret core stored with it (and the
      // handler, for the job of a named handler: that handler alone runs). An event's job writes
      // one job per named handler to this queue, each with its own attempts and dead letter.
      await webhooks.process(delivery, runOf(job), { queue: jobs });
    } catch (cause) {
      // A failure no attempt can mend (a handler's schema refused the event: the same bytes fail
      // the same way every time) ends the job at once, as a dead letter, whatever attempts remain.
      const error = isFinalFailure(cause) ? finalFailure(cause as Error) : asError(cause);
      fromHandlers.add(error);
      throw error;
    } finally {
      running--;
    }
  };

  const bullWorker = new Worker(queue.name, processor, {
    connection,
    prefix: queue.prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: options.maxStalledCount,
  });

  let lastErrorReport = Number.NEGATIVE_INFINITY;
  bullWorker.on('error', (cause) => {
    const now = Date.now();
    if (now - lastErrorReport < ERROR_REPORT_INTERVAL_MS) return;
    lastErrorReport = now;
    report(
      new WebhookVerificationError(
        'QUEUE_UNAVAILABLE',
        'The queue worker lost Redis or a Redis command failed; it reconnects and goes on (further errors within 10 s are not repeated).',
        { cause },
      ),
    );
  });
  // BullMQ's 'stalled' gives the job's id only: the job is read from Redis, so that onError gets
  // the event and context.job as for any other failure in a worker.
  bullWorker.on('stalled', (jobId) => {
    const lost = (job: Job | undefined) =>
      report(
        new WebhookVerificationError(
          'JOB_STALLED',
          `Job ${jobId} was lost by the worker running it (the process stopped, or blocked its event loop past lockDurationMs); it runs again, or becomes a dead letter after maxStalledCount losses.`,
        ),
        contextOf(job),
      );
    Job.fromId(bullWorker, jobId).then(lost, () => lost(undefined));
  });
  bullWorker.on('failed', (job, cause) => {
    if (fromHandlers.has(cause)) return;
    report(
      new WebhookVerificationError(
        'JOB_STALLED',
        `Job ${job?.id ?? '(unknown)'} failed outside its handlers; it is kept as a dead letter to retry or discard.`,
        { cause },
      ),
      contextOf(job),
    );
  });

  let closing: Promise<boolean> | undefined;
  return {
    get running() {
      return running;
    },
    bullWorker,
    close() {
      closing ??= (async () => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const finished = await Promise.race([
          bullWorker.close().then(
            () => true,
            () => true,
          ),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), options.shutdownTimeoutMs);
          }),
        ]);
        clearTimeout(timer);
        if (!finished) {
          // Stop renewing the locks of the handlers still running: their jobs run again elsewhere.
          await Promise.resolve(bullWorker.disconnect()).catch(() => {});
        }
        onClosed();
        return finished;
      })();
      return closing;
    },
  };
}
