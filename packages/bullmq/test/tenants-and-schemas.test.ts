/**
 * Secrets per tenant and handler schemas in queued mode on a real redis-server: a job per tenant
 * and event (its id from the tenant-scoped key), the tenant and the matched secret reach the
 * worker's handlers, and an event a handler's schema refuses is a dead letter after one attempt.
 */

import { BullMQQueue, jobIdFor } from '@pixhook/bullmq';
import { type AnyEvent, eventKey, type HandlerContext, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { RedisArchive } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { bytesSchema, forTenant, TENANT_SECRETS } from '@pixhook/test-helpers/tenants';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { testQueueOptions, until } from './helpers/queues.js';

/** Set by a test: the schema below lets everything through (the schema, fixed). */
let lenient = false;
const schema = bytesSchema(() => lenient);

describeWithRedis('secrets per tenant and schemas on BullMQ', () => {
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
    lenient = false;
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  it("two tenants' deliveries of one event id are two jobs, both run with the tenant and the secret; a redelivery adds none", async () => {
    const queue = track(new BullMQQueue(testQueueOptions(server.port)));
    const webhooks = new Webhooks({ secret: (tenant) => TENANT_SECRETS[tenant], queue });
    const runs: { tenant: string | undefined; context: HandlerContext }[] = [];
    webhooks.on('image.created', (_event, context) => void runs.push({ tenant: context.tenant, context }));
    const event = createTestEvent('image.created') as AnyEvent;
    for (const tenant of Object.keys(TENANT_SECRETS)) {
      expect((await webhooks.handle(forTenant(tenant, event))).status).toBe(202);
    }
    // Each tenant's job id is its key: readable, the tenant URI-encoded before the event id.
    const keys = Object.keys(TENANT_SECRETS).map((tenant) => eventKey(event.id, tenant));
    expect(keys).toEqual([`acme/${event.id}`, `a%20b%2F%C3%BC/${event.id}`]);
    expect(keys.map(jobIdFor)).toEqual(keys);
    for (const key of keys) expect(await queue.bullQueue.getJobState(key)).toBe('waiting');
    // The service's redelivery, with a new delivery id, for one tenant: no second job.
    expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
    expect(await queue.bullQueue.getJobCounts('waiting')).toEqual({ waiting: 2 });

    track(queue.startWorker(webhooks));
    await until(() => runs.length === 2, 'both runs');
    for (const key of keys) {
      await until(async () => (await queue.bullQueue.getJobState(key)) === 'completed', `the job ${key}`);
    }
    expect(runs.map((run) => run.tenant).sort()).toEqual(Object.keys(TENANT_SECRETS).sort());
    for (const { tenant, context } of runs) {
      expect(context.secret).toEqual({ index: 0 });
      expect(context.job?.jobId).toBe(eventKey(event.id, tenant));
    }
    // Done: redeliveries for either tenant add nothing.
    for (const tenant of Object.keys(TENANT_SECRETS)) {
      expect((await webhooks.handle(forTenant(tenant, event))).status).toBe(202);
    }
    expect(await queue.bullQueue.getJobCounts('waiting', 'completed')).toEqual({ waiting: 0, completed: 2 });
    expect(runs).toHaveLength(2);
  });

  it('a long or odd tenant gets a hashed job id, found by its key', async () => {
    const long = 'x'.repeat(65);
    expect(jobIdFor(`${long}/evt_1`)).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(jobIdFor(`${encodeURIComponent("o'brien")}/evt_1`)).toMatch(/^sha256-/);
    expect(jobIdFor('acme/evt_1:x')).toMatch(/^sha256-/);
    // Never the same as another event's or tenant's.
    const ids = ['evt_1', 'acme/evt_1', 'acme/evt_2', 'acme2/evt_1', `${long}/evt_1`, `${long}/evt_2`].map(jobIdFor);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('an event a handler schema refuses: the other handler runs once, the job is a dead letter after one of 5 attempts, archived as dead-letter; retried, it runs', async () => {
    const archive = new RedisArchive(redis, {
      prefix: `inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      pruneIntervalMs: false,
    });
    toClose.push({ close: () => archive.close() });
    const queue = track(new BullMQQueue(testQueueOptions(server.port, { attempts: 5 })));
    const webhooks = new Webhooks({ secret: (tenant) => TENANT_SECRETS[tenant], queue, archive });
    const checked: number[] = [];
    const others: HandlerContext[] = [];
    webhooks.on('image.created', { schema }, (event) => void checked.push(event.data.object.bytes));
    webhooks.on('image.created', (_event, context) => void others.push(context));
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    track(queue.startWorker(webhooks));

    const event = createTestEvent('image.created', { id: 'img_1', bytes: 'large' }) as AnyEvent;
    const key = eventKey(event.id, 'acme');
    expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(checked).toEqual([]);
    expect(others).toHaveLength(1);
    expect(others[0]).toMatchObject({ tenant: 'acme', job: { attempt: 1, maxAttempts: 5 } });
    expect(errors.map((error) => error.code)).toEqual(['SCHEMA_MISMATCH']);

    const [letter] = await queue.listDeadLetters();
    expect(letter).toMatchObject({
      jobId: key,
      attemptsMade: 1,
      delivery: { event, tenant: 'acme', secret: { index: 0 } },
      error: expect.stringMatching(/does not match the schema.*"data\.object\.bytes": "Expected a number"/),
    });
    expect(letter?.stack).toContain('does not match the schema');
    expect(await queue.getDeadLetter(key)).toEqual(letter);
    await until(async () => (await archive.get(key))?.outcome === 'dead-letter', 'the archived dead letter');
    const entry = await archive.get(key);
    expect(entry?.timeline.find((step) => step.kind === 'job')).toMatchObject({
      result: 'dead-letter',
      attempt: 1,
      maxAttempts: 5,
    });
    // No further attempt comes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(others).toHaveLength(1);
    expect(await queue.bullQueue.getJobCounts('waiting', 'delayed', 'active')).toEqual({
      waiting: 0,
      delayed: 0,
      active: 0,
    });

    // The schema fixed, the dead letter retried by its key runs every handler.
    lenient = true;
    expect(await queue.retryDeadLetter(key)).toBe(true);
    await until(async () => (await queue.bullQueue.getJobState(key)) === 'completed', 'the retried job');
    expect(others).toHaveLength(2);
    expect(checked).toHaveLength(1);
    await until(async () => (await archive.get(key))?.outcome === 'processed', 'the archived success');
  });
});
