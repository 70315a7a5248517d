import {
  type DeadLetter as CoreDeadLetter,
  type DeadLetterListOptions,
  type DeadLetterSource,
  deliveryKey,
  isQueuedDelivery,
  type QueuedDelivery,
  type WebhookQueue,
} from '@pixhook/core';
import { type ConnectionOptions, type Job, Queue } from 'bullmq';
import { deliveryJobId, jobIdFor } from './job-id.js';
import {
  type BullMQQueueOptions,
  type ResolvedQueueOptions,
  resolveQueueOptions,
  resolveWorkerOptions,
  type WorkerOptions,
} from './options.js';
import { ReplicaAcks, type ReplicaClient } from './replicas.js';
import { type ProcessingWebhooks, type QueueWorker, startWorker } from './worker.js';

/**
 * An event whose job ran out of attempts (or was lost too often, or failed for good: a handler's
 * schema refused the event), kept until retried or discarded. Its `jobId` is the BullMQ job id:
 * the delivery's key (`deliveryKey`: the event id, or `<tenant>/<event id>` with secrets per
 * tenant, and `#<handler id>` after it for the job of a named handler, whose `delivery.handler`
 * says which), or `sha256-…` of an odd one.
 */
export type DeadLetter = CoreDeadLetter;

/** Which dead letters to list. */
export type ListOptions = DeadLetterListOptions;

/**
 * How many jobs of the queue are in each state (`queue.counts()`), as BullMQ keeps them in Redis.
 * The same shape as `@pixhook/pg-boss`'s, so a metrics reader (`@pixhook/opentelemetry`) takes either.
 */
export interface QueueCounts {
  /**
   * Jobs ready to run, waiting for a free worker (BullMQ's `waiting`, also while the queue is
   * paused, and `prioritized`, which pixhook's own jobs do not use).
   */
  readonly waiting: number;
  /** Jobs a worker is running now (BullMQ's `active`). */
  readonly active: number;
  /** Jobs waiting for their retry's backoff to pass before they are ready again (BullMQ's `delayed`). */
  readonly delayed: number;
  /** Dead letters: jobs out of attempts, kept until retried or discarded (BullMQ's `failed`; what `countDeadLetters()` counts). */
  readonly deadLetter: number;
}

function isRedisInstance(connection: ConnectionOptions): boolean {
  const client = connection as Record<string, unknown>;
  return ['connect', 'disconnect', 'duplicate'].every((name) => typeof client[name] === 'function');
}

/**
 * Reconnection delays to Redis, in ms, when the connection options give no `retryStrategy`:
 * 100 ms, 200 ms … then every second. BullMQ's own default backs off exponentially up to 20 s, so
 * after an outage of a dozen seconds the queue went on answering 503 for about 6 s more.
 */
function reconnectDelayMs(attempt: number): number {
  return Math.min(attempt * 100, 1_000);
}

/** The options form of a connection, with pixhook's defaults under what it gives; an instance is left alone. */
function connectionWithDefaults(connection: ConnectionOptions, extra: Record<string, unknown> = {}): ConnectionOptions {
  if (isRedisInstance(connection)) return connection;
  return { retryStrategy: reconnectDelayMs, ...extra, ...connection } as ConnectionOptions;
}

function deadLetterOf(job: Job): DeadLetter {
  const data: unknown = job.data;
  return {
    jobId: String(job.id),
    delivery: isQueuedDelivery(data) ? data : undefined,
    attemptsMade: job.attemptsMade,
    queuedAt: job.timestamp,
    failedAt: job.finishedOn,
    error: job.failedReason ?? '',
    stack: job.stacktrace?.at(-1) ?? undefined,
  };
}

/**
 * Queued processing on BullMQ (Redis): give it to `new Webhooks({ queue })` and every adapter
 * answers a verified delivery 202 once Redis has stored it, keyed on the event id; start workers
 * with `queue.startWorker(webhooks)` in this process or others. Failed runs are retried with
 * backoff; an event out of attempts is kept as a dead letter, to list, retry or discard here or
 * with `pixhook dead-letters`.
 *
 * @example
 * const queue = new BullMQQueue({ connection: { url: process.env.REDIS_URL } })
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, queue })
 * webhooks.on('image.created', async (event, { job }) => makeThumbnails(event.data.object))
 * app.post('/webhooks', webhookMiddleware(webhooks))
 * const worker = queue.startWorker(webhooks, { concurrency: 4 })
 */
