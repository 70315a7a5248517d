import {
  type ErrorContext,
  isFinalFailure,
  isQueuedDelivery,
  type QueuedRun,
  type WebhookQueue,
  WebhookVerificationError,
} from '@pixhook/core';
import { Batcher } from './batcher.js';
import type { ResolvedPgBossQueueOptions, ResolvedPgBossWorkerOptions } from './options.js';
import type { PgBossStatements } from './sql.js';
import type { PgBossFetchedJob, PgBossLike, PgBossWorker, ProcessingWebhooks } from './types.js';

/** What a worker needs from its queue. */
export interface WorkerHost {
  readonly boss: PgBossLike;
  readonly options: ResolvedPgBossQueueOptions;
  readonly statements: PgBossStatements;
  /** The queue itself: where an event's job writes the jobs of its named handlers. */
  readonly jobs: Pick<WebhookQueue, 'enqueue'>;
  /** The Postgres channel notified when the queue's jobs are queued. */
  readonly channel: string;
  /** Resolves once the queue exists and pg-boss's schema was found; rejects with why not. */
  ready(): Promise<void>;
  /** Runs a statement on the boss's database; rejects when the boss is not started. */
  sql(text: string, values: unknown[]): Promise<unknown[]>;
  /** Runs a statement prepared once per connection; resolves undefined when the boss is not started. */
  prepared(text: string, values: unknown[]): Promise<unknown[] | undefined>;
}

/** A worker, with what its queue calls on it. */
export interface StartedWorker extends PgBossWorker {
  /** Asks for jobs now instead of at the end of the polling interval (a job was just queued here). */
  wake(): void;
}

/** Connection errors repeat on every poll and maintenance run: tell `onError` at most this often. */
const ERROR_REPORT_INTERVAL_MS = 10_000;
/** Retries of a job's outcome that Postgres did not take (it was away), then it is left to expire. */
const SETTLE_DELAYS_MS = [250, 1_000, 2_000, 4_000];
/** What pg-boss's maintenance writes into a job it failed because it stayed active past its expiration. */
export const EXPIRED_MESSAGE = 'job failed by timeout in active state';
/** What a worker writes into the jobs it lets go of when `close()` gives up waiting. */
export const LET_GO_MESSAGE =
  'pixhook: the worker closed (shutdownTimeoutMs) before this job’s handler finished; pg-boss runs it again.';
/** Longest message or stack kept in a failed job's output. */
const MAX_TEXT = 8_000;

function asError(cause: unknown): Error {
  if (cause instanceof Error) return cause;
  const what =
    cause === null || cause === undefined ? String(cause) : `a ${typeof cause} (${String(cause).slice(0, 200)})`;
  return new Error(`A handler threw ${what} instead of an Error.`);
}

/**
 * What a failed run leaves in the job (pg-boss's `output`): the error's name, message and stack,
 * capped, and nothing else (an error's own properties, such as a driver's query details, stay out).
 */
function outputOf(error: Error): { name: string; message: string; stack?: string } {
  const output = { name: String(error.name).slice(0, 200), message: String(error.message).slice(0, MAX_TEXT) };
  return typeof error.stack === 'string' ? { ...output, stack: error.stack.slice(0, MAX_TEXT) } : output;
}

/** The message of a failed job's `output`, as pg-boss or a worker wrote it; '' when there is none. */
export function messageOf(output: unknown): string {
  if (typeof output !== 'object' || output === null) return typeof output === 'string' ? output : '';
  const { message, value } = output as { message?: unknown; value?: unknown };
  if (typeof message === 'string') return message;
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) {
    const inner = (value as { message?: unknown }).message;
    if (typeof inner === 'string') return inner;
  }
  return '';
}

function millis(value: unknown): number {
  const time = value instanceof Date ? value.getTime() : new Date(value as string).getTime();
  return Number.isFinite(time) ? time : Date.now();
}

/** Whether `pending` settles by `deadline` (ms since the epoch). */
async function within(pending: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([
    pending.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    }),
  ]);
  clearTimeout(timer);
  return settled;
}

/** Wait before opening the listening connection again after it failed or dropped. */
const LISTEN_RETRY_MS = 1_000;

/** What the listener uses of a node-postgres client. */
interface ListeningClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/**
 * Listens on `channel` (Postgres `LISTEN`) on a connection of its own, opened as the boss's pool
 * opens its connections (its client class and settings: pg-boss's own database object has a
 * node-postgres pool once started); calls `onNotify` on each notification and after each (re)connect
 * (jobs queued while it was away). A connection that fails or drops is opened again after a second,
 * for as long as the listener runs; its errors go to `onError`, never unhandled. No pool (a boss
 * given your own `db`, or not started yet, until it is): nothing is opened, and the worker polls.
 */
