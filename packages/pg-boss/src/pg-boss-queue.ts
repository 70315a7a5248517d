import { createHash } from 'node:crypto';
import {
  type DeadLetter,
  type DeadLetterListOptions,
  type DeadLetterSource,
  deliveryKey,
  describeType,
  isQueuedDelivery,
  type QueuedDelivery,
  type WebhookQueue,
} from '@pixhook/core';
import { Batcher } from './batcher.js';
import { deliveryJobId, isUuid, pgBossJobIdFor } from './job-id.js';
import {
  type PgBossQueueOptions,
  type PgBossWorkerOptions,
  type ResolvedPgBossQueueOptions,
  resolveQueueOptions,
  resolveWorkerOptions,
} from './options.js';
import { type PgBossStatements, pgBossStatements } from './sql.js';
import type { PgBossLike, PgBossSendOptions, PgBossWorker, ProcessingWebhooks } from './types.js';
import { messageOf, type StartedWorker, startPgBossWorker } from './worker.js';

/**
 * An event whose job ran out of attempts (or failed for good: a handler's schema refused the
 * event), kept until retried or discarded (or until pg-boss's maintenance deletes it: see the
 * queue's doc). Its `jobId` is the pg-boss job id: `pgBossJobIdFor(key)` of the delivery's key (the
 * event id, or `<tenant>/<event id>` with secrets per tenant, and `#<handler id>` after it for the
 * job of a named handler, whose `delivery.handler` says which), a UUID. Every string in it was read from Postgres: treat it as
 * untrusted text when you show it (escape it in HTML, strip control characters in a terminal).
 */
export type PgBossDeadLetter = DeadLetter;

/** Which dead letters to list. */
export type PgBossListOptions = DeadLetterListOptions;

/**
 * How many jobs of the queue are in each state (`queue.counts()`), as pg-boss keeps them in its
 * `job` table (and, for dead letters, its `archive`). The same shape as `@pixhook/bullmq`'s, so a
 * metrics reader (`@pixhook/opentelemetry`) takes either.
 */
export interface QueueCounts {
  /**
   * Jobs ready to run, waiting for a free worker: state `created` or `retry` whose `start_after`
   * has passed (what pg-boss's fetch takes next).
   */
  readonly waiting: number;
  /** Jobs a worker is running now: state `active` (until completed, failed, or expired by maintenance). */
  readonly active: number;
  /**
   * Jobs not ready before a later time: state `retry` (or `created`) whose `start_after` is still
   * ahead, in practice a retry waiting for its backoff to pass.
   */
  readonly delayed: number;
  /**
   * Dead letters: jobs out of attempts, state `failed`, in the job table and in pg-boss's archive
   * (what `countDeadLetters()` counts and `listDeadLetters()` lists).
   */
  readonly deadLetter: number;
}

interface DeadRow {
  id: string;
  data: unknown;
  retryCount: number;
  createdOn: Date | string;
  completedOn: Date | string | null;
  output: unknown;
}

const time = (value: Date | string) => (value instanceof Date ? value : new Date(value)).getTime();

function deadLetterOf(row: DeadRow): PgBossDeadLetter {
  const output = row.output as { stack?: unknown } | null;
  return {
    jobId: String(row.id),
    delivery: isQueuedDelivery(row.data) ? row.data : undefined,
    attemptsMade: Number(row.retryCount) + 1,
    queuedAt: time(row.createdOn),
    failedAt: row.completedOn === null ? undefined : time(row.completedOn),
    error: messageOf(output),
    stack: typeof output?.stack === 'string' ? output.stack : undefined,
  };
}

