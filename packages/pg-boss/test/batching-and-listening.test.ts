/**
 * The faster paths of the pg-boss queue, on by default, on a real Postgres: deliveries that arrive
 * together are written by one statement (one job each, one for an event delivered twice; a batch
 * that fails answers each of its deliveries 503; data Postgres refuses fails its own delivery
 * alone), and workers listen for new jobs (LISTEN/NOTIFY): a job queued by another instance starts
 * long before the next poll, also after Postgres restarted under the listening connection.
 */

import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { expectNoUnhandledRejection } from '@pixhook/test-helpers/tenants';
import type PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, startBoss, testQueueOptions, until } from './helpers/pg-boss.js';

/** An idle worker that would poll only once an hour: a job it runs soon was announced to it. */
const NO_POLLING = { pollingIntervalMs: 3_600_000 } as const;

describeWithPostgres('pg-boss: batched enqueues and listening workers', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  let other: PgBoss;
  const toClose: { close(): Promise<unknown> }[] = [];
  const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
    toClose.push(thing);
    return thing;
  };

  beforeAll(async () => {
    server = await startPostgresServer();
    ({ boss } = await startBoss(server.url));
    // Another instance (another process, in production): its own boss and pool.
    ({ boss: other } = await startBoss(server.url));
  });
  afterEach(async () => {
    server.resume();
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await other?.stop({ graceful: false, wait: true });
    await server?.close();
  });

  /** The jobs of `queue`: id and the time of the statement that wrote each (`now()`, its transaction's start, to the µs). */
  const jobsOf = async (name: string) =>
    (await boss.getDb().executeSql('SELECT id::text, created_on::text FROM pgboss.job WHERE name = $1', [name]))
      .rows as { id: string; created_on: string }[];

  /**
   * Listening connections of workers (pixhook's LISTEN done), as Postgres sees them; none while
   * Postgres does not answer (restarting).
   */
  const listeners = async () => {
    try {
      const result = await boss
        .getDb()
        .executeSql(
          "SELECT pid FROM pg_stat_activity WHERE application_name = 'pixhook-listen' AND query LIKE 'LISTEN%' AND state = 'idle'",
          [],
        );
      return result.rows as { pid: number }[];
    } catch {
      return [];
    }
  };

  it('concurrent deliveries are written by one statement: one job each, and one for an event delivered twice', async () => {
    const options = testQueueOptions({ maxBatchesInFlight: 1 });
    const { queue, webhooks } = queuedWebhooks(boss, options);
    track(queue);
    await queue.counts(); // the queue created, so the deliveries below all go out together
    const requests = Array.from({ length: 20 }, () => signed());
    // The service delivering one event twice at the same moment.
    const twice = [...requests, requests[0]!, requests[7]!];
    const answers = await Promise.all(twice.map((request) => webhooks.handle(request)));
    expect(answers.map((answer) => answer.status)).toEqual(twice.map(() => 202));
    const jobs = await jobsOf(options.name!);
    expect(new Set(jobs.map((job) => job.id))).toEqual(
      new Set(requests.map((request) => pgBossJobIdFor(request.event.id))),
    );
    expect(jobs).toHaveLength(20);
    // Written in one transaction (at most two: the first delivery may leave alone), not 22.
    expect(new Set(jobs.map((job) => job.created_on)).size).toBeLessThanOrEqual(2);

    // Delivered again later, together: nothing added, each answered 202.
    const again = await Promise.all(requests.slice(0, 5).map((request) => webhooks.handle(request)));
    expect(again.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    expect(await jobsOf(options.name!)).toHaveLength(20);
  });

  it('batchSize: 1 writes each delivery by a statement of its own', async () => {
    const options = testQueueOptions({ batchSize: 1, maxBatchesInFlight: 1 });
    const { queue, webhooks } = queuedWebhooks(boss, options);
    track(queue);
    await queue.counts();
    const answers = await Promise.all(Array.from({ length: 5 }, () => webhooks.handle(signed())));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    const jobs = await jobsOf(options.name!);
    expect(new Set(jobs.map((job) => job.created_on)).size).toBe(5);
  });

  it('a delivery whose data Postgres refuses fails alone: the others of its batch are stored', async () => {
    const options = testQueueOptions();
    const { queue, webhooks, errors } = queuedWebhooks(boss, options);
    track(queue);
    await queue.counts();
    const good = Array.from({ length: 6 }, () => signed());
    // jsonb holds no \u0000: Postgres refuses this event's job whatever the batch.
    const bad = signed(createTestEvent('image.created', { id: 'img_1', caption: 'a\u0000b' }) as never);
    const answers = await Promise.all([...good, bad].map((request) => webhooks.handle(request)));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202, 202, 503]);
    expect(JSON.parse(answers[6]!.body).error.code).toBe('QUEUE_UNAVAILABLE');
    expect(errors.map(({ error }) => error.code)).toContain('QUEUE_UNAVAILABLE');
    const ids = new Set((await jobsOf(options.name!)).map((job) => job.id));
    expect(ids).toEqual(new Set(good.map((request) => pgBossJobIdFor(request.event.id))));
  });

  it('a worker of another instance is woken by a job queued here, long before its next poll', {
    timeout: 60_000,
  }, async () => {
    const options = testQueueOptions();
    const receiver = queuedWebhooks(boss, options);
    track(receiver.queue);
    const worker = queuedWebhooks(other, options);
    track(worker.queue);
    const before = (await listeners()).length;
    worker.queue.startWorker(worker.webhooks, NO_POLLING);
    // Its first fetch is done and it listens: from now on only a notification wakes it within the hour.
    await until(async () => (await listeners()).length > before, 'the worker to listen', 20_000);
    const requests = [signed(), signed()];
    for (const request of requests) expect((await receiver.webhooks.handle(request)).status).toBe(202);
    await until(
      () => requests.every((request) => worker.runs.some((run) => run.eventId === request.event.id)),
      'both jobs to run on the other instance',
      20_000,
    );
    expect(receiver.runs).toEqual([]);
  });

  it('preparedStatements: false: deliveries stored together and run, every statement unnamed', async () => {
    const options = testQueueOptions({ preparedStatements: false });
    const { queue, webhooks, runs } = queuedWebhooks(boss, options);
    track(queue);
    const requests = Array.from({ length: 6 }, () => signed());
    const answers = await Promise.all(requests.map((request) => webhooks.handle(request)));
    expect(answers.map((answer) => answer.status)).toEqual(requests.map(() => 202));
    queue.startWorker(webhooks, { concurrency: 2, pollingIntervalMs: 100 });
    await until(() => runs.length === 6, 'every job to run');
    await until(async () => (await queue.counts()).active === 0, 'every job to complete');
    expect(new Set(runs.map((run) => run.eventId))).toEqual(new Set(requests.map((request) => request.event.id)));
  });

  it('checks the new options', () => {
    expect(() => new PgBossQueue(boss, { batchSize: 0 })).toThrow(/^pixhook: .*batchSize must be from 1/);
    expect(() => new PgBossQueue(boss, { maxBatchesInFlight: 1.5 })).toThrow(
      /^pixhook: .*maxBatchesInFlight must be a whole number/,
    );
    expect(() => new PgBossQueue(boss, { preparedStatements: 'no' as never })).toThrow(
      /^pixhook: .*preparedStatements must be true or false/,
    );
    const queue = new PgBossQueue(boss);
    const webhooks = queuedWebhooks(boss, testQueueOptions()).webhooks;
    expect(() => queue.startWorker(webhooks, { listen: 'yes' as never })).toThrow(
      /^pixhook: .*listen must be true or false/,
    );
  });

  // Last: they stop Postgres under both bosses.
  it('Postgres stopped: every delivery of the batch answers 503, nothing is stored; back: stored', {
    timeout: 60_000,
  }, async () => {
    const options = testQueueOptions({ enqueueTimeoutMs: 9_000 });
    const { queue, webhooks } = queuedWebhooks(boss, options);
    track(queue);
    await queue.counts();
    const requests = Array.from({ length: 8 }, () => signed());
    await server.stop('fast');
    let answers: { status: number; body: string }[];
    try {
      answers = await Promise.all(requests.map((request) => webhooks.handle(request)));
    } finally {
      await server.start();
    }
    expect(answers.map((answer) => answer.status)).toEqual(requests.map(() => 503));
    for (const answer of answers) expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
    // The service's retries, once Postgres is back (the pool opens new connections).
    for (const request of requests) {
      await until(async () => (await webhooks.handle(request)).status === 202, 'a 202 after Postgres came back');
    }
    expect(await jobsOf(options.name!)).toHaveLength(8);
  });

  it('Postgres restarted under a listening worker: no unhandled rejection; it listens again and is woken', {
    timeout: 60_000,
  }, async () => {
    await expectNoUnhandledRejection(async () => {
      const options = testQueueOptions();
      const receiver = queuedWebhooks(boss, options);
      track(receiver.queue);
      const worker = queuedWebhooks(other, options);
      track(worker.queue);
      worker.queue.startWorker(worker.webhooks, NO_POLLING);
      await until(async () => (await listeners()).length > 0, 'the worker to listen', 20_000);
      const [first] = await listeners();
      await server.stop('fast');
      await server.start();
      // A new listening connection (the old one ended with the server).
      await until(
        async () => (await listeners()).some((listener) => listener.pid !== first!.pid),
        'the worker to listen again',
        20_000,
      );
      const request = signed();
      await until(async () => (await receiver.webhooks.handle(request)).status === 202, 'the delivery to be stored');
      await until(() => worker.runs.some((run) => run.eventId === request.event.id), 'the job to run', 20_000);
      expect(worker.errors.map(({ error }) => error.code)).toContain('QUEUE_UNAVAILABLE');
    });
  });
});
