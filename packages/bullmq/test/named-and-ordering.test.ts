/**
 * Named handlers as jobs of their own, and the ordering guard in workers, on a real redis-server:
 * an event's job runs its unnamed handlers and writes one job per named handler (`<key>#<id>`),
 * each with its own attempts and dead letter; a redelivery adds none, a replay adds new ones. A
 * worker whose `Webhooks` has a store skips a guarded handler for an event older than one it
 * already ran (STALE_EVENT), and the job completes.
 */

import { BullMQQueue, jobIdFor } from '@pixhook/bullmq';
import { type AnyEvent, type HandlerContext, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { RedisArchive, RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, testQueueOptions, until } from './helpers/queues.js';

/** Which handler ran, for which job, on which attempt. */
interface Ran {
  handler: string;
  context: HandlerContext;
}

const BY_IMAGE = { key: (event: AnyEvent) => `image:${(event.data.object as { id: string }).id}` };

describeWithRedis('named handlers and the ordering guard on BullMQ', () => {
  let server: RedisServer;
  let redis: Redis;
  const toClose: { close(): Promise<unknown> }[] = [];
  const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
    toClose.push(thing);
    return thing;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  afterEach(async () => {
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  const newArchive = () => {
    const archive = new RedisArchive(redis, {
      prefix: `inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      pruneIntervalMs: false,
    });
    toClose.push({ close: () => archive.close() });
    return archive;
  };

  /** A queue and its Webhooks with an unnamed handler and two named ones, billing's n-th run failing when `billingFails(n)`. */
  function namedApp(attempts: number, billingFails: (run: number) => boolean) {
    const queue = track(new BullMQQueue(testQueueOptions(server.port, { attempts })));
    const archive = newArchive();
    const webhooks = new Webhooks({ secret: SECRET, queue, archive });
    const ran: Ran[] = [];
    webhooks.on('image.created', (_event, context) => void ran.push({ handler: 'unnamed', context }));
    webhooks.on('image.created', { id: 'billing' }, (_event, context) => {
      ran.push({ handler: 'billing', context });
      if (billingFails(ran.filter((run) => run.handler === 'billing').length)) throw new Error('billing is down');
    });
    webhooks.on('image.created', { id: 'thumbnails' }, (_event, context) => {
      ran.push({ handler: 'thumbnails', context });
    });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    const state = (id: string) => queue.bullQueue.getJobState(id);
    const of = (handler: string) => ran.filter((run) => run.handler === handler);
    return { queue, archive, webhooks, ran, errors, state, of };
  }

  it("an event's job runs the unnamed handler and writes a job per named handler; one retried alone, a redelivery adds none, a replay adds new ones", async () => {
    const { queue, webhooks, errors, state, of } = namedApp(3, (run) => run === 1);
    const request = signed();
    const { id } = request.event;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks));
    const keys = [id, `${id}#billing`, `${id}#thumbnails`];
    // Readable job ids: the key itself.
    expect(keys.map(jobIdFor)).toEqual(keys);
    for (const key of keys) await until(async () => (await state(key)) === 'completed', `the job ${key}`);

    expect(of('unnamed').map((run) => run.context.job?.jobId)).toEqual([id]);
    expect(of('thumbnails').map((run) => run.context.job)).toEqual([
      expect.objectContaining({ jobId: `${id}#thumbnails`, attempt: 1, maxAttempts: 3 }),
    ]);
    // billing failed its first attempt and the engine ran its job again: the others did not run again.
    expect(of('billing').map((run) => [run.context.job?.jobId, run.context.job?.attempt])).toEqual([
      [`${id}#billing`, 1],
      [`${id}#billing`, 2],
    ]);
    expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED']);
    const billing = await queue.bullQueue.getJob(`${id}#billing`);
    expect(billing?.data).toMatchObject({ event: request.event, handler: 'billing' });
    expect(billing?.attemptsMade).toBe(2);

    // The service's redelivery of the event (a new delivery id): no new job, nothing runs.
    expect((await webhooks.handle(signed(request.event))).status).toBe(202);
    expect(await queue.bullQueue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      completed: 3,
      failed: 0,
    });

    // A replay from the archive: a new event job, and new handler jobs, each handler runs once more.
    expect(await webhooks.replay(id)).toMatchObject({ outcome: 'queued' });
    await until(
      async () => (await queue.bullQueue.getJobCounts('completed')).completed === 6,
      'the replay and its handler jobs',
    );
    for (const handler of ['unnamed', 'billing', 'thumbnails']) {
      expect(of(handler).at(-1)?.context.replay).toBe(true);
    }
    expect(of('unnamed')).toHaveLength(2);
    expect(of('thumbnails')).toHaveLength(2);
    expect(of('billing')).toHaveLength(3);
    const replayed = of('thumbnails')[1]!.context.job?.jobId;
    expect(replayed).toMatch(new RegExp(`^${id}#thumbnails-replay-[A-Za-z0-9-]+$`));
  });

  it('a named handler failing every attempt is a dead letter alone, found by <key>#<id>; retried, only it runs', async () => {
    let fixed = false;
    const { queue, webhooks, state, of } = namedApp(2, () => !fixed);
    const request = signed();
    const { id } = request.event;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks));
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    await until(async () => (await state(`${id}#thumbnails`)) === 'completed', 'the thumbnails job');
    expect(await state(id)).toBe('completed');
    expect(of('billing').map((run) => run.context.job?.attempt)).toEqual([1, 2]);
    expect(of('thumbnails')).toHaveLength(1);
    expect(of('unnamed')).toHaveLength(1);

    const [letter] = await queue.listDeadLetters();
    expect(letter).toMatchObject({
      jobId: `${id}#billing`,
      attemptsMade: 2,
      delivery: { event: request.event, handler: 'billing' },
      error: 'billing is down',
    });
    expect(await queue.getDeadLetter(`${id}#billing`)).toEqual(letter);
    // The event's key names the event's job, which completed: no dead letter there.
    expect(await queue.getDeadLetter(id)).toBeUndefined();

    fixed = true;
    expect(await queue.retryDeadLetter(`${id}#billing`)).toBe(true);
    await until(async () => (await state(`${id}#billing`)) === 'completed', 'the retried billing job');
    expect(of('billing').map((run) => run.context.job?.attempt)).toEqual([1, 2, 1]);
    expect(of('thumbnails')).toHaveLength(1);
    expect(of('unnamed')).toHaveLength(1);
    expect(await queue.countDeadLetters()).toBe(0);
  });

  it("an event's job run again (its unnamed handler failed) writes no handler job twice: each named handler runs once", async () => {
    const queue = track(new BullMQQueue(testQueueOptions(server.port)));
    const webhooks = new Webhooks({ secret: SECRET, queue });
    webhooks.onError(() => {});
    const ran: string[] = [];
    webhooks.on('image.created', { id: 'thumbnails' }, () => void ran.push('thumbnails'));
    webhooks.on('image.created', (_event, context) => {
      ran.push(`unnamed ${context.job?.attempt}`);
      if (context.job?.attempt === 1) throw new Error('the database is away');
    });
    const request = signed();
    const { id } = request.event;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks));
    for (const key of [id, `${id}#thumbnails`]) {
      await until(async () => (await queue.bullQueue.getJobState(key)) === 'completed', `the job ${key}`);
    }
    expect(ran.filter((name) => name === 'thumbnails')).toHaveLength(1);
    expect(ran.filter((name) => name.startsWith('unnamed'))).toEqual(['unnamed 1', 'unnamed 2']);
    expect(await queue.bullQueue.getJobCounts('completed', 'waiting', 'delayed')).toEqual({
      completed: 2,
      waiting: 0,
      delayed: 0,
    });
  });

  it('a handler id outside the readable form is hashed, never meeting another key', () => {
    expect(jobIdFor('evt_1#billing')).toBe('evt_1#billing');
    expect(jobIdFor('acme/evt_1#billing')).toBe('acme/evt_1#billing');
    expect(jobIdFor(`evt_1#${'x'.repeat(65)}`)).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(jobIdFor('evt_1#a#b')).toMatch(/^sha256-/);
    expect(jobIdFor('evt_1#')).toMatch(/^sha256-/);
    const ids = ['evt_1', 'evt_1#a', 'evt_1#b', 'acme/evt_1#a', `evt_1#${'x'.repeat(65)}`, 'evt_1#a#b'].map(jobIdFor);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('the ordering guard in the worker: an older event processed after a newer one is skipped (STALE_EVENT), its jobs complete', async () => {
    const queue = track(new BullMQQueue(testQueueOptions(server.port)));
    // The workers' store keeps only the ordering marks: the queue de-duplicates deliveries.
    const prefix = `marks-${globalThis.crypto.randomUUID().slice(0, 8)}:`;
    const webhooks = new Webhooks({ secret: SECRET, queue, store: new RedisStore(redis, { prefix }) });
    const applied: { handler: string; eventId: string }[] = [];
    webhooks.on('image.created', { ordering: BY_IMAGE }, (event) => {
      applied.push({ handler: 'state', eventId: event.id });
    });
    webhooks.on('image.created', { id: 'search', ordering: BY_IMAGE }, (event) => {
      applied.push({ handler: 'search', eventId: event.id });
    });
    const errors: { code: string; eventId: string | undefined; jobId: string | undefined }[] = [];
    webhooks.onError(
      (error, context) => void errors.push({ code: error.code, eventId: context.event?.id, jobId: context.job?.jobId }),
    );
    const created = Math.floor(Date.now() / 1000);
    const older = createTestEvent('image.created', { id: 'img_1' }, { created: created - 60 }) as AnyEvent;
    const newer = createTestEvent('image.created', { id: 'img_1' }, { created }) as AnyEvent;
    // The newer event is queued first: one worker runs the jobs in that order.
    expect((await webhooks.handle(signed(newer))).status).toBe(202);
    expect((await webhooks.handle(signed(older))).status).toBe(202);
    track(queue.startWorker(webhooks));
    const jobs = [newer.id, `${newer.id}#search`, older.id, `${older.id}#search`];
    for (const job of jobs) {
      await until(async () => (await queue.bullQueue.getJobState(job)) === 'completed', `the job ${job}`);
    }
    expect(applied).toEqual(
      expect.arrayContaining([
        { handler: 'state', eventId: newer.id },
        { handler: 'search', eventId: newer.id },
      ]),
    );
    expect(applied).toHaveLength(2);
    expect(errors).toEqual(
      expect.arrayContaining([
        { code: 'STALE_EVENT', eventId: older.id, jobId: older.id },
        { code: 'STALE_EVENT', eventId: older.id, jobId: `${older.id}#search` },
      ]),
    );
    expect(errors).toHaveLength(2);
    // The mark is the newer event's, kept in Redis for every worker; nothing else was written there.
    expect(await redis.keys(`${prefix}*`)).toEqual([`${prefix}order:image:img_1`]);
    expect(await redis.get(`${prefix}order:image:img_1`)).toBe(`${newer.created} ${newer.id}`);
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await queue.bullQueue.getJobCounts('failed', 'delayed', 'waiting')).toEqual({
      failed: 0,
      delayed: 0,
      waiting: 0,
    });
  });
});