/** Passwords in a connection string (`postgres://user:secret@host`) never reach a log. */
function withoutPasswords(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@');
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text from Postgres or a driver, made safe for one log line. */
function printable(text: string): string {
  return withoutPasswords(text).replace(UNPRINTABLE, '?').slice(0, 500);
}

/**
 * The Postgres channel of a queue: notified when its jobs are queued (a name of at most 63 bytes,
 * whatever the queue's and schema's lengths).
 */
function channelOf(schema: string, name: string): string {
  return `pixhook_${createHash('sha256').update(`${schema}.${name}`).digest('hex').slice(0, 32)}`;
}

/** The names of prepared statements, by their text (see `#prepared`). */
const statementNames = new Map<string, string>();

/** Queue creations under way, per boss and queue: see `#createQueue`. */
const creating = new WeakMap<object, Map<string, Promise<{ policy?: string | undefined } | null>>>();

function isPgBoss(value: unknown): value is PgBossLike {
  const boss = value as Record<string, unknown> | null;
  return (
    typeof boss === 'object' &&
    boss !== null &&
    ['send', 'fetch', 'complete', 'fail', 'createQueue', 'getQueue', 'getDb', 'on', 'off', 'listenerCount'].every(
      (name) => typeof boss[name] === 'function',
    )
  );
}

/** Errors of the first statement on pg-boss's tables, explained. */
function explained(error: unknown, schema: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '42P01' || code === '3F000') {
    return new Error(
      `pixhook: PgBossQueue: pg-boss's tables are not in the schema "${schema}": give PgBossQueue the schema you gave new PgBoss({ schema }), and start the boss (boss.start() installs them).`,
      { cause: error },
    );
  }
  return error;
}

/**
 * Queued processing on pg-boss (10.x), in the Postgres you already have: give it to
 * `new Webhooks({ queue })` and every adapter answers a verified delivery 202 once Postgres has
 * stored its job, keyed on the event id; start workers with `queue.startWorker(webhooks)` in this
 * process or others. Failed runs are retried with backoff; an event out of attempts is kept as a
 * dead letter (a failed pg-boss job) to list, retry or discard here. With
 * `transactions: new PostgresTransactions(pool)` on the worker's `Webhooks`, each job's handlers
 * run in one transaction with the event's processed record: a job run twice has its effects once.
 *
 * You construct, start and stop the `PgBoss` yourself (pixhook does not own it, and needs no import
 * of pg-boss): start it before the first delivery, close the workers (or `queue.close()`) before
 * `boss.stop()`. At least one boss on the database must run pg-boss's maintenance (its default,
 * `supervise: true`): it retries the jobs of workers that died and archives finished jobs.
 *
 * One job per event: the job id is `pgBossJobIdFor(deliveryKey(delivery))` (the event id, or with
 * secrets per tenant `<tenant>/<event id>`: one job per tenant and event), and pg-boss inserts with
 * `ON CONFLICT DO NOTHING`. A job stays in pg-boss's `job` table while waiting, running, retrying,
 * failed (a dead letter) and for `archiveCompletedAfterSeconds` after completing (12 h by default),
 * then in its `archive` table for `deleteAfterSeconds` (7 days by default); `enqueue` looks in both,
 * so a re-delivery within that time adds nothing. Keep those two boss options above the service's
 * 32.6-hour retry span in sum (the defaults are). Dead letters follow the same clock: pg-boss moves
 * them to its archive after `archiveFailedAfterSeconds` (defaults to archiveCompletedAfterSeconds),
 * where this queue still lists, retries and discards them, and deletes them from there after
 * `deleteAfterSeconds`: raise those on the boss to keep dead letters longer.
 *
 * A failure no further attempt can mend (`isFinalFailure` from `@pixhook/core`: a handler's schema
 * refused the event) fails the job at once, whatever retries it has left: pixhook's own statement
 * sets the running job `failed` with the error, as pg-boss's `fail()` does on the last attempt, and
 * leaves its retry limit alone. So it is listed, counted, retried (with all its attempts) and
 * discarded as any other dead letter, and it keeps its job id.
 *
 * Why a dead letter is the failed job itself rather than its copy in a pg-boss `deadLetter` queue:
 * pg-boss gives that copy a random id, so the event's job id (what de-duplicates re-deliveries, and
 * what `context.job.jobId` and `onError` showed) would be lost, and a retry would be a delete and an
 * insert across two queues instead of one `UPDATE`. pg-boss 10 has no API to list jobs or to run a
 * failed one again with all its attempts, so those few statements are pixhook's own, on pg-boss's
 * tables (see the `schema` option).
 *
 * @example
 * const boss = new PgBoss(process.env.DATABASE_URL)
 * boss.on('error', (error) => log.warn(error))
 * await boss.start()
 * const queue = new PgBossQueue(boss)
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, queue, transactions: new PostgresTransactions(pool) })
 * webhooks.on('image.created', async (event, { transaction }) => { await transaction.query('INSERT …') })
 * app.post('/webhooks', webhookMiddleware(webhooks))
 * const worker = queue.startWorker(webhooks, { concurrency: 4 })
 */
