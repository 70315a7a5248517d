/**
 * Secrets per tenant and handler schemas on a real Postgres: PostgresStore and PostgresTransactions
 * key an event's record by tenant (`<tenant, URI-encoded>/<event id>`), so two tenants' deliveries of
 * one event id are both processed and a tenant's redelivery is a duplicate; an event a handler's
 * schema refuses commits the other handlers' writes in transactional mode (200), and rolls them back
 * in a transactional pg-boss worker, where the job is a dead letter at once.
 */

import { type AnyEvent, eventKey, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue } from '@pixhook/pg-boss';
import { migrate, PostgresStore, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { bytesSchema, forTenant, TENANT_SECRETS, TENANTS } from '@pixhook/test-helpers/tenants';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTables, rowCounts, testPool, uniqueTable, until } from './helpers/postgres.js';

/** Set by a test: the schema below lets everything through (the schema, fixed). */
let lenient = false;
const schema = bytesSchema(() => lenient);

/** The answer's status and parsed body. */
async function answer(webhooks: Webhooks, request: ReturnType<typeof forTenant>) {
  const { status, body } = await webhooks.handle(request);
  return [status, JSON.parse(body)];
}

describeWithPostgres('secrets per tenant and schemas on Postgres', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url, { max: 20 });
  });
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  });

  /** The keys of the completed records in the events table `table`. */
  const completed = async (table: string) =>
    (await pool.query(`SELECT event_id FROM ${table} WHERE state = 'completed' ORDER BY event_id`)).rows.map(
      (row) => row.event_id as string,
    );

  it("PostgresStore: two tenants' deliveries of one event id are both processed; a tenant's redelivery is a duplicate", async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const webhooks = new Webhooks({
      secret: (tenant) => TENANT_SECRETS[tenant],
      store: new PostgresStore(pool, { table }),
    });
    const runs: (string | undefined)[] = [];
    webhooks.on('image.created', (_event, context) => void runs.push(context.tenant));
    const event = createTestEvent('image.created') as AnyEvent;
    for (const tenant of TENANTS) {
      expect(await answer(webhooks, forTenant(tenant, event))).toEqual([200, { received: true }]);
    }
    expect(runs).toEqual(TENANTS);
    for (const tenant of TENANTS) {
      expect(await answer(webhooks, forTenant(tenant, event))).toEqual([200, { received: true, duplicate: true }]);
    }
    expect(runs).toHaveLength(2);
    expect(await completed(table)).toEqual(TENANTS.map((tenant) => eventKey(event.id, tenant)).sort());
    expect(await completed(table)).toContain(`a%20b%2F%C3%BC/${event.id}`);
  });

  it("PostgresTransactions: two tenants' deliveries of one event id both commit their writes; a tenant's redelivery is a duplicate", async () => {
    const tables = await freshTables(pool);
    const webhooks = new Webhooks({
      secret: (tenant) => TENANT_SECRETS[tenant],
      transactions: new PostgresTransactions(pool, { table: tables.table }),
    });
    webhooks.on('image.created', async (event, { transaction, tenant }) => {
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [`${tenant}:${event.id}`]);
    });
    const event = createTestEvent('image.created') as AnyEvent;
    for (const tenant of TENANTS) {
      expect(await answer(webhooks, forTenant(tenant, event))).toEqual([200, { received: true }]);
    }
    for (const tenant of TENANTS) {
      expect(await answer(webhooks, forTenant(tenant, event))).toEqual([200, { received: true, duplicate: true }]);
    }
    expect(await rowCounts(pool, tables.business)).toEqual(
      new Map(TENANTS.map((tenant) => [`${tenant}:${event.id}`, 1])),
    );
    expect(await completed(tables.table)).toEqual(TENANTS.map((tenant) => eventKey(event.id, tenant)).sort());
  });

  it("transactional: a schema mismatch commits the other handlers' writes and answers 200; a redelivery is a duplicate", async () => {
    const tables = await freshTables(pool);
    const webhooks = new Webhooks({
      secret: (tenant) => TENANT_SECRETS[tenant],
      transactions: new PostgresTransactions(pool, { table: tables.table }),
    });
    const checked: number[] = [];
    webhooks.on('image.created', { schema }, (event) => void checked.push(event.data.object.bytes));
    webhooks.on('image.created', async (event, { transaction }) => {
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
    });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    const event = createTestEvent('image.created', { id: 'img_1', bytes: 'large' }) as AnyEvent;
    expect(await answer(webhooks, forTenant('a b/ü', event))).toEqual([200, { received: true }]);
    expect(checked).toEqual([]);
    expect(errors.map((error) => error.code)).toEqual(['SCHEMA_MISMATCH']);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[event.id, 1]]));
    expect(await completed(tables.table)).toEqual([eventKey(event.id, 'a b/ü')]);
    expect(await answer(webhooks, forTenant('a b/ü', event))).toEqual([200, { received: true, duplicate: true }]);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[event.id, 1]]));
  });

  it("a transactional pg-boss worker: a schema mismatch rolls back the other handlers' writes and is a dead letter after one attempt; retried once fixed, everything commits once", async () => {
    const boss = new PgBoss({ connectionString: server.url, max: 5, schedule: false });
    boss.on('error', () => {});
    await boss.start();
    const queue = new PgBossQueue(boss, {
      name: `pixhook-test-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      attempts: 5,
      backoff: { type: 'fixed', delayMs: 0 },
    });
    try {
      const tables = await freshTables(pool);
      const webhooks = new Webhooks({
        secret: (tenant) => TENANT_SECRETS[tenant],
        queue,
        transactions: new PostgresTransactions(pool, { table: tables.table }),
      });
      const checked: number[] = [];
      const attempts: (number | undefined)[] = [];
      webhooks.on('image.created', async (event, { transaction, job }) => {
        attempts.push(job?.attempt);
        await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
      });
      webhooks.on('image.created', { schema }, (event) => void checked.push(event.data.object.bytes));
      webhooks.onError(() => {});
      queue.startWorker(webhooks, { pollingIntervalMs: 100 });
      const event = createTestEvent('image.created', { id: 'img_1', bytes: 'large' }) as AnyEvent;
      const key = eventKey(event.id, 'acme');
      expect((await webhooks.handle(forTenant('acme', event))).status).toBe(202);
      await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
      expect(attempts).toEqual([1]);
      expect(checked).toEqual([]);
      expect(await rowCounts(pool, tables.business)).toEqual(new Map());
      expect(await completed(tables.table)).toEqual([]);
      expect(await queue.getDeadLetter(key)).toMatchObject({ attemptsMade: 1, delivery: { tenant: 'acme' } });

      lenient = true;
      expect(await queue.retryDeadLetter(key)).toBe(true);
      await until(async () => (await completed(tables.table)).length === 1, 'the retried job to commit');
      expect(await completed(tables.table)).toEqual([key]);
      expect(attempts).toEqual([1, 1]);
      expect(checked).toHaveLength(1);
      expect(await rowCounts(pool, tables.business)).toEqual(new Map([[event.id, 1]]));
    } finally {
      lenient = false;
      await queue.close();
      await boss.stop({ graceful: false, wait: true });
    }
  });
});
