/**
 * Queued processing on a real redis-server: every adapter answers 202 once the job is stored,
 * workers run the handlers, failures are retried with backoff and end as dead letters, Redis away
 * answers 503 and acknowledges nothing.
 */

import { BullMQQueue, jobIdFor } from '@pixhook/bullmq';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, testQueueOptions, until } from './helpers/queues.js';

describeWithRedis('queued processing on BullMQ', () => {
  let server: RedisServer;
  const toClose: { close(): Promise<unknown> }[] = [];
  const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
    toClose.push(thing);
    return thing;
  };

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterEach(async () => {
    server.resume();
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(ADAPTERS.map((adapter) => [adapter.name, adapter] as const))(
    '%s answers 202 once the job is stored; a worker runs the handlers with context.job',
    async (_, adapter) => {
      const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port));
      track(queue);
      const client = track(await adapter.create(webhooks));
      const request = signed();
      const answer = await client.send(request);
      expect(answer.status).toBe(202);
      expect(answer.json).toEqual({ received: true, queued: true });
      // Stored before the answer, not run in the request.
      expect(await queue.bullQueue.getJobState(request.event.id)).toBe('waiting');
      expect(runs).toEqual([]);
      // Refused requests queue nothing: a forgery, a GET, a duplicate of the same event.
      const forged = signed();
      forged.headers['x-service-signature'] = forged.headers['x-service-signature']!.replace(
        /v1=\w+/,
        `v1=${'0'.repeat(64)}`,
      );
      expect((await client.send(forged)).status).toBe(400);
      expect((await client.send({ method: 'GET' })).status).toBe(405);
      expect((await client.send(request)).status).toBe(202);
      expect(await queue.bullQueue.getJobCounts('waiting')).toEqual({ waiting: 1 });

      queue.startWorker(webhooks);
      await until(() => runs.length === 1, 'the handler');
      const { context } = runs[0]!;
      expect(runs[0]!.eventId).toBe(request.event.id);
      expect(context.deliveryId).toBe(request.headers['x-service-delivery']);
      expect(context.timestamp).toBe(Number(/t=(\d+)/.exec(request.headers['x-service-signature']!)![1]));
      expect(context.request).toBeUndefined();
      expect(context.job).toEqual({
        engine: 'bullmq',
        jobId: request.event.id,
        attempt: 1,
        maxAttempts: 3,
        queuedAt: expect.any(Number),
        queueName: queue.queueName,
      });
      await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
    },
  );

  it('a delivery of an event already queued, running or done answers 202 without a second job', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port), () => gate);
    track(queue);
    const request = signed();
    // Queued: several at once, and again.
    const answers = await Promise.all(Array.from({ length: 5 }, () => webhooks.handle(request)));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 202, 202]);
    queue.startWorker(webhooks);
    // Running.
    await until(() => runs.length === 1, 'the run');
    expect((await webhooks.handle(request)).status).toBe(202);
    release();
    // Done.
    await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
    expect((await webhooks.handle(request)).status).toBe(202);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs).toHaveLength(1);
    expect(await queue.bullQueue.getJobCounts('waiting', 'active', 'delayed', 'completed')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      completed: 1,
    });
  });

  it('a slow handler does not hold the answer: 202 first, the handler ends later', async () => {
    // The handler is held until the answer has come: an answer that waited for it would never come.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ended: string[] = [];
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port), async (event) => {
      await held;
      ended.push(event.id);
    });
    track(queue);
    queue.startWorker(webhooks);
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
    const { queue, webhooks, runs, errors } = queuedWebhooks(
      testQueueOptions(server.port, { attempts: 4, backoff: { type: 'exponential', delayMs: 1_000 } }),
      (_event, _context, run) => {
        if (run <= 2) throw new Error(`flaky run ${run}`);
      },
    );
    track(queue);
    queue.startWorker(webhooks);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(202);
    await until(
      async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed',
      'completion',
      30_000,
    );
    expect(runs.map((run) => run.context.job?.attempt)).toEqual([1, 2, 3]);
    const waits = [runs[1]!.at - runs[0]!.at, runs[2]!.at - runs[1]!.at];
    // 1 s, then 2 s: each wait at least its delay, the second longer than the first (by more than
    // a busy machine's delays).
    expect(waits[0]).toBeGreaterThanOrEqual(995);
    expect(waits[1]).toBeGreaterThanOrEqual(1_995);
    expect(waits[1]).toBeGreaterThan(waits[0]!);
    expect(errors.map(({ error, attempt }) => [error.code, attempt])).toEqual([
      ['HANDLER_FAILED', 1],
      ['HANDLER_FAILED', 2],
    ]);
    expect(await queue.countDeadLetters()).toBe(0);
  });

  it('a handler that always fails leaves a dead letter after its attempts; retried from code it runs once more', async () => {
    let broken = true;
    const { queue, webhooks, runs, errors } = queuedWebhooks(testQueueOptions(server.port), () => {
      if (broken) throw new Error('billing API down');
    });
    track(queue);
    queue.startWorker(webhooks);
    const request = signed();
    expect((await webhooks.handle(request)).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(runs).toHaveLength(3);
    expect(errors.at(-1)?.error.message).toMatch(/attempt 3 of 3; no attempts remain.*dead letter/);

    const [letter] = await queue.listDeadLetters();
    expect(letter).toMatchObject({
      jobId: request.event.id,
      attemptsMade: 3,
      error: 'billing API down',
      delivery: { event: request.event, deliveryId: request.headers['x-service-delivery'] },
    });
    expect(letter?.stack).toContain('billing API down');
    expect(letter?.failedAt).toBeGreaterThanOrEqual(letter!.queuedAt);
    expect(await queue.getDeadLetter(request.event.id)).toEqual(letter);
    // The service's re-delivery of a dead-lettered event adds nothing.
    expect((await webhooks.handle(request)).status).toBe(202);
    expect(await queue.countDeadLetters()).toBe(1);

    broken = false;
    expect(await queue.retryDeadLetter(request.event.id)).toBe(true);
    await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
    expect(runs).toHaveLength(4);
    // With all its attempts anew.
    expect(runs[3]!.context.job?.attempt).toBe(1);
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await queue.retryDeadLetter(request.event.id)).toBe(false);
    expect(await queue.getDeadLetter(request.event.id)).toBeUndefined();
  });

  it('dead letters are discarded one by one or all at once, and retried all at once', async () => {
    let broken = true;
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port, { attempts: 1 }), () => {
      if (broken) throw 'not an Error';
    });
    track(queue);
    const worker = queue.startWorker(webhooks, { concurrency: 4 });
    const requests = Array.from({ length: 5 }, () => signed());
    for (const request of requests) expect((await webhooks.handle(request)).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 5, 'five dead letters');
    expect((await queue.getDeadLetter(requests[0]!.event.id))?.error).toMatch(
      /threw a string \(not an Error\) instead of an Error/,
    );

    expect(await queue.discardDeadLetter(requests[0]!.event.id)).toBe(true);
    expect(await queue.discardDeadLetter(requests[0]!.event.id)).toBe(false);
    expect(await queue.listDeadLetters({ limit: 2 })).toHaveLength(2);
    expect((await queue.listDeadLetters({ offset: 3 })).length).toBe(1);

    broken = false;
    expect(await queue.retryAllDeadLetters()).toBe(4);
    await until(async () => (await queue.bullQueue.getCompletedCount()) === 4, 'four completions');
    expect(runs).toHaveLength(9);
    expect(await queue.discardAllDeadLetters()).toBe(0);
    await worker.close();

    broken = true;
    const more = [signed(), signed()];
    for (const request of more) await webhooks.handle(request);
    queue.startWorker(webhooks);
    await until(async () => (await queue.countDeadLetters()) === 2, 'two dead letters');
    expect(await queue.discardAllDeadLetters()).toBe(2);
    expect(await queue.countDeadLetters()).toBe(0);
  });

  it('counts() gives the jobs waiting, running, delayed for a backoff and dead-lettered; engine and queueName name the queue', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = signed();
    const flaky = [signed(), signed()];
    // A retry waits a minute: the flaky events stay delayed for the whole test. Each state gets its
    // own number of jobs, so that no two states can be mistaken for each other.
    const options = testQueueOptions(server.port, { attempts: 2, backoff: { type: 'fixed', delayMs: 60_000 } });
    const { queue, webhooks, runs } = queuedWebhooks(options, (event) => {
      if (flaky.some((request) => request.event.id === event.id)) throw new Error('flaky');
      if (event.id === held.event.id) return gate;
    });
    track(queue);
    expect(queue.engine).toBe('bullmq');
    expect(queue.queueName).toBe(options.name);
    expect(track(new BullMQQueue({ connection: options.connection })).queueName).toBe('pixhook-webhooks');
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, deadLetter: 0 });

    // One worker slot: the held event keeps it busy, so the events queued after it wait.
    queue.startWorker(webhooks, { concurrency: 1 });
    for (const request of flaky) expect((await webhooks.handle(request)).status).toBe(202);
    // Jobs that hold no pixhook delivery are failed at once: three dead letters.
    for (const id of ['evt_foreign_1', 'evt_foreign_2', 'evt_foreign_3']) {
      await queue.bullQueue.add('image.created', { hello: 'world' }, { jobId: id });
    }
    await until(
      async () => (await queue.bullQueue.getDelayedCount()) === 2 && (await queue.countDeadLetters()) === 3,
      'the flaky events delayed and the foreign jobs dead',
    );
    expect((await webhooks.handle(held)).status).toBe(202);
    await until(() => runs.some((run) => run.eventId === held.event.id), 'the held event to run');
    for (let i = 0; i < 4; i++) expect((await webhooks.handle(signed())).status).toBe(202);
    expect(await queue.counts()).toEqual({ waiting: 4, active: 1, delayed: 2, deadLetter: 3 });

    release();
    await until(async () => (await queue.bullQueue.getCompletedCount()) === 5, 'five completions');
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 2, deadLetter: 3 });
  });

  it('a job that holds no pixhook delivery is failed at once, without running handlers', async () => {
    const { queue, webhooks, runs, errors } = queuedWebhooks(testQueueOptions(server.port));
    track(queue);
    queue.startWorker(webhooks);
    await queue.bullQueue.add('image.created', { hello: 'world' }, { jobId: 'evt_foreign' });
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(runs).toEqual([]);
    expect(errors.map(({ error }) => error.code)).toEqual(['INTERNAL_ERROR']);
    expect(await queue.getDeadLetter('evt_foreign')).toMatchObject({ delivery: undefined, attemptsMade: 1 });
  });

  it('odd event ids get a hashed job id and are still de-duplicated', async () => {
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port));
    track(queue);
    const odd = [`evt_with:colon`, `evt_${'x'.repeat(300)}`, 'evt_ünïcode', 'evt_123'];
    for (const id of odd) {
      const request = signed(createTestEvent('image.created', {}, { id }) as never);
      expect((await webhooks.handle(request)).status).toBe(202);
      expect((await webhooks.handle(request)).status).toBe(202);
    }
    expect(odd.map(jobIdFor).map((id) => id.startsWith('sha256-'))).toEqual([true, true, true, false]);
    queue.startWorker(webhooks, { concurrency: 4 });
    await until(() => runs.length === 4, 'four runs');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs.map((run) => run.eventId).sort()).toEqual([...odd].sort());
    expect(runs.map((run) => run.context.job?.jobId).sort()).toEqual(odd.map(jobIdFor).sort());
  });

  it('Redis stopped: 503 QUEUE_UNAVAILABLE at once and nothing acknowledged; back: the retry is queued and runs', async () => {
    // A long enqueueTimeoutMs: "at once" is well before it, whatever the machine's load.
    const { queue, webhooks, runs, errors } = queuedWebhooks(
      testQueueOptions(server.port, { enqueueTimeoutMs: 9_000 }),
    );
    track(queue);
    expect((await webhooks.handle(signed())).status).toBe(202);
    await server.stop();
    const request = signed();
    const started = performance.now();
    const answer = await webhooks.handle(request);
    expect(performance.now() - started).toBeLessThan(4_000);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
    expect(errors.map(({ error }) => error.code)).toContain('QUEUE_UNAVAILABLE');
    await expect(queue.counts()).rejects.toThrow();

    await server.start();
    // The service's retry, once Redis is back (the connection comes back within its retry strategy).
    await until(async () => (await webhooks.handle(request)).status === 202, 'a 202 after Redis came back');
    queue.startWorker(webhooks);
    await until(() => runs.some((run) => run.eventId === request.event.id), 'the retried event to run');
  });

  it('Redis frozen: 503 within enqueueTimeoutMs, well inside the 10-second deadline', async () => {
    const { queue, webhooks } = queuedWebhooks(testQueueOptions(server.port, { enqueueTimeoutMs: 300 }));
    track(queue);
    expect((await webhooks.handle(signed())).status).toBe(202);
    server.pause();
    const started = performance.now();
    const answer = await webhooks.handle(signed());
    const took = performance.now() - started;
    server.resume();
    expect(answer.status).toBe(503);
    expect(took).toBeGreaterThanOrEqual(290);
    // A frozen Redis would hold it for ever; the margin is a busy machine's, inside the 10 s.
    expect(took).toBeLessThan(5_000);
  });

  it('worker.close() waits for running handlers; past shutdownTimeoutMs it lets go and the job runs again elsewhere', async () => {
    const ended: number[] = [];
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port), async (_event, _context, run) => {
      await new Promise((resolve) => setTimeout(resolve, run === 1 ? 400 : 10));
      ended.push(run);
    });
    track(queue);
    // Stall checks run at most once per stalledIntervalMs across the queue's workers: short for all.
    const quick = { lockDurationMs: 1_000, stalledIntervalMs: 200 };
    const first = queue.startWorker(webhooks, quick);
    await webhooks.handle(signed());
    await until(() => runs.length === 1, 'the run');
    expect(first.running).toBe(1);
    expect(await first.close()).toBe(true);
    expect(ended).toEqual([1]);

    const impatient = queue.startWorker(webhooks, { ...quick, shutdownTimeoutMs: 50 });
    const request = signed();
    await webhooks.handle(request);
    await until(() => runs.length === 2, 'the second run');
    expect(await impatient.close()).toBe(false);
    queue.startWorker(webhooks, quick);
    await until(
      async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed',
      'the job, run again',
      15_000,
    );
    expect(runs.filter((run) => run.eventId === request.event.id).length).toBeGreaterThanOrEqual(2);
  });

  it('checks its options when built', () => {
    const connection = { host: '127.0.0.1', port: server.port };
    expect(() => new BullMQQueue({} as never)).toThrow(/connection is required/);
    expect(() => new BullMQQueue({ connection, attempts: 0 })).toThrow(/attempts must be a whole number of at least 1/);
    expect(() => new BullMQQueue({ connection, enqueueTimeoutMs: 10_000 })).toThrow(/at most 9000/);
    expect(() => new BullMQQueue({ connection, name: 'a:b' })).toThrow(/without ':'/);
    expect(() => new BullMQQueue({ connection, atempts: 3 } as never)).toThrow(/attempts/);
    expect(() => new BullMQQueue({ connection, backoff: { type: 'linear', delayMs: 1 } as never })).toThrow(
      /backoff.type/,
    );
    const queue = track(new BullMQQueue({ connection: { ...connection, password: 'hunter2' } }));
    expect(() => queue.startWorker({} as never)).toThrow(/needs the Webhooks/);
    const shown = String(
      (queue as unknown as Record<symbol, () => string>)[Symbol.for('nodejs.util.inspect.custom')]?.(),
    );
    expect(shown).toContain('pixhook-webhooks');
    expect(shown).not.toContain('hunter2');
  });
});
