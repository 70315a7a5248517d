/**
 * Queued processing on pg-boss, on a real Postgres: every adapter answers 202 once the job is
 * stored, workers run the handlers, failures are retried with backoff and end as dead letters,
 * Postgres away answers 503 and acknowledges nothing, and with transactions a job run twice has its
 * effects once.
 */

import { inspect } from 'node:util';
import { Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { migrate, PostgresTransactions } from '@pixhook/postgres';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import {
  jobCounts,
  jobState,
  QUICK,
  queuedWebhooks,
  SECRET,
  signed,
  sleep,
  startBoss,
  testQueueOptions,
  uniqueName,
  until,
} from './helpers/pg-boss.js';

describeWithPostgres('queued processing on pg-boss', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  let pool: pg.Pool;
  const toClose: { close(): Promise<unknown> }[] = [];
  const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
    toClose.push(thing);
    return thing;
  };

  beforeAll(async () => {
    server = await startPostgresServer();
    ({ boss } = await startBoss(server.url));
    pool = new pg.Pool({ connectionString: server.url, max: 10 });
    pool.on('error', () => {});
    await migrate(pool);
  });
  afterEach(async () => {
    server.resume();
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await pool?.end();
    await server?.close();
  });

  it.each(ADAPTERS.map((adapter) => [adapter.name, adapter] as const))(
    '%s answers 202 once the job is stored; a worker runs the handlers with context.job',
    async (_, adapter) => {
      const options = testQueueOptions();
      const { queue, webhooks, runs } = queuedWebhooks(boss, options);
      track(queue);
      const client = track(await adapter.create(webhooks));
      const request = signed();
      const answer = await client.send(request);
      expect(answer.status).toBe(202);
      expect(answer.json).toEqual({ received: true, queued: true });
      // Stored before the answer, not run in the request.
      expect(await jobState(boss, options.name!, request.event.id)).toBe('created');
      expect(runs).toEqual([]);
      // Refused requests queue nothing: a forgery, a GET; a duplicate of the same event adds nothing.
      const forged = signed();
      forged.headers['x-service-signature'] = forged.headers['x-service-signature']!.replace(
        /v1=\w+/,
        `v1=${'0'.repeat(64)}`,
      );
      expect((await client.send(forged)).status).toBe(400);
      expect((await client.send({ method: 'GET' })).status).toBe(405);
      expect((await client.send(request)).status).toBe(202);
      expect(await jobCounts(boss, options.name!)).toEqual({ created: 1 });

      queue.startWorker(webhooks, QUICK);
      await until(() => runs.length === 1, 'the handler');
      const { context } = runs[0]!;
      expect(runs[0]!.eventId).toBe(request.event.id);
      expect(context.deliveryId).toBe(request.headers['x-service-delivery']);
      expect(context.timestamp).toBe(Number(/t=(\d+)/.exec(request.headers['x-service-signature']!)![1]));
      expect(context.request).toBeUndefined();
      expect(context.job).toEqual({
        engine: 'pg-boss',
        jobId: pgBossJobIdFor(request.event.id),
        attempt: 1,
        maxAttempts: 3,
        queuedAt: expect.any(Number),
        queueName: options.name,
      });
      expect(Math.abs(context.job!.queuedAt - Date.now())).toBeLessThan(10_000);
      await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    },
  );

  it('a delivery of an event already queued, running or done answers 202 without a second job', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const options = testQueueOptions();
    const { queue, webhooks, runs } = queuedWebhooks(boss, options, () => gate);
    track(queue);
    const request = signed();
    // Queued: several at once, and again.
    const answers = await Promise.all(Array.from({ length: 5 }, () => webhooks.handle(request)));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    expect(await jobCounts(boss, options.name!)).toEqual({ created: 1 });
    queue.startWorker(webhooks, { ...QUICK, concurrency: 4 });
    // Running.
    await until(() => runs.length === 1, 'the run');
    expect(await jobState(boss, options.name!, request.event.id)).toBe('active');
    expect((await webhooks.handle(request)).status).toBe(202);
    release();
    // Done.
    await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    expect((await webhooks.handle(request)).status).toBe(202);
    await sleep(300);
    expect(runs).toHaveLength(1);
    expect(await jobCounts(boss, options.name!)).toEqual({ completed: 1 });
  });

  it('a slow handler does not hold the answer: 202 first, the handler ends later', async () => {
    // The handler is held until the answer has come: an answer that waited for it would never come.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ended: string[] = [];
    const { queue, webhooks, runs } = queuedWebhooks(boss, testQueueOptions(), async (event) => {
      await held;
      ended.push(event.id);
    });
    track(queue);
    queue.startWorker(webhooks, QUICK);
    const request = signed();
    const answer = await webhooks.handle(request);
    expect(answer.status).toBe(202);
    await until(() => runs.length === 1, 'the handler to start');
    expect(ended).toEqual([]);
    release();
    await until(() => ended.length === 1, 'the handler to end');
    expect(ended).toEqual([request.event.id]);
  });

  it('a handler failing its first 2 runs is processed on run 3, after exponential backoff', async () => {
    const options = testQueueOptions({ attempts: 4, backoff: { type: 'exponential', delayMs: 1_000 } });
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options, (_event, _context, run) => {
      if (run <= 2) throw new Error(`flaky run ${run}`);
    });
    track(queue);
    queue.startWorker(webhooks, QUICK);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(202);
    await until(
      async () => (await jobState(boss, options.name!, request.event.id)) === 'completed',
      'completion',
      30_000,
    );
    expect(runs.map((run) => run.context.job?.attempt)).toEqual([1, 2, 3]);
    expect(runs.map((run) => run.context.job?.maxAttempts)).toEqual([4, 4, 4]);
    const waits = [runs[1]!.at - runs[0]!.at, runs[2]!.at - runs[1]!.at];
    // pg-boss waits 1–2 s, then 2–4 s (its jitter is part of the doubling): the second at least
    // twice the first delay, the first within its own range (plus a polling interval and a busy
    // machine's delays).
    expect(waits[0]).toBeGreaterThanOrEqual(950);
    expect(waits[0]).toBeLessThan(3_500);
    expect(waits[1]).toBeGreaterThanOrEqual(1_950);
    expect(errors.map(({ error, attempt }) => [error.code, attempt])).toEqual([
      ['HANDLER_FAILED', 1],
      ['HANDLER_FAILED', 2],
    ]);
    expect(await queue.countDeadLetters()).toBe(0);
  });

  it('a fixed backoff waits the same each time', async () => {
    const options = testQueueOptions({ attempts: 3, backoff: { type: 'fixed', delayMs: 2_000 } });
    const { queue, webhooks, runs } = queuedWebhooks(boss, options, (_event, _context, run) => {
      if (run <= 2) throw new Error(`flaky run ${run}`);
    });
    track(queue);
    queue.startWorker(webhooks, QUICK);
    await webhooks.handle(signed());
    await until(() => runs.length === 3, 'three runs', 30_000);
    const waits = [runs[1]!.at - runs[0]!.at, runs[2]!.at - runs[1]!.at];
    // 2 s each (exponential would wait 4 s or more the second time); the rest of the upper bound
    // is a polling interval and a busy machine's delays.
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(1_950);
      expect(wait).toBeLessThan(3_800);
    }
  });

  it('a handler that always fails leaves a dead letter after its attempts; retried from code it runs once more', async () => {
    let broken = true;
    const options = testQueueOptions();
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options, () => {
      if (broken) throw new Error('billing API down');
    });
    track(queue);
    queue.startWorker(webhooks, QUICK);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(runs).toHaveLength(3);
    expect(errors.at(-1)?.error.message).toMatch(/attempt 3 of 3; no attempts remain.*dead letter/);

    const [letter] = await queue.listDeadLetters();
    const jobId = pgBossJobIdFor(request.event.id);
    expect(letter).toMatchObject({
      jobId,
      attemptsMade: 3,
      error: 'billing API down',
      delivery: { event: request.event, deliveryId: request.headers['x-service-delivery'] },
    });
    expect(letter?.stack).toContain('billing API down');
    expect(letter?.failedAt).toBeGreaterThanOrEqual(letter!.queuedAt);
    expect(await queue.getDeadLetter(request.event.id)).toEqual(letter);
    expect(await queue.getDeadLetter(jobId)).toEqual(letter);
    expect(await queue.getDeadLetter(jobId.toUpperCase())).toEqual(letter);
    // The service's re-delivery of a dead-lettered event adds nothing.
    expect((await webhooks.handle(request)).status).toBe(202);
    expect(await queue.countDeadLetters()).toBe(1);
    expect(await jobCounts(boss, options.name!)).toEqual({ failed: 1 });

    broken = false;
    expect(await queue.retryDeadLetter(request.event.id)).toBe(true);
    await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    expect(runs).toHaveLength(4);
    // With all its attempts anew.
    expect(runs[3]!.context.job).toMatchObject({ attempt: 1, maxAttempts: 3 });
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await queue.retryDeadLetter(request.event.id)).toBe(false);
    expect(await queue.getDeadLetter(request.event.id)).toBeUndefined();
  });

  it('dead letters are discarded one by one or all at once, and retried all at once', async () => {
    let broken = true;
    const options = testQueueOptions({ attempts: 1 });
    const { queue, webhooks, runs } = queuedWebhooks(boss, options, () => {
      if (broken) throw 'not an Error';
    });
    track(queue);
    const worker = queue.startWorker(webhooks, { ...QUICK, concurrency: 4 });
    const requests = Array.from({ length: 5 }, () => signed());
    for (const request of requests) expect((await webhooks.handle(request)).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 5, 'five dead letters');
    expect((await queue.getDeadLetter(requests[0]!.event.id))?.error).toMatch(
      /threw a string \(not an Error\) instead of an Error/,
    );

    expect(await queue.discardDeadLetter(requests[0]!.event.id)).toBe(true);
    expect(await queue.discardDeadLetter(requests[0]!.event.id)).toBe(false);
    expect(await queue.listDeadLetters({ limit: 2 })).toHaveLength(2);
    expect(await queue.listDeadLetters({ offset: 3 })).toHaveLength(1);
    const all = await queue.listDeadLetters();
    expect(all.map((letter) => letter.failedAt)).toEqual(
      all.map((letter) => letter.failedAt).sort((a, b) => (b ?? 0) - (a ?? 0)),
    );
    await expect(queue.listDeadLetters({ limit: 0 })).rejects.toThrow(/limit ≥ 1/);
    await expect(queue.getDeadLetter('')).rejects.toThrow(/non-empty string/);

    broken = false;
    expect(await queue.retryAllDeadLetters()).toBe(4);
    await until(async () => (await jobCounts(boss, options.name!)).completed === 4, 'four completions');
    expect(runs).toHaveLength(9);
    expect(await queue.discardAllDeadLetters()).toBe(0);
    await worker.close();

    // A discarded event's id is free again: a later delivery of it is queued anew.
    broken = true;
    expect((await webhooks.handle(requests[0]!)).status).toBe(202);
    const more = [signed(), signed()];
    for (const request of more) await webhooks.handle(request);
    queue.startWorker(webhooks, QUICK);
    await until(async () => (await queue.countDeadLetters()) === 3, 'three dead letters');
    expect(await queue.discardAllDeadLetters()).toBe(3);
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await queue.retryAllDeadLetters()).toBe(0);
  });

  it('counts() gives the jobs waiting, running, delayed for a backoff and dead-lettered; engine and queueName name the queue', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = signed();
    const flaky = [signed(), signed()];
    // A retry waits a minute: the flaky events stay delayed unless the test moves their time. Each
    // state gets its own number of jobs, so that no two states can be mistaken for each other.
    const options = testQueueOptions({ attempts: 2, backoff: { type: 'fixed', delayMs: 60_000 } });
    const { queue, webhooks, runs } = queuedWebhooks(boss, options, (event) => {
      if (flaky.some((request) => request.event.id === event.id)) throw new Error('flaky');
      if (event.id === held.event.id) return gate;
    });
    track(queue);
    expect(queue.engine).toBe('pg-boss');
    expect(queue.queueName).toBe(options.name);
    expect(track(new PgBossQueue(boss)).queueName).toBe('pixhook-webhooks');
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, deadLetter: 0 });

    // One worker slot: the held event keeps it busy, so the events queued after it wait.
    queue.startWorker(webhooks, { ...QUICK, concurrency: 1 });
    for (const request of flaky) expect((await webhooks.handle(request)).status).toBe(202);
    // Jobs that hold no pixhook delivery are failed at once: three dead letters.
    for (let i = 0; i < 3; i++) await boss.send(options.name!, { hello: 'world' }, { retryLimit: 1 });
    await until(async () => {
      const counts = await jobCounts(boss, options.name!);
      return counts.retry === 2 && counts.failed === 3;
    }, 'the flaky events to wait for their retry and the foreign jobs to fail');
    expect((await webhooks.handle(held)).status).toBe(202);
    await until(() => runs.some((run) => run.eventId === held.event.id), 'the held event to run');
    for (let i = 0; i < 4; i++) expect((await webhooks.handle(signed())).status).toBe(202);
    expect(await queue.counts()).toEqual({ waiting: 4, active: 1, delayed: 2, deadLetter: 3 });

    // A retry whose backoff has passed is waiting again, for the next free worker.
    await boss
      .getDb()
      .executeSql(`UPDATE pgboss.job SET start_after = now() - interval '1 second' WHERE name = $1 AND id = $2`, [
        options.name,
        pgBossJobIdFor(flaky[0]!.event.id),
      ]);
    expect(await queue.counts()).toEqual({ waiting: 5, active: 1, delayed: 1, deadLetter: 3 });

    release();
    await until(async () => (await jobCounts(boss, options.name!)).completed === 5, 'five completions');
    await until(async () => (await queue.countDeadLetters()) === 4, 'the retried flaky event to be a dead letter');
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 1, deadLetter: 4 });
  });

  it('a job that holds no pixhook delivery is failed at once, without running handlers', async () => {
    const options = testQueueOptions({ attempts: 5 });
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options);
    track(queue);
    queue.startWorker(webhooks, QUICK);
    await until(async () => (await boss.getQueue(options.name!)) !== null, 'the queue to be created');
    const id = await boss.send(options.name!, { hello: 'world' }, { retryLimit: 4 });
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(runs).toEqual([]);
    expect(errors.map(({ error }) => error.code)).toEqual(['INTERNAL_ERROR']);
    expect(await queue.getDeadLetter(id!)).toMatchObject({
      jobId: id,
      delivery: undefined,
      attemptsMade: 1,
      error: expect.stringMatching(/does not hold a pixhook delivery/),
    });
  });

  it('odd event ids get their own job ids and are still de-duplicated', async () => {
    const options = testQueueOptions();
    const { queue, webhooks, runs } = queuedWebhooks(boss, options);
    track(queue);
    const odd = ['evt_with:colon', `evt_${'x'.repeat(300)}`, 'evt_ünïcode', 'evt_quote\'"', 'evt_123'];
    for (const id of odd) {
      const request = signed(createTestEvent('image.created', {}, { id }) as never);
      expect((await webhooks.handle(request)).status).toBe(202);
      expect((await webhooks.handle(request)).status).toBe(202);
    }
    expect(new Set(odd.map(pgBossJobIdFor)).size).toBe(odd.length);
    expect(pgBossJobIdFor('evt_123')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    queue.startWorker(webhooks, { ...QUICK, concurrency: 4 });
    await until(() => runs.length === odd.length, 'five runs');
    await sleep(300);
    expect(runs.map((run) => run.eventId).sort()).toEqual([...odd].sort());
    expect(runs.map((run) => run.context.job?.jobId).sort()).toEqual(odd.map(pgBossJobIdFor).sort());
  });

  it('with transactions, a job run twice has its effects once', async () => {
    await pool.query('CREATE TABLE IF NOT EXISTS thumbnails (event_id text NOT NULL, n int NOT NULL)');
    const options = testQueueOptions();
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: SECRET, queue, transactions: new PostgresTransactions(pool) });
    const runs: string[] = [];
    webhooks.on('image.created', async (event, { transaction, job }) => {
      runs.push(event.id);
      await transaction.query('INSERT INTO thumbnails (event_id, n) VALUES ($1, $2)', [event.id, job!.attempt]);
      // The first run fails after its insert: rolled back, and the retry inserts again.
      if (job!.attempt === 1) throw new Error('thumbnail service down');
    });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    queue.startWorker(webhooks, QUICK);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(202);
    await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    const rows = async () =>
      (await pool.query('SELECT n FROM thumbnails WHERE event_id = $1', [request.event.id])).rows.map((row) => row.n);
    expect(await rows()).toEqual([2]);
    expect(runs).toHaveLength(2);

    // pg-boss runs the job again after its commit (as when a worker dies between the commit and
    // complete(), and the job expires): the event is recorded, the handler is not run.
    await boss
      .getDb()
      .executeSql(`UPDATE pgboss.job SET state = 'retry', start_after = now() WHERE name = $1 AND id = $2`, [
        options.name,
        pgBossJobIdFor(request.event.id),
      ]);
    await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    expect(runs).toHaveLength(2);
    expect(await rows()).toEqual([2]);
    expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED']);
  });

  it('the service re-delivering an event pg-boss has archived adds no job; archived dead letters are still listed, retried and discarded', async () => {
    // A boss of its own, in its own schema, that archives finished jobs after a second.
    const schema = 'pgboss_archive';
    const { boss: archiving } = await startBoss(server.url, {
      schema,
      archiveCompletedAfterSeconds: 1,
      archiveFailedAfterSeconds: 1,
    });
    try {
      let broken = false;
      const options = testQueueOptions({ schema, attempts: 2 });
      const { queue, webhooks, runs } = queuedWebhooks(archiving, options, () => {
        if (broken) throw new Error('still broken');
      });
      track(queue);
      queue.startWorker(webhooks, QUICK);
      const done = signed();
      await webhooks.handle(done);
      await until(() => runs.length === 1, 'the run');
      await until(
        async () => (await archiving.getJobById(options.name!, pgBossJobIdFor(done.event.id))) === null,
        'the job to be archived',
      );
      expect((await webhooks.handle(done)).status).toBe(202);
      await sleep(400);
      expect(runs).toHaveLength(1);
      expect(await jobCounts(archiving, options.name!, schema)).toEqual({});

      broken = true;
      const failing = signed();
      const discarded = signed();
      await webhooks.handle(failing);
      await webhooks.handle(discarded);
      const jobId = pgBossJobIdFor(failing.event.id);
      await until(
        async () =>
          (await queue.countDeadLetters()) === 2 &&
          Object.keys(await jobCounts(archiving, options.name!, schema)).length === 0,
        'the dead letters to be archived',
      );
      expect(await queue.countDeadLetters()).toBe(2);
      // Archived dead letters count as dead letters.
      expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, deadLetter: 2 });
      expect(await queue.getDeadLetter(failing.event.id)).toMatchObject({ jobId, attemptsMade: 2 });
      expect((await queue.listDeadLetters()).map((letter) => letter.jobId).sort()).toEqual(
        [jobId, pgBossJobIdFor(discarded.event.id)].sort(),
      );
      expect((await webhooks.handle(failing)).status).toBe(202);
      expect(await jobCounts(archiving, options.name!, schema)).toEqual({});
      broken = false;
      expect(await queue.retryDeadLetter(failing.event.id)).toBe(true);
      await until(() => runs.filter((run) => run.eventId === failing.event.id).length === 3, 'the retried run');
      expect(runs.at(-1)!.context.job).toMatchObject({ attempt: 1, maxAttempts: 2 });
      expect(await queue.countDeadLetters()).toBe(1);
      expect(await queue.discardDeadLetter(discarded.event.id)).toBe(true);
      expect(await queue.countDeadLetters()).toBe(0);
    } finally {
      await archiving.stop({ graceful: false, wait: true });
    }
  });

  it('instances creating the queue at the same moment all store their deliveries', async () => {
    // pg-boss 10's createQueue() run at once on two connections for one new queue often ends in a
    // deadlock Postgres breaks by aborting one: that one is retried once the other created the queue.
    // (Queues of one boss in one process share the creation.)
    const { boss: other } = await startBoss(server.url);
    try {
      for (let round = 0; round < 3; round++) {
        const name = uniqueName('race');
        const instances = [boss, other, boss].map((each) => queuedWebhooks(each, testQueueOptions({ name })));
        for (const { queue } of instances) track(queue);
        const answers = await Promise.all(instances.map(({ webhooks }) => webhooks.handle(signed())));
        expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202]);
        expect(instances.flatMap(({ errors }) => errors)).toEqual([]);
        expect(await jobCounts(boss, name)).toEqual({ created: 3 });
      }
    } finally {
      for (const thing of toClose.splice(0).reverse()) await thing.close();
      await other.stop({ graceful: false, wait: true });
    }
  });

  it('engine errors are told to onError at most once per 10 s, and never crash the process', async () => {
    const { queue, webhooks, errors } = queuedWebhooks(boss, testQueueOptions());
    track(queue);
    const worker = queue.startWorker(webhooks, QUICK);
    boss.emit('error', new Error('connection terminated unexpectedly'));
    boss.emit('error', new Error('connection terminated unexpectedly'));
    expect(errors.map(({ error }) => error.code)).toEqual(['QUEUE_UNAVAILABLE']);
    expect((errors[0]!.error.cause as Error).message).toBe('connection terminated unexpectedly');
    await worker.close();
    // Closed, the worker no longer listens.
    boss.emit('error', new Error('later'));
    expect(errors).toHaveLength(1);
  });

  it('a queue with another policy, a wrong schema, a deleted queue or a boss not started: 503 that says why', async () => {
    const errors: string[] = [];
    const refuse = async (queue: PgBossQueue) => {
      const webhooks = new Webhooks({ secret: SECRET, queue });
      webhooks.onError((error) => void errors.push(String((error.cause as Error)?.message)));
      const answer = await webhooks.handle(signed());
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
    };
    const short = uniqueName('short');
    await boss.createQueue(short, { name: short, policy: 'short' });
    await refuse(track(new PgBossQueue(boss, { name: short })));
    expect(errors.at(-1)).toMatch(/has the policy "short"; pixhook needs "standard"/);

    await refuse(track(new PgBossQueue(boss, { schema: 'not_pgboss' })));
    expect(errors.at(-1)).toMatch(/pg-boss's tables are not in the schema "not_pgboss"/);

    // The queue deleted under a running receiver: pg-boss's send() stores nothing and says so with
    // null, as for a duplicate; pixhook tells them apart, answers 503 and creates the queue again.
    const options = testQueueOptions();
    const deleted = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: SECRET, queue: deleted });
    webhooks.onError((error) => void errors.push(String((error.cause as Error)?.message)));
    expect((await webhooks.handle(signed())).status).toBe(202);
    await boss.purgeQueue(options.name!);
    await boss.deleteQueue(options.name!);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(503);
    expect(errors.at(-1)).toMatch(/stored no job for this event and holds none: was the queue .* deleted/);
    expect((await webhooks.handle(request)).status).toBe(202);
    expect(await jobState(boss, options.name!, request.event.id)).toBe('created');

    const idle = new PgBoss(server.url);
    idle.on('error', () => {});
    await refuse(track(new PgBossQueue(idle)));
    expect(errors.at(-1)).toMatch(/not started/);
    await expect(track(new PgBossQueue(idle)).counts()).rejects.toThrow(/not started/);

    // Stopped after the queue was in use.
    const { boss: stopped } = await startBoss(server.url);
    const late = track(new PgBossQueue(stopped, testQueueOptions()));
    const lateWebhooks = new Webhooks({ secret: SECRET, queue: late });
    lateWebhooks.onError((error) => void errors.push(String((error.cause as Error)?.message)));
    expect((await lateWebhooks.handle(signed())).status).toBe(202);
    late.startWorker(lateWebhooks, QUICK);
    expect(inspect(late)).toContain('workers: 1');
    await stopped.stop({ graceful: false, wait: true });
    // The boss stopped: its workers here stop polling.
    await until(() => inspect(late).includes('workers: 0'), 'the worker to close');
    expect((await lateWebhooks.handle(signed())).status).toBe(503);
    expect(errors.at(-1)).toMatch(/not started \(or was stopped\)/);
  });

  it('Postgres stopped: 503 QUEUE_UNAVAILABLE at once and nothing acknowledged; back: the retry is queued and runs', async () => {
    // A long enqueueTimeoutMs: "at once" is well before it, whatever the machine's load.
    const options = testQueueOptions({ enqueueTimeoutMs: 9_000 });
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options);
    track(queue);
    expect((await webhooks.handle(signed())).status).toBe(202);
    await server.stop('fast');
    const request = signed();
    try {
      const started = performance.now();
      const answer = await webhooks.handle(request);
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
      expect(errors.map(({ error }) => error.code)).toContain('QUEUE_UNAVAILABLE');
    } finally {
      await server.start();
    }
    // The service's retry, once Postgres is back (the pool opens new connections).
    await until(async () => (await webhooks.handle(request)).status === 202, 'a 202 after Postgres came back');
    queue.startWorker(webhooks, QUICK);
    await until(() => runs.some((run) => run.eventId === request.event.id), 'the retried event to run');
    await until(async () => (await jobCounts(boss, options.name!)).completed === 2, 'both jobs completed');
  });

  it('Postgres frozen: 503 within enqueueTimeoutMs, well inside the 10-second deadline', async () => {
    const { queue, webhooks } = queuedWebhooks(boss, testQueueOptions({ enqueueTimeoutMs: 300 }));
    track(queue);
    expect((await webhooks.handle(signed())).status).toBe(202);
    server.pause();
    let took: number;
    let status: number;
    try {
      const started = performance.now();
      status = (await webhooks.handle(signed())).status;
      took = performance.now() - started;
    } finally {
      server.resume();
    }
    expect(status).toBe(503);
    expect(took).toBeGreaterThanOrEqual(290);
    // A frozen Postgres would hold it for ever; the margin is a busy machine's, inside the 10 s.
    expect(took).toBeLessThan(5_000);
  });

  it('worker.close() waits for running handlers; past shutdownTimeoutMs it lets go and the job runs again elsewhere', async () => {
    const ended: string[] = [];
    const options = testQueueOptions();
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options, async (event, _context, run) => {
      await sleep(run === 1 ? 400 : 800);
      ended.push(`${event.id}#${run}`);
    });
    track(queue);
    const first = queue.startWorker(webhooks, QUICK);
    const waited = signed();
    await webhooks.handle(waited);
    await until(() => runs.length === 1, 'the run');
    expect(first.running).toBe(1);
    expect(await first.close()).toBe(true);
    expect(first.running).toBe(0);
    expect(ended).toEqual([`${waited.event.id}#1`]);
    expect(await jobState(boss, options.name!, waited.event.id)).toBe('completed');
    expect(await first.close()).toBe(true);

    const impatient = queue.startWorker(webhooks, { ...QUICK, shutdownTimeoutMs: 50 });
    const request = signed();
    await webhooks.handle(request);
    await until(() => runs.length === 2, 'the second run');
    expect(await impatient.close()).toBe(false);
    expect(errors.map(({ error }) => error.code)).toContain('JOB_STALLED');
    // Let go: failed so pg-boss runs it again, with the next attempt.
    expect(await jobState(boss, options.name!, request.event.id)).toBe('retry');
    queue.startWorker(webhooks, QUICK);
    await until(() => runs.length === 3, 'the job, run again');
    // The first run ends while the second runs: its end is not recorded over the second run.
    await until(() => ended.includes(`${request.event.id}#1`), 'the first run to end');
    expect(await jobState(boss, options.name!, request.event.id)).toBe('active');
    await until(async () => (await jobState(boss, options.name!, request.event.id)) === 'completed', 'completion');
    expect(runs.slice(1).map((run) => run.context.job?.attempt)).toEqual([1, 2]);
  });

  it('checks its options when built, and never shows the connection string', async () => {
    const queue = (options: unknown) => new PgBossQueue(boss, options as never);
    expect(() => new PgBossQueue({} as never)).toThrow(/needs a PgBoss instance/);
    expect(() => new PgBossQueue(undefined as never)).toThrow(TypeError);
    expect(() => queue(5)).toThrow(/options must be an object/);
    expect(() => queue({ attempts: 0 })).toThrow(RangeError);
    expect(() => queue({ attempts: 0 })).toThrow(/attempts must be from 1 to 1000; got 0/);
    expect(() => queue({ attempts: 1.5 })).toThrow(/attempts must be a whole number/);
    expect(() => queue({ enqueueTimeoutMs: 10_000 })).toThrow(/enqueueTimeoutMs must be from 1 to 9000/);
    expect(() => queue({ name: 'a b' })).toThrow(/name must be letters, digits/);
    expect(() => queue({ name: 7 })).toThrow(/name must be a string/);
    expect(() => queue({ schema: 'pg-boss' })).toThrow(/schema must be pg-boss's schema name/);
    expect(() => queue({ atempts: 3 })).toThrow(/Did you mean "attempts"/);
    expect(() => queue({ keepCompletedMs: 1 })).toThrow(/no option "keepCompletedMs"/);
    expect(() => queue({ backoff: { type: 'linear', delayMs: 1_000 } })).toThrow(/backoff.type/);
    expect(() => queue({ backoff: { type: 'fixed', delayMs: 1_500 } })).toThrow(/multiple of 1000/);
    expect(() => queue({ backoff: { type: 'exponential', delayMs: 0 } })).toThrow(/backoff.delayMs must be from 1000/);
    expect(() => queue({ backoff: { type: 'fixed' } })).toThrow(/delayMs is required/);
    expect(() => queue({ backoff: { type: 'fixed', delayMs: 0, jitter: 0.5 } })).toThrow(/no option "jitter"/);
    expect(() => queue({ expireInMs: 500 })).toThrow(/expireInMs must be from 1000/);
    expect(() => queue({ expireInMs: 24 * 3_600_000 })).toThrow(RangeError);
    expect(() => queue({ expireInMs: 1_500 })).toThrow(/multiple of 1000/);
    const fine = queue({ name: 'my.queue_1-a', attempts: 1, enqueueTimeoutMs: 9_000, expireInMs: 60_000 });
    expect(fine.enqueueTimeoutMs).toBe(9_000);
    expect(new PgBossQueue(boss).enqueueTimeoutMs).toBe(2_000);
    expect(new PgBossQueue(boss).name).toBe('pixhook-webhooks');

    const { webhooks } = queuedWebhooks(boss, testQueueOptions());
    expect(() => fine.startWorker({} as never)).toThrow(/needs the Webhooks/);
    expect(() => fine.startWorker(webhooks, { concurrency: 0 })).toThrow(/concurrency must be from 1/);
    expect(() => fine.startWorker(webhooks, { pollingIntervalMs: 10 })).toThrow(/pollingIntervalMs must be from 100/);
    expect(() => fine.startWorker(webhooks, { concurency: 2 } as never)).toThrow(/Did you mean "concurrency"/);

    // A boss with a password in its connection string, and no error listener of its own.
    const secretUrl = server.url.replace('postgres@', 'postgres:hunter2@');
    const guarded = new PgBoss(secretUrl);
    const shown = new PgBossQueue(guarded, { name: 'shown' });
    expect(inspect(shown)).toContain('shown');
    expect(inspect(shown)).not.toContain('hunter2');
    expect(inspect({ queue: shown }, { depth: 5, showHidden: true })).not.toContain('hunter2');
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      guarded.emit('error', new Error(`could not connect to ${secretUrl}\u001b[31m`));
      guarded.emit('error', new Error('again'));
      expect(logged).toHaveBeenCalledTimes(1);
      const line = String(logged.mock.calls[0]![0]);
      expect(line).toContain('postgres:***@');
      expect(line).not.toContain('hunter2');
      expect(line).not.toContain('\u001b');
    } finally {
      logged.mockRestore();
    }
    await shown.close();
    expect(guarded.listenerCount('error')).toBe(0);
  });
});
