/**
 * Secrets per tenant and handler schemas in queued mode on pg-boss, on a real Postgres: a job per
 * tenant and event (its id from the tenant-scoped key), the tenant and the matched secret reach the
 * worker's handlers, and an event a handler's schema refuses is a dead letter after one attempt,
 * listed, retried with all its attempts, and discarded as any other.
 */

import { type AnyEvent, eventKey, type HandlerContext, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { bytesSchema, forTenant, TENANT_SECRETS } from '@pixhook/test-helpers/tenants';
import type PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { jobCounts, QUICK, sleep, startBoss, testQueueOptions, until } from './helpers/pg-boss.js';

/** Set by a test: the schema below lets everything through (the schema, fixed). */
let lenient = false;
const schema = bytesSchema(() => lenient);

describeWithPostgres('secrets per tenant and schemas on pg-boss', () => {
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
    lenient = false;
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await server?.close();
  });

  /** The state of the job of `key` in pg-boss's job table (undefined: none there). */
  const stateOf = async (queue: string, key: string) => (await boss.getJobById(queue, pgBossJobIdFor(key)))?.state;

  it("two tenants' deliveries of one event id are two jobs, both run with the tenant and the secret; a redelivery adds none", async () => {
    const options = testQueueOptions();
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: (tenant) => TENANT_SECRETS[tenant], queue });
    const runs: HandlerContext[] = [];
    webhooks.on('image.created', (_event, context) => void runs.push(context));
    const event = createTestEvent('image.created') as AnyEvent;
    for (const tenant of Object.keys(TENANT_SECRETS)) {
      expect((await webhooks.handle(forTenant(tenant, event))).status).toBe(202);
    }
    const keys = Object.keys(TENANT_SECRETS).map((tenant) => eventKey(event.id, tenant));
    for (const key of keys) expect(await stateOf(options.name!, key)).toBe('created');
    // Neither is the job of the event id alone.
    expect(await stateOf(options.name!, event.id)).toBeUndefined();
    // The service's redelivery, with a new delivery id, for one tenant: no second job.
    expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
    expect(await jobCounts(boss, options.name!)).toEqual({ created: 2 });

    track(queue.startWorker(webhooks, QUICK));
    await until(async () => (await jobCounts(boss, options.name!)).completed === 2, 'both jobs to complete');
    expect(runs.map((context) => context.tenant).sort()).toEqual(Object.keys(TENANT_SECRETS).sort());
    for (const context of runs) {
      expect(context.secret).toEqual({ index: 0 });
      expect(context.job?.jobId).toBe(pgBossJobIdFor(eventKey(event.id, context.tenant)));
    }
    // Done: redeliveries for either tenant add nothing.
    for (const tenant of Object.keys(TENANT_SECRETS)) {
      expect((await webhooks.handle(forTenant(tenant, event))).status).toBe(202);
    }
    await sleep(300);
    expect(await jobCounts(boss, options.name!)).toEqual({ completed: 2 });
    expect(runs).toHaveLength(2);
  });

  it('an event a handler schema refuses: the other handler runs once, the job is a dead letter after one of 5 attempts; retried, it has all 5', async () => {
    const options = testQueueOptions({ attempts: 5 });
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: (tenant) => TENANT_SECRETS[tenant], queue });
    const checked: number[] = [];
    const others: HandlerContext[] = [];
    webhooks.on('image.created', { schema }, (event) => void checked.push(event.data.object.bytes));
    webhooks.on('image.created', (_event, context) => void others.push(context));
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    track(queue.startWorker(webhooks, QUICK));

    const event = createTestEvent('image.created', { id: 'img_1', bytes: 'large' }) as AnyEvent;
    const key = eventKey(event.id, 'a b/ü');
    const jobId = pgBossJobIdFor(key);
    expect((await webhooks.handle(forTenant('a b/ü', event))).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(checked).toEqual([]);
    expect(others).toHaveLength(1);
    expect(others[0]).toMatchObject({ tenant: 'a b/ü', job: { jobId, attempt: 1, maxAttempts: 5 } });
    expect(errors.map((error) => error.code)).toEqual(['SCHEMA_MISMATCH']);

    const [letter] = await queue.listDeadLetters();
    expect(letter).toMatchObject({
      jobId,
      attemptsMade: 1,
      delivery: { event, tenant: 'a b/ü', secret: { index: 0 } },
      error: expect.stringMatching(/does not match the schema.*"data\.object\.bytes": "Expected a number"/),
    });
    expect(letter?.stack).toContain('does not match the schema');
    expect(await queue.getDeadLetter(key)).toEqual(letter);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, deadLetter: 1 });
    // No further attempt comes.
    await sleep(400);
    expect(others).toHaveLength(1);
    expect(await jobCounts(boss, options.name!)).toEqual({ failed: 1 });

    // The schema fixed, the dead letter retried by its key runs every handler, with all its attempts.
    lenient = true;
    expect(await queue.retryDeadLetter(key)).toBe(true);
    await until(async () => (await stateOf(options.name!, key)) === 'completed', 'the retried job');
    expect(others).toHaveLength(2);
    expect(others[1]!.job).toMatchObject({ jobId, attempt: 1, maxAttempts: 5 });
    expect(checked).toHaveLength(1);
    expect(await queue.countDeadLetters()).toBe(0);
  });

  it('a schema mismatch on a job with attempts left is discarded like any dead letter; a later delivery is queued anew', async () => {
    const options = testQueueOptions({ attempts: 3 });
    const queue = track(new PgBossQueue(boss, options));
    const webhooks = new Webhooks({ secret: (tenant) => TENANT_SECRETS[tenant], queue });
    const runs: number[] = [];
    webhooks.on('image.created', { schema }, () => void runs.push(1));
    webhooks.onError(() => {});
    track(queue.startWorker(webhooks, QUICK));
    const event = createTestEvent('image.created', { bytes: null }) as AnyEvent;
    const key = eventKey(event.id, 'acme');
    expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(await queue.discardDeadLetter(key)).toBe(true);
    expect(await queue.countDeadLetters()).toBe(0);
    lenient = true;
    expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
    await until(async () => (await stateOf(options.name!, key)) === 'completed', 'the job queued anew');
    expect(runs).toEqual([1]);
  });
});