export class BullMQQueue implements WebhookQueue, DeadLetterSource {
  readonly #options: ResolvedQueueOptions;
  readonly #queue: Queue;
  readonly #workers = new Set<QueueWorker>();
  /** Confirms each job on `waitForReplicas` replicas before its 202; undefined when 0. */
  readonly #acks: ReplicaAcks | undefined;

  constructor(options: BullMQQueueOptions) {
    this.#options = resolveQueueOptions(options);
    const { connection, name, prefix, attempts, backoff, keepCompletedMs } = this.#options;
    this.#queue = new Queue(name, {
      // Without an offline queue a write fails at once while Redis is down (503, the service
      // retries) instead of waiting in memory for a reconnection that may come too late.
      connection: connectionWithDefaults(connection, { enableOfflineQueue: false }),
      prefix,
      defaultJobOptions: {
        attempts,
        backoff,
        removeOnComplete: { age: Math.ceil(keepCompletedMs / 1000) },
        removeOnFail: false,
      },
    });
    // Connection errors reach the writes that fail (503, told to onError); unheard, the 'error'
    // event would crash the process.
    this.#queue.on('error', () => {});
    const { waitForReplicas, enqueueTimeoutMs } = this.#options;
    this.#acks =
      waitForReplicas > 0
        ? new ReplicaAcks(
            // The ioredis client that wrote the jobs (BullMQ's wrapper of it): WAIT counts its writes.
            async () => await (this.#queue.getBackend() as unknown as { client: Promise<ReplicaClient> }).client,
            waitForReplicas,
            // Within the enqueue's deadline, so that the 503's cause told to onError is this one.
            Math.max(1, Math.floor(enqueueTimeoutMs * 0.75)),
          )
        : undefined;
  }

  /** What `console.log(queue)` shows; never the connection (it may hold a password). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    const { name, prefix, attempts } = this.#options;
    return `BullMQQueue { name: ${name}, prefix: ${prefix}, attempts: ${attempts}, workers: ${this.#workers.size} }`;
  }

  /** The engine's name, `'bullmq'`: what traces and metrics (`@pixhook/opentelemetry`) call it. */
  get engine(): 'bullmq' {
    return 'bullmq';
  }

  /** The BullMQ queue's name (the `name` option), for traces and metrics. */
  get queueName(): string {
    return this.#options.name;
  }

  /** The BullMQ `Queue` underneath, for its events, metrics and dashboards. */
  get bullQueue(): Queue {
    return this.#queue;
  }

  /**
   * Longest wait for Redis to confirm a delivery's write, in ms (the `enqueueTimeoutMs` option):
   * `webhooks.handle()` answers 503 past it, on core's shared deadline timers.
   */
  get enqueueTimeoutMs(): number {
    return this.#options.enqueueTimeoutMs;
  }

  /**
   * Writes a verified delivery as a job whose id is the event's key (`jobIdFor(deliveryKey(delivery))`:
   * the event id, scoped by tenant with secrets per tenant), and resolves once Redis has confirmed
   * it. A job of that id already there (waiting, running, done within
   * `keepCompletedMs`, or a dead letter) means nothing is added. `webhooks.handle()` calls it and
   * bounds it by `enqueueTimeoutMs`; you do not need to.
   */
  async enqueue(delivery: QueuedDelivery): Promise<void> {
    const jobId = deliveryJobId(deliveryKey(delivery), delivery.replay);
    await this.#queue.add(delivery.event.type, delivery, { jobId });
    // waitForReplicas: the job is on a replica too before the 202 (BullMQ's key of the job).
    await this.#acks?.confirm(`${this.#options.prefix}:${this.#options.name}:${jobId}`);
  }

  /**
   * Starts a worker that runs `webhooks`' handlers (registered with `on` / `onAny`) for each job,
   * here or in another process with the same queue options. Call `close()` on it at shutdown.
   * An event's job runs its unnamed handlers and writes one job per named handler
   * (`on(type, { id }, handler)`) to this queue, with the id `<event key>#<handler id>`, its own
   * attempts and its own dead letter; that job runs that handler alone. Handlers with an ordering
   * guard need a store on `webhooks` (`new Webhooks({ queue, store: new RedisStore(redis) })`): it
   * keeps the newest version seen per key, decided when the job runs.
   * @example
   * const worker = queue.startWorker(webhooks, { concurrency: 8 })
   * process.on('SIGTERM', () => worker.close())
   */
  startWorker(webhooks: ProcessingWebhooks, options?: WorkerOptions): QueueWorker {
    if (typeof webhooks?.process !== 'function' || typeof webhooks.reportError !== 'function') {
      throw new TypeError('pixhook: queue.startWorker(webhooks) needs the Webhooks whose handlers the worker runs.');
    }
    const resolved = resolveWorkerOptions(options);
    const connection = connectionWithDefaults(resolved.connection ?? this.#options.connection);
    const worker = startWorker(webhooks, this.#options, resolved, connection, this, () => this.#workers.delete(worker));
    this.#workers.add(worker);
    return worker;
  }

  /** Dead letters, newest first. */
  async listDeadLetters(options: ListOptions = {}): Promise<DeadLetter[]> {
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(limit) || limit < 1) {
      throw new TypeError(
        'pixhook: listDeadLetters({ offset, limit }): offset must be ≥ 0 and limit ≥ 1, whole numbers.',
      );
    }
    const jobs = await this.#queue.getFailed(offset, offset + limit - 1);
    return jobs.filter((job): job is Job => job !== undefined && job !== null).map(deadLetterOf);
  }

  /** How many dead letters there are. */
  countDeadLetters(): Promise<number> {
    return this.#queue.getFailedCount();
  }

  /**
   * How many jobs are waiting, running, delayed for a retry's backoff, and dead letters, read in
   * one Redis round trip (one script): for a dashboard or a metrics gauge. Rejects while Redis is
   * unreachable.
   * @example
   * const { waiting, deadLetter } = await queue.counts()
   */
  async counts(): Promise<QueueCounts> {
    const counts = await this.#queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
    const count = (state: string) => Number(counts[state] ?? 0);
    return {
      waiting: count('waiting') + count('prioritized'),
      active: count('active'),
      delayed: count('delayed'),
      deadLetter: count('failed'),
    };
  }

  /**
   * One dead letter, by job id or key (the event id, or `<tenant>/<event id>` with secrets per
   * tenant: `eventKey(eventId, tenant)`; for the job of a named handler, `#<handler id>` after it:
   * `'evt_1#billing'`); undefined when there is no such dead letter.
   */
  async getDeadLetter(id: string): Promise<DeadLetter | undefined> {
    const job = await this.#failedJob(id);
    return job && deadLetterOf(job);
  }

  /**
   * Runs a dead letter again, with all its attempts and backoff anew. Resolves `false` when there is
   * no such dead letter.
   */
  async retryDeadLetter(id: string): Promise<boolean> {
    const job = await this.#failedJob(id);
    if (!job) return false;
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return true;
  }

  /**
   * Deletes a dead letter for good: the event is never run, and a later delivery of its id would
   * be queued anew. Resolves `false` when there is no such dead letter.
   */
  async discardDeadLetter(id: string): Promise<boolean> {
    const job = await this.#failedJob(id);
    if (!job) return false;
    await job.remove();
    return true;
  }

  /** Runs every dead letter again; resolves how many. */
  async retryAllDeadLetters(): Promise<number> {
    return this.#eachDeadLetter((job) => job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true }));
  }

  /** Deletes every dead letter; resolves how many. */
  async discardAllDeadLetters(): Promise<number> {
    return this.#eachDeadLetter((job) => job.remove());
  }

  /** Closes the workers started here and the queue's connection. */
  async close(): Promise<void> {
    await Promise.all([...this.#workers].map((worker) => worker.close()));
    await this.#queue.close();
  }

  async #failedJob(id: string): Promise<Job | undefined> {
    if (typeof id !== 'string' || id === '') {
      throw new TypeError(
        'pixhook: a dead letter is named by its job id or key (the event id, or <tenant>/<event id> with secrets per tenant, and #<handler id> after it for a named handler), a non-empty string.',
      );
    }
    for (const jobId of new Set([id, jobIdFor(id)])) {
      if (jobId.includes(':')) continue;
      const job = await this.#queue.getJob(jobId);
      if (job && (await job.isFailed())) return job;
    }
    return undefined;
  }

  /** Applies `act` to every dead letter, a page at a time (each leaves the failed set). */
  async #eachDeadLetter(act: (job: Job) => Promise<unknown>): Promise<number> {
    let done = 0;
    for (;;) {
      const page = (await this.#queue.getFailed(0, 99)).filter((job): job is Job => Boolean(job));
      if (page.length === 0) return done;
      let moved = 0;
      for (const job of page) {
        try {
          await act(job);
          moved++;
        } catch {
          // Gone or moved meanwhile (another operator, a worker): nothing left to do for it.
        }
      }
      done += moved;
      if (moved === 0) return done;
    }
  }
}