function listen(
  db: unknown,
  channel: string,
  onNotify: () => void,
  onError: (error: unknown) => void,
): { close(): Promise<void> } {
  let closed = false;
  let current: ListeningClient | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const retry = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void open();
    }, LISTEN_RETRY_MS);
    timer.unref?.();
  };
  const open = async () => {
    const pool = (db as { pool?: { Client?: unknown; options?: object; ending?: boolean } } | null)?.pool;
    if (closed) return;
    if (typeof pool?.Client !== 'function' || typeof pool.options !== 'object' || pool.ending) {
      retry();
      return;
    }
    const Client = pool.Client as new (config: object) => ListeningClient;
    let client: ListeningClient;
    try {
      client = new Client({ ...pool.options, application_name: 'pixhook-listen' });
    } catch (error) {
      onError(error);
      retry();
      return;
    }
    let dropped = false;
    const drop = (error?: unknown) => {
      if (dropped) return;
      dropped = true;
      if (error !== undefined) onError(error);
      if (current === client) current = undefined;
      client.end().catch(() => {});
      retry();
    };
    // Kept for the client's whole life: an `error` event with no listener would end the process.
    client.on('error', (error) => drop(error));
    client.on('end', () => drop());
    client.on('notification', (message) => {
      if (message.channel === channel) onNotify();
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      drop(error);
      return;
    }
    if (closed) {
      dropped = true;
      await client.end().catch(() => {});
      return;
    }
    current = client;
    onNotify();
  };
  void open();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      const client = current;
      current = undefined;
      await client?.end().catch(() => {});
    },
  };
}

/** A job this worker is running. */
interface Running {
  readonly jobId: string;
  /** `close()` gave up on it: its outcome is not written (pg-boss has failed it already). */
  abandoned: boolean;
  /** Its completion also fetched jobs for the slots free then: the loop need not be woken. */
  refilled?: boolean;
  done: Promise<void>;
}

/**
 * Starts a worker that fetches jobs of the queue (as pg-boss's `fetch()`, by its fetch index: see
 * `statements.fetch`) and runs `webhooks`' handlers for each, recording the outcome (as pg-boss's
 * `complete()`, a batch at a time, or with its `fail()`).
 *
 * Why not pg-boss's `work()`: it runs a fetched batch as one callback (one outcome for all its
 * jobs), so per-job outcomes would need one `work()` poller per concurrent job; and it does not
 * await `complete()` / `fail()`, so one failing while Postgres is away is an unhandled rejection,
 * which ends a Node process. This loop asks for as many jobs as it has free slots in one query,
 * awaits every outcome, retries one Postgres did not take, and reports failures to `onError`.
 */
