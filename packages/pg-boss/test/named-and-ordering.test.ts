/**
 * Named handlers as jobs of their own, and the ordering guard in workers, on pg-boss and a real
 * Postgres: an event's job runs its unnamed handlers and writes one job per named handler (its id
 * `pgBossJobIdFor('<key>#<id>')`), each with its own attempts and dead letter; a redelivery adds
 * none, a replay adds new ones. A worker whose `Webhooks` has a store skips a guarded handler for an
 * event older than one it already ran (STALE_EVENT), and the job completes. (With PostgresStore and
 * PostgresTransactions: packages/postgres/test/pg-boss-named-and-ordering.test.ts.)
 */

import {
  type AnyEvent,
  type HandlerContext,
  MemoryArchive,
  MemoryStore,
  Webhooks,
  type WebhookVerificationError,
} from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import type PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { jobCounts, QUICK, SECRET, signed, startBoss, testQueueOptions, until } from './helpers/pg-boss.js';

/** Which handler ran, for which job, on which attempt. */
interface Ran {
  handler: string;
  context: HandlerContext;
}

const BY_IMAGE = { key: (event: AnyEvent) => `image:${(event.data.object as { id: string }).id}` };

describeWithPostgres('named handlers and the ordering guard on pg-boss', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  const toClose: { close(): Promise<unknown> }[] = [];
  const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
    toClose.push(thing);
    return thing;
  };

  beforeAll(async () => {
    server = await startPostgresServer();
    ({ boss } = await startBoss(server.url));
  });
  afterEach(async () => {
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await server?.close();
  });

  /** A queue and its Webhooks with an unnamed handler and two named ones, billing's n-th run failing when `billingFails(n)`. */
  function namedApp(attempts: number, billingFails: (run: number) => boolean) {
    const options = testQueueOptions({ attempts });
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: SECRET, queue, archive: new MemoryArchive() });
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
    const state = async (key: string) => (await boss.getJobById(options.name!, pgBossJobIdFor(key)))?.state;
    const counts = () => jobCounts(boss, options.name!);
    const of = (handler: string) => ran.filter((run) => run.handler === handler);
    return { queue, webhooks, errors, state, counts, of };
  }

  it("an event's job runs the unnamed handler and writes a job per named handler; one retried alone, a redelivery adds none, a replay adds new ones", async () => {
    const { queue, webhooks, errors, state, counts, of } = namedApp(3, (run) => run === 1);
    const request = signed();
    const { id } = request.event;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks, QUICK));
    const keys = [id, `${id}#billing`, `${id}#thumbnails`];
    for (const key of keys) await until(async () => (await state(key)) === 'completed', `the job ${key}`);

    expect(of('unnamed').map((run) => run.context.job?.jobId)).toEqual([pgBossJobIdFor(id)]);
    expect(of('thumbnails').map((run) => run.context.job)).toEqual([
      expect.objectContaining({ jobId: pgBossJobIdFor(`${id}#thumbnails`), attempt: 1, maxAttempts: 3 }),
    ]);
    // billing failed its first attempt and pg-boss ran its job again: the others did not run again.
    expect(of('billing').map((run) => [run.context.job?.jobId, run.context.job?.attempt])).toEqual([
      [pgBossJobIdFor(`${id}#billing`), 1],
      [pgBossJobIdFor(`${id}#billing`), 2],
    ]);
    expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED']);
    const billing = await boss.getJobById(queue.name, pgBossJobIdFor(`${id}#billing`));
    expect(billing?.data).toMatchObject({ event: request.event, handler: 'billing' });
    expect(billing?.retryCount).toBe(1);

    // The service's redelivery of the event (a new delivery id): no new job, nothing runs.
    // The 202 comes once pg-boss answered the insert: a second job would be in the table now, in any state.
    expect((await webhooks.handle(signed(request.event))).status).toBe(202);
    expect(await counts()).toEqual({ completed: 3 });
    expect(of('unnamed')).toHaveLength(1);

    // A replay from the archive: a new event job, and new handler jobs, each handler runs once more.
    expect(await webhooks.replay(id)).toMatchObject({ outcome: 'queued' });
    await until(async () => (await counts()).completed === 6, 'the replay and its handler jobs');
    for (const handler of ['unnamed', 'billing', 'thumbnails']) {
      expect(of(handler).at(-1)?.context.replay).toBe(true);
    }
    expect(of('unnamed')).toHaveLength(2);
    expect(of('thumbnails')).toHaveLength(2);
    expect(of('billing')).toHaveLength(3);
    const replayedIds = new Set(of('thumbnails').map((run) => run.context.job?.jobId));
    expect(replayedIds.size).toBe(2);
  });

  it('a named handler failing every attempt is a dead letter alone, found by <key>#<id>; retried, only it runs', async () => {
    let fixed = false;
    const { queue, webhooks, state, of } = namedApp(2, () => !fixed);
    const request = signed();
    const { id } = request.event;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks, QUICK));
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    await until(async () => (await state(`${id}#thumbnails`)) === 'completed', 'the thumbnails job');
    expect(await state(id)).toBe('completed');
    expect(of('billing').map((run) => run.context.job?.attempt)).toEqual([1, 2]);
    expect(of('thumbnails')).toHaveLength(1);
    expect(of('unnamed')).toHaveLength(1);

    const [letter] = await queue.listDeadLetters();
    expect(letter).toMatchObject({
      jobId: pgBossJobIdFor(`${id}#billing`),
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
    const options = testQueueOptions();
    const queue = track(new PgBossQueue(boss, options));
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
    const state = async (key: string) => (await boss.getJobById(options.name!, pgBossJobIdFor(key)))?.state;
    expect((await webhooks.handle(request)).status).toBe(202);
    track(queue.startWorker(webhooks, QUICK));
    for (const key of [id, `${id}#thumbnails`]) {
      await until(async () => (await state(key)) === 'completed', `the job ${key}`);
    }
    expect(ran.filter((name) => name === 'thumbnails')).toHaveLength(1);
    expect(ran.filter((name) => name.startsWith('unnamed'))).toEqual(['unnamed 1', 'unnamed 2']);
    expect(await jobCounts(boss, options.name!)).toEqual({ completed: 2 });
  });

  it('the ordering guard in the worker: an older event processed after a newer one is skipped (STALE_EVENT), its jobs complete', async () => {
    const options = testQueueOptions();
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: SECRET, queue, store: new MemoryStore() });
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
    const state = async (key: string) => (await boss.getJobById(options.name!, pgBossJobIdFor(key)))?.state;
    track(queue.startWorker(webhooks, QUICK));
    // The newer event is processed first; the older one arrives late.
    expect((await webhooks.handle(signed(newer))).status).toBe(202);
    for (const key of [newer.id, `${newer.id}#search`]) {
      await until(async () => (await state(key)) === 'completed', `the job ${key}`);
    }
    expect((await webhooks.handle(signed(older))).status).toBe(202);
    for (const key of [older.id, `${older.id}#search`]) {
      await until(async () => (await state(key)) === 'completed', `the job ${key}`);
    }
    expect(applied).toEqual([
      { handler: 'state', eventId: newer.id },
      { handler: 'search', eventId: newer.id },
    ]);
    expect(errors).toEqual(
      expect.arrayContaining([
        { code: 'STALE_EVENT', eventId: older.id, jobId: pgBossJobIdFor(older.id) },
        { code: 'STALE_EVENT', eventId: older.id, jobId: pgBossJobIdFor(`${older.id}#search`) },
      ]),
    );
    expect(errors).toHaveLength(2);
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await jobCounts(boss, options.name!)).toEqual({ completed: 4 });
  });
});