export class PgBossQueue implements WebhookQueue, DeadLetterSource {
  readonly #boss: PgBossLike;
  readonly #options: ResolvedPgBossQueueOptions;
  readonly #statements: PgBossStatements;
  readonly #sendOptions: Omit<PgBossSendOptions, 'id'>;
  readonly #workers = new Set<StartedWorker>();
  /** Deliveries' jobs, written a batch at a time (see `batchSize`). */
  readonly #batches: Batcher<{ id: string; data: QueuedDelivery }>;
  /** The Postgres channel notified when jobs are queued, which workers listen on. */
  readonly #channel: string;
  /** A notification to the workers is in flight; and whether jobs were queued since it was sent. */
  #announcing = false;
  #announceAgain = false;
  #ready: Promise<void> | undefined;
  #fallbackListener: ((error: Error) => void) | undefined;

  /**
   * @param boss - your `PgBoss` instance (pg-boss 10.x), started or started before the first
   *   delivery; pixhook never stops it
   * @param options - queue name, pg-boss schema, attempts, backoff, expiration and write deadline;
   *   each documented with its default
   */
  constructor(boss: PgBossLike, options?: PgBossQueueOptions) {
    if (!isPgBoss(boss)) {
      throw new TypeError(
        `pixhook: new PgBossQueue(boss) needs a PgBoss instance from pg-boss 10 (const boss = new PgBoss(connectionString); await boss.start()); got ${describeType(boss)}.`,
      );
    }
    this.#boss = boss;
    this.#options = resolveQueueOptions(options);
    this.#statements = pgBossStatements(this.#options.schema);
    const { attempts, backoff, expireInSeconds } = this.#options;
    this.#sendOptions = {
      retryLimit: attempts - 1,
      retryDelay: backoff.delaySeconds,
      retryBackoff: backoff.type === 'exponential',
      expireInSeconds,
    };
    this.#channel = channelOf(this.#options.schema, this.#options.name);
    this.#batches = new Batcher(
      (jobs) => this.#insert(jobs),
      this.#options.batchSize,
      this.#options.maxBatchesInFlight,
    );
    this.#guardBoss();
  }

  /** What `console.log(queue)` shows; never the boss (its options hold the connection string). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    const { name, schema, attempts } = this.#options;
    return `PgBossQueue { name: ${name}, schema: ${schema}, attempts: ${attempts}, workers: ${this.#workers.size} }`;
  }

  /** The `PgBoss` instance underneath, for its own API (monitoring, queues, schedules). */
  get boss(): PgBossLike {
    return this.#boss;
  }

  /** The pg-boss queue's name (the `name` option). */
  get name(): string {
    return this.#options.name;
  }

  /** The engine's name, `'pg-boss'`: what traces and metrics (`@pixhook/opentelemetry`) call it. */
  get engine(): 'pg-boss' {
    return 'pg-boss';
  }

  /** The pg-boss queue's name (the `name` option; the same as `name`), for traces and metrics. */
  get queueName(): string {
    return this.#options.name;
  }

  /**
   * Longest wait for Postgres to confirm a delivery's job, in ms (the `enqueueTimeoutMs` option):
   * `webhooks.handle()` answers 503 past it, on core's shared deadline timers.
   */
  get enqueueTimeoutMs(): number {
    return this.#options.enqueueTimeoutMs;
  }

  /**
   * Stores a verified delivery as a job whose id is derived from the event's key
   * (`pgBossJobIdFor(deliveryKey(delivery))`: the event id, scoped by tenant with secrets per
   * tenant), and resolves once Postgres has committed it. A job of that id already there (waiting, running, retrying, done, a
   * dead letter, or in pg-boss's archive) means nothing is added. `webhooks.handle()` calls it and
   * bounds it by `enqueueTimeoutMs`; you do not need to.
   */
  async enqueue(delivery: QueuedDelivery): Promise<void> {
    await this.#whenReady();
    // Written with the other deliveries of the moment, in one statement (see `#insert`).
    await this.#batches.add({ id: deliveryJobId(deliveryKey(delivery), delivery.replay), data: delivery });
  }

  /**
   * Writes a batch of jobs in one statement, and answers each one's outcome. A job of an id already
   * in the job table or in pg-boss's archive is not added (the statement looks in the archive
   * first: pg-boss's unique id covers its job table only, and a duplicate of an archived job, once
   * inserted, could be fetched by a polling worker before it was dropped again). Left: a job
   * archived in the moment between that look and the insert (12 h after it completed, by default)
   * is run once more; handlers must be safe to run twice anyway.
   */
  async #insert(jobs: { id: string; data: QueuedDelivery }[]): Promise<(Error | undefined)[]> {
    const { name } = this.#options;
    const { retryLimit, retryDelay, retryBackoff, expireInSeconds } = this.#sendOptions;
    let row: { queue: boolean; inserted: number } | undefined;
    try {
      const rows = await this.#prepared(this.#statements.enqueue, [
        name,
        JSON.stringify(jobs),
        retryLimit,
        retryDelay,
        retryBackoff,
        expireInSeconds,
        this.#keepUntil(),
      ]);
      if (rows === undefined) throw this.#notStarted();
      [row] = rows as { queue: boolean; inserted: number }[];
    } catch (error) {
      // Data Postgres refuses (class 22: a \u0000 in a string, which jsonb cannot hold) fails the
      // delivery that holds it, not the others: the batch is written again one job at a time.
      const code = String((error as { code?: unknown } | null)?.code ?? '');
      if (jobs.length > 1 && code.startsWith('22')) {
        const alone = await Promise.all(jobs.map((job) => this.#insert([job]).catch((cause: Error) => [cause])));
        return alone.map(([outcome]) => outcome);
      }
      throw error;
    }
    if (!row?.queue) {
      this.#ready = undefined;
      const error = new Error(
        `pixhook: PgBossQueue: pg-boss stored no job for this event and holds none: was the queue "${name}" deleted? It is created again on the next delivery.`,
      );
      return jobs.map(() => error);
    }
    if (row.inserted > 0) {
      for (const worker of this.#workers) worker.wake();
      this.#announce();
    }
    return jobs.map(() => undefined);
  }

  /**
   * Notifies the workers of every instance (their `listen`) that jobs were queued, after the
   * commit, without delaying any answer: at most one notification in flight per queue, and one more
   * after it when jobs were queued meanwhile, so a burst of batches sends few. One that fails is
   * dropped: the workers poll.
   */
  #announce(): void {
    if (this.#announcing) {
      this.#announceAgain = true;
      return;
    }
    this.#announcing = true;
    void (async () => {
      try {
        do {
          this.#announceAgain = false;
          await this.#prepared(this.#statements.notify, [this.#channel]);
        } while (this.#announceAgain);
      } catch {
        // A lost notification costs time only: the workers poll every pollingIntervalMs.
      } finally {
        this.#announcing = false;
      }
    })();
  }

  /**
   * The boss's retention (\`retentionDays\` … of \`new PgBoss({…})\`), which pg-boss's `send()` gives
   * a job whose queue has none: read from the boss's own database object, which holds its
   * configuration (null with a \`db\` of yours: 14 days, unless the queue has a retention).
   */
  #keepUntil(): string | null {
    const keepUntil = (this.#boss.getDb() as { config?: { keepUntil?: unknown } }).config?.keepUntil;
    return typeof keepUntil === 'string' ? keepUntil : null;
  }

  /**
   * Starts a worker that runs `webhooks`' handlers (registered with `on` / `onAny`) for each job,
   * here or in another process with the same queue options. Call `close()` on it at shutdown,
   * before `boss.stop()`. An event's job runs its unnamed handlers and writes one job per named
   * handler (`on(type, { id }, handler)`) to this queue, its id `pgBossJobIdFor('<event key>#<handler id>')`,
   * with its own attempts and its own dead letter; that job runs that handler alone. Handlers with
   * an ordering guard need the marks kept: a store on `webhooks` (`PostgresStore`), or its
   * transactions (`PostgresTransactions`: the mark commits with the handlers' writes); the guard
   * decides when the job runs.
   * @example
   * const worker = queue.startWorker(webhooks, { concurrency: 8 })
   * process.on('SIGTERM', async () => { await worker.close(); await boss.stop() })
   */
  startWorker(webhooks: ProcessingWebhooks, options?: PgBossWorkerOptions): PgBossWorker {
    if (typeof webhooks?.process !== 'function' || typeof webhooks.reportError !== 'function') {
      throw new TypeError('pixhook: queue.startWorker(webhooks) needs the Webhooks whose handlers the worker runs.');
    }
    const resolved = resolveWorkerOptions(options);
    const worker = startPgBossWorker(
      webhooks,
      {
        boss: this.#boss,
        options: this.#options,
        statements: this.#statements,
        jobs: this,
        channel: this.#channel,
        ready: () => this.#whenReady(),
        sql: (text, values) => this.#sql(text, values),
        prepared: (text, values) => this.#prepared(text, values),
      },
      resolved,
      () => this.#workers.delete(worker),
    );
    this.#workers.add(worker);
    return worker;
  }

  /** Dead letters, newest failure first. */
  async listDeadLetters(options: PgBossListOptions = {}): Promise<PgBossDeadLetter[]> {
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(limit) || limit < 1) {
      throw new TypeError(
        'pixhook: listDeadLetters({ offset, limit }): offset must be ≥ 0 and limit ≥ 1, whole numbers.',
      );
    }
    await this.#whenReady();
    const rows = await this.#sql(this.#statements.list, [this.#options.name, offset, limit]);
    return (rows as DeadRow[]).map(deadLetterOf);
  }

  /** How many dead letters there are. */
  async countDeadLetters(): Promise<number> {
    await this.#whenReady();
    const [row] = (await this.#sql(this.#statements.count, [this.#options.name])) as { count: number }[];
    return Number(row?.count ?? 0);
  }

  /**
   * How many jobs are waiting, running, delayed for a retry's backoff, and dead letters, read in
   * one statement: for a dashboard or a metrics gauge. Rejects while Postgres is unreachable or
   * the boss is not started.
   * @example
   * const { waiting, deadLetter } = await queue.counts()
   */
  async counts(): Promise<QueueCounts> {
    await this.#whenReady();
    const [row] = (await this.#sql(this.#statements.counts, [this.#options.name])) as Partial<
      Record<keyof QueueCounts, number>
    >[];
    return {
      waiting: Number(row?.waiting ?? 0),
      active: Number(row?.active ?? 0),
      delayed: Number(row?.delayed ?? 0),
      deadLetter: Number(row?.deadLetter ?? 0),
    };
  }

  /**
   * One dead letter, by job id or key (the event id, or `<tenant>/<event id>` with secrets per
   * tenant: `eventKey(eventId, tenant)`; for the job of a named handler, `#<handler id>` after it:
   * `'evt_1#billing'`); undefined when there is no such dead letter.
   */
  async getDeadLetter(id: string): Promise<PgBossDeadLetter | undefined> {
    const ids = this.#idsOf(id);
    await this.#whenReady();
    const [row] = (await this.#sql(this.#statements.get, [this.#options.name, ids])) as DeadRow[];
    return row && deadLetterOf(row);
  }

  /**
   * Runs a dead letter again, now, with all its attempts and backoff anew (`context.job.attempt`
   * starts at 1 again). Resolves `false` when there is no such dead letter.
   */
  async retryDeadLetter(id: string): Promise<boolean> {
    return (await this.#retry(this.#idsOf(id))) > 0;
  }

  /**
   * Deletes a dead letter for good: the event is never run, and a later delivery of its id would
   * be queued anew. Resolves `false` when there is no such dead letter.
   */
  async discardDeadLetter(id: string): Promise<boolean> {
    return (await this.#discard(this.#idsOf(id))) > 0;
  }

  /** Runs every dead letter again; resolves how many. */
  retryAllDeadLetters(): Promise<number> {
    return this.#retry(null);
  }

  /** Deletes every dead letter; resolves how many. */
  discardAllDeadLetters(): Promise<number> {
    return this.#discard(null);
  }

  /**
   * Closes the workers started here (each waits for its running handlers, up to its
   * `shutdownTimeoutMs`). It does not stop the boss: call `boss.stop()` after it.
   */
  async close(): Promise<void> {
    await Promise.all([...this.#workers].map((worker) => worker.close()));
    if (this.#fallbackListener) this.#boss.off('error', this.#fallbackListener);
    this.#fallbackListener = undefined;
  }

  /** The job ids a dead letter may be named by: its job id, or the job id of an event key. */
  #idsOf(id: string): string[] {
    if (typeof id !== 'string' || id === '') {
      throw new TypeError(
        'pixhook: a dead letter is named by its job id or key (the event id, or <tenant>/<event id> with secrets per tenant, and #<handler id> after it for a named handler), a non-empty string.',
      );
    }
    return isUuid(id) ? [id.toLowerCase(), pgBossJobIdFor(id)] : [pgBossJobIdFor(id)];
  }

  async #retry(ids: string[] | null): Promise<number> {
    await this.#whenReady();
    const values = [this.#options.name, ids];
    const retried =
      (await this.#sql(this.#statements.retry, values)).length +
      (await this.#sql(this.#statements.retryArchived, values)).length;
    if (retried > 0) for (const worker of this.#workers) worker.wake();
    return retried;
  }

  async #discard(ids: string[] | null): Promise<number> {
    await this.#whenReady();
    const [row] = (await this.#sql(this.#statements.discard, [this.#options.name, ids])) as { count: number }[];
    return Number(row?.count ?? 0);
  }

  /** A statement on the boss's database. */
  /**
   * A statement run often (a batch's insert, a worker's fetch and completion), named so that each
   * connection of the boss's pool parses and plans it once (node-postgres prepares a named
   * statement on first use per connection). On pg-boss's own database object (its node-postgres
   * pool, once started); with a \`db\` of yours, through its \`executeSql\`, unnamed. Resolves
   * undefined when the boss is not started (or was stopped).
   */
  async #prepared(text: string, values: unknown[]): Promise<unknown[] | undefined> {
    const db = this.#boss.getDb() as {
      opened?: unknown;
      pool?: { query?: (query: { name: string; text: string; values: unknown[] }) => Promise<{ rows: unknown[] }> };
    };
    if (!this.#options.preparedStatements || db.opened !== true || typeof db.pool?.query !== 'function') {
      return (await this.#boss.getDb().executeSql(text, values))?.rows;
    }
    let name = statementNames.get(text);
    if (name === undefined) {
      name = `pixhook_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      statementNames.set(text, name);
    }
    return (await db.pool.query({ name, text, values })).rows;
  }

  async #sql(text: string, values: unknown[]): Promise<unknown[]> {
    const result = await this.#boss.getDb().executeSql(text, values);
    if (result === undefined) throw this.#notStarted();
    return result.rows;
  }

  #notStarted(cause?: unknown): Error {
    return new Error(
      'pixhook: PgBossQueue: the PgBoss instance is not started (or was stopped): await boss.start() before the first delivery.',
      cause === undefined ? undefined : { cause },
    );
  }

  /**
   * Once per queue (again after a failure): finds pg-boss's tables, creates the queue if it does not
   * exist, and checks its policy.
   */
  #whenReady(): Promise<void> {
    this.#ready ??= (async () => {
      const { name, schema } = this.#options;
      await this.#sql(this.#statements.probe, [name]).catch((error: unknown) => {
        throw explained(error, schema);
      });
      const queue = await this.#createQueue();
      if (queue?.policy !== undefined && queue.policy !== null && queue.policy !== 'standard') {
        throw new Error(
          `pixhook: PgBossQueue: the pg-boss queue "${name}" has the policy "${printable(String(queue.policy))}"; pixhook needs "standard" (one job per event id, any number at once). Use another queue name.`,
        );
      }
    })();
    const ready = this.#ready;
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = undefined;
    });
    return ready;
  }

  /**
   * The queue's row, after creating the queue if it does not exist. pg-boss 10's `createQueue()` is
   * not safe to run at once from two connections for the same new queue (its function inserts the
   * queue, then adds foreign keys to that table: Postgres reports a deadlock and aborts one), which
   * instances starting together do: so it is skipped when the queue exists, and a failure is retried
   * after a pause while the queue still does not exist.
   */
  #createQueue(): Promise<{ policy?: string | undefined } | null> {
    // Queues of one boss in this process share one creation.
    const { name, schema } = this.#options;
    const mine = creating.get(this.#boss) ?? new Map<string, Promise<{ policy?: string | undefined } | null>>();
    creating.set(this.#boss, mine);
    const key = `${schema}.${name}`;
    let pending = mine.get(key);
    if (!pending) {
      pending = this.#createQueueOnce();
      mine.set(key, pending);
      const settled = () => mine.delete(key);
      pending.then(settled, settled);
    }
    return pending;
  }

  async #createQueueOnce(): Promise<{ policy?: string | undefined } | null> {
    const { name } = this.#options;
    const { retryLimit, retryDelay, retryBackoff, expireInSeconds } = this.#sendOptions;
    for (let attempt = 1; ; attempt++) {
      const existing = await this.#boss.getQueue(name);
      if (existing) return existing;
      try {
        await this.#boss.createQueue(name, { name, retryLimit, retryDelay, retryBackoff, expireInSeconds });
      } catch (error) {
        if (attempt >= 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 100));
      }
    }
  }

  /**
   * pg-boss emits `error` (a connection Postgres dropped, a failed maintenance run), and an
   * `EventEmitter` with no listener for it throws, ending the process. A boss nobody listens on gets
   * one that logs, at most once a minute, and only while no other listener (yours, or a worker's
   * that tells `onError`) is there.
   */
  #guardBoss(): void {
    const boss = this.#boss;
    if (boss.listenerCount('error') > 0) return;
    let lastLogged = 0;
    this.#fallbackListener = (error: Error) => {
      if (boss.listenerCount('error') > 1) return;
      const now = Date.now();
      if (now - lastLogged < 60_000) return;
      lastLogged = now;
      console.error(
        `pixhook: PgBossQueue: pg-boss reported an error (${printable(String(error?.message))}); it goes on. Add boss.on('error', …) to handle these yourself.`,
      );
    };
    boss.on('error', this.#fallbackListener);
  }
}