export function startPgBossWorker(
  webhooks: ProcessingWebhooks,
  host: WorkerHost,
  options: ResolvedPgBossWorkerOptions,
  onClosed: () => void,
): StartedWorker {
  const { boss, statements } = host;
  const { name } = host.options;
  const running = new Set<Running>();
  let stopping = false;
  /** close() stopped waiting for the loop (a fetch that never returned). */
  let gaveUp = false;
  let bossStopped = false;
  let woken = false;
  let wakeUp: (() => void) | undefined;

  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  /** Waits `ms`, or less when woken (a job ended, one was queued here, or the worker closes). */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) return resolve();
      const done = () => {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakeUp = done;
    });

  const report = (error: WebhookVerificationError, context: ErrorContext<undefined> = { request: undefined }) => {
    try {
      webhooks.reportError(error, context);
    } catch {
      // A broken logger must not stop the worker.
    }
  };
  let lastEngineReport = Number.NEGATIVE_INFINITY;
  const reportEngine = (cause: unknown, what: string) => {
    const now = Date.now();
    if (now - lastEngineReport < ERROR_REPORT_INTERVAL_MS) return;
    lastEngineReport = now;
    report(
      new WebhookVerificationError(
        'QUEUE_UNAVAILABLE',
        `The pg-boss worker ${what}; it goes on, and further errors within 10 s are not repeated.`,
        { cause },
      ),
    );
  };
  const onBossError = (error: Error) =>
    reportEngine(error, 'heard an error from pg-boss (Postgres lost or a query failed)');
  // The boss stopped under the worker (its pool is closed, no outcome can be written): stop at once.
  const onBossStopped = () => {
    bossStopped = true;
    void shutdown(0);
  };
  const letGo = (jobId: string) =>
    boss
      .fail(name, jobId, { name: 'Error', message: LET_GO_MESSAGE })
      .catch((error: unknown) => reportEngine(error, `could not let go of job ${jobId}`));
  boss.on('error', onBossError);
  boss.on('stopped', onBossStopped);
  // Woken when jobs are queued anywhere (see the `listen` option); polling stays the fallback.
  const listener = options.listen
    ? listen(boss.getDb(), host.channel, wake, (error) =>
        reportEngine(error, 'lost its listening connection (it polls meanwhile, and reconnects)'),
      )
    : undefined;
  /** Slots asked for by a fetch in flight (the loop's, or a completion's): not free. */
  let reserved = 0;
  /** The loop was woken (jobs announced) while no slot was free. */
  let wokenWhileFull = false;
  // The outcomes of jobs that succeeded, completed a batch at a time: one statement for those that
  // end together, which also fetches jobs for the slots free then (one round trip and one commit
  // where a completion and a fetch were two). Each answers whether it was still active (else
  // maintenance had failed it).
  const completions = new Batcher<Running, boolean>(
    async (entries) => {
      const want = stopping ? 0 : Math.max(0, options.concurrency - running.size - reserved + entries.length);
      reserved += want;
      let rows: (PgBossFetchedJob & { done: boolean })[];
      try {
        const result = await host.prepared(statements.completeAndFetch, [
          name,
          entries.map((entry) => entry.jobId),
          want,
        ]);
        if (result === undefined) throw new Error('pixhook: the PgBoss instance was stopped.');
        rows = result as (PgBossFetchedJob & { done: boolean })[];
      } finally {
        reserved -= want;
      }
      const done = new Set<string>();
      for (const row of rows) {
        if (row.done) done.add(String(row.id));
        // Jobs fetched are active in Postgres: they run (close() waits for them too), unless close()
        // gave up already: then they are let go.
        else if (gaveUp) void letGo(String(row.id));
        else start(row);
      }
      for (const entry of entries) entry.refilled = true;
      return entries.map((entry) => done.has(entry.jobId));
    },
    Math.max(1, options.concurrency),
    2,
  );

  /** Writes a run's outcome; retried a few times while Postgres is away, then left to expire. */
  const settle = async (entry: Running, act: () => Promise<unknown>, completing: boolean) => {
    for (let attempt = 0; ; attempt++) {
      if (entry.abandoned || bossStopped) return;
      try {
        const result = await act();
        if (completing && result === false && !bossStopped) {
          report(
            new WebhookVerificationError(
              'JOB_STALLED',
              `Job ${entry.jobId} finished after pg-boss had already failed it as expired (it ran past the queue's expireInMs, or its worker was taken for lost): this run's success was not recorded, and the job runs again or is a dead letter.`,
            ),
          );
        }
        return;
      } catch (error) {
        const delay = SETTLE_DELAYS_MS[attempt];
        reportEngine(
          error,
          delay === undefined
            ? `could not record the outcome of job ${entry.jobId}; the job stays active until it expires (expireInMs), then runs again`
            : `could not record the outcome of job ${entry.jobId} (retrying)`,
        );
        if (delay === undefined) return;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };

  /** Fails a job at once, as a dead letter with `output`, whatever retries it has left. */
  const failNow = (entry: Running, output: object, context?: ErrorContext<undefined>) =>
    settle(
      entry,
      async () => {
        const failed = await host.sql(statements.failNow, [name, entry.jobId, JSON.stringify(output)]);
        if (failed.length === 0 && !bossStopped) {
          report(
            new WebhookVerificationError(
              'JOB_STALLED',
              `Job ${entry.jobId} failed for good after pg-boss had already failed it as expired (it ran past the queue's expireInMs, or its worker was taken for lost): pg-boss's outcome stands (the job runs again, or is a dead letter already if that was its last attempt).`,
            ),
            context,
          );
        }
      },
      false,
    );

  const runJob = async (job: PgBossFetchedJob, entry: Running) => {
    const delivery = job.data;
    if (!isQueuedDelivery(delivery)) {
      const message =
        'pixhook: this job does not hold a pixhook delivery (was it sent by something else?); it was failed without running handlers.';
      report(new WebhookVerificationError('INTERNAL_ERROR', message.replace(/^pixhook: /, '')));
      await failNow(entry, { name: 'Error', message });
      return;
    }
    const run: QueuedRun = {
      engine: 'pg-boss',
      jobId: job.id,
      attempt: job.retryCount + 1,
      maxAttempts: job.retryLimit + 1,
      queuedAt: millis(job.createdOn),
      queueName: name,
    };
    const { event, deliveryId, timestamp, tenant } = delivery;
    const context: ErrorContext<undefined> = { request: undefined, event, deliveryId, timestamp, job: run };
    // Read from Postgres: kept only when it has the shape core wrote.
    if (typeof tenant === 'string') context.tenant = tenant;
    if (job.retryCount > 0 && messageOf(job.output) === EXPIRED_MESSAGE) {
      report(
        new WebhookVerificationError(
          'JOB_STALLED',
          `Job ${job.id} was lost by the worker running it (the process stopped, or its handler ran past the queue's expireInMs); pg-boss failed it as expired and it runs again now.`,
        ),
        context,
      );
    }
    let failure: Error | undefined;
    let final = false;
    try {
      // The job's data whole: the event, and the tenant and secret core stored with it (and the
      // handler, for the job of a named handler: that handler alone runs). An event's job writes
      // one job per named handler to this queue, each with its own attempts and dead letter.
      await webhooks.process(delivery, run, { queue: host.jobs });
    } catch (cause) {
      failure = asError(cause);
      // A failure no attempt can mend (a handler's schema refused the event: the same bytes fail
      // the same way every time) ends the job at once, as a dead letter, whatever retries remain.
      final = isFinalFailure(cause);
    }
    if (failure === undefined) await settle(entry, () => completions.add(entry), true);
    else if (final) await failNow(entry, outputOf(failure), context);
    else {
      const output = outputOf(failure);
      await settle(entry, () => boss.fail(name, job.id, output), false);
    }
  };

  const start = (job: PgBossFetchedJob) => {
    const entry: Running = { jobId: job.id, abandoned: false, done: Promise.resolve() };
    running.add(entry);
    entry.done = runJob(job, entry)
      .catch((error: unknown) => reportEngine(error, `failed running job ${job.id}`))
      .finally(() => {
        running.delete(entry);
        // A completion that fetched for the free slots leaves nothing for the loop to do now, unless
        // the loop was woken meanwhile with no slot free (jobs queued after that fetch's snapshot).
        if (!entry.refilled || wokenWhileFull) {
          wokenWhileFull = false;
          wake();
        }
      });
  };

  const loop = async () => {
    while (!stopping) {
      const wasWoken = woken;
      woken = false;
      const free = options.concurrency - running.size - reserved;
      if (free <= 0) {
        // Jobs were announced while every slot was taken: the next job to end wakes the loop.
        if (wasWoken) wokenWhileFull = true;
        await pause(options.pollingIntervalMs);
        continue;
      }
      wokenWhileFull = false;
      let jobs: PgBossFetchedJob[] = [];
      reserved += free;
      try {
        await host.ready();
        // undefined: the boss stopped (the worker stops too, on its 'stopped' event).
        jobs = ((await host.prepared(statements.fetch, [name, free])) ?? []) as PgBossFetchedJob[];
      } catch (error) {
        reportEngine(error, 'could not fetch jobs');
      } finally {
        reserved -= free;
      }
      if (gaveUp) {
        // close() stopped waiting for this fetch: what it brought is let go, not run.
        await Promise.all(jobs.map((job) => letGo(job.id)));
        return;
      }
      // Jobs fetched are active in Postgres: they run even when close() began meanwhile.
      for (const job of jobs) start(job);
      if (jobs.length < free) await pause(options.pollingIntervalMs);
    }
  };
  const looping = loop();
  // Nothing in the loop should throw; if it ever does, say so rather than leave a rejection unhandled.
  looping.catch((error: unknown) => reportEngine(error, 'stopped polling after an unexpected error'));

  let closing: Promise<boolean> | undefined;
  /** Stops polling, waits up to `graceMs` for the running handlers, then lets go of the rest. */
  const shutdown = (graceMs: number) => {
    closing ??= (async () => {
      stopping = true;
      wake();
      const deadline = Date.now() + graceMs;
      // A fetch Postgres never answers (pg's pool ended under it) must not hold close() either.
      if (!(await within(looping, deadline))) gaveUp = true;
      // Until none runs: a completion in flight may have started jobs it fetched.
      let finished = true;
      while (finished && running.size > 0) {
        finished = await within(Promise.all([...running].map((entry) => entry.done)), deadline);
      }
      if (!finished) {
        const left = [...running];
        for (const entry of left) entry.abandoned = true;
        if (!bossStopped) {
          await Promise.all(left.map((entry) => letGo(entry.jobId)));
          report(
            new WebhookVerificationError(
              'JOB_STALLED',
              `worker.close() gave up after shutdownTimeoutMs (${options.shutdownTimeoutMs} ms) with ${left.length} handler(s) still running; their jobs were failed so pg-boss runs them again (after their backoff, using an attempt).`,
            ),
          );
        }
      }
      boss.off('error', onBossError);
      boss.off('stopped', onBossStopped);
      await listener?.close();
      onClosed();
      return finished;
    })();
    return closing;
  };
  const worker: StartedWorker = {
    get running() {
      return running.size;
    },
    wake,
    close: () => shutdown(options.shutdownTimeoutMs),
  };
  return worker;
}
