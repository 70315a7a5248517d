/**
 * Queued mode with an archive on a real Postgres (pg-boss + PostgresArchive), on every adapter: the
 * delivery is archived exactly as sent before the 202, the worker's run joins its timeline, and a
 * replay is a new job the worker runs as one. An event a handler's schema refuses is archived as a
 * dead letter after one attempt, under its tenant-scoped key.
 */

import { type AnyEvent, eventKey, type StandardSchemaV1, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue } from '@pixhook/pg-boss';
import { migrateArchive, PostgresArchive } from '@pixhook/postgres';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { archived, expectKeptExactly, oddDelivery } from '@pixhook/test-helpers/archive';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { until } from './helpers/postgres.js';

/** An idle worker polls every 100 ms. */
const QUICK = { pollingIntervalMs: 100 } as const;

/** A queue of its own per test, retried at once. */
function testQueueOptions() {
  return {
    name: `pixhook-test-${globalThis.crypto.randomUUID().slice(0, 8)}`,
    attempts: 3,
    backoff: { type: 'fixed' as const, delayMs: 0 },
  };
}

/**
 * A Standard Schema v1 validator written by hand (this package's tests do not depend on zod):
 * `data.object.bytes` must be a number.
 */
const bytesSchema: StandardSchemaV1<unknown, { bytes: number }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      typeof (value as { bytes?: unknown } | null)?.bytes === 'number'
        ? { value: value as { bytes: number } }
        : { issues: [{ message: 'Expected a number', path: ['bytes'] }] },
  },
};

describeWithPostgres('queued mode on pg-boss with a PostgresArchive', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  let pool: pg.Pool;
  let archive: PostgresArchive;
  const toClose: { close(): Promise<unknown> }[] = [];
  beforeAll(async () => {
    server = await startPostgresServer();
    boss = new PgBoss({ connectionString: server.url, max: 10 });
    boss.on('error', () => {});
    await boss.start();
    pool = new pg.Pool({ connectionString: server.url, max: 10 });
    const table = `inbox_${globalThis.crypto.randomUUID().slice(0, 8)}`;
    await migrateArchive(pool, { table });
    archive = new PostgresArchive(pool, { table, pruneIntervalMs: false });
  });
  afterEach(async () => {
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await archive?.close();
    await pool?.end();
    await boss?.stop({ graceful: false });
    await server?.close();
  });

  it.each(ADAPTERS.map((adapter) => [adapter.name, adapter] as const))(
    '%s: archived as sent before the 202; the job and a replay join its timeline',
    async (_, adapter) => {
      const queue = new PgBossQueue(boss, testQueueOptions());
      const webhooks = new Webhooks({ secret: SECRET, queue, archive });
      const replays: (boolean | undefined)[] = [];
      webhooks.on('image.created', (_event, context) => void replays.push(context.replay));
      const client = await adapter.create(webhooks);
      toClose.push(client);
      const sent = oddDelivery();
      expect((await client.send(sent.request)).status).toBe(202);
      await expectKeptExactly(archive, sent, { outcome: 'queued', mode: 'queued', result: 'queued' });
      toClose.push(queue.startWorker(webhooks, QUICK));
      const done = await archived(archive, sent.eventId, 2);
      // Found by kind: a job that ends within the millisecond its delivery arrived may read first.
      expect(done.timeline.find((entry) => entry.kind === 'job')).toMatchObject({ result: 'processed', attempt: 1 });
      expect(await webhooks.replay(sent.eventId)).toMatchObject({ outcome: 'queued' });
      const replayed = await archived(archive, sent.eventId, 4);
      expect(replayed.timeline.slice(2).map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
        'replay:queued',
        'job:processed',
      ]);
      expect(replays).toEqual([undefined, true]);
    },
  );

  it('an event a handler schema refuses: the other handler runs once, a dead letter after one of 5 attempts, archived as dead-letter under its tenant key', async () => {
    const tenantSecret = 'whsec_archive_tenant_7e8f';
    const queue = new PgBossQueue(boss, { ...testQueueOptions(), attempts: 5 });
    const webhooks = new Webhooks({
      secret: (tenant) => (tenant === 'acme' ? tenantSecret : undefined),
      queue,
      archive,
    });
    const others: (number | undefined)[] = [];
    webhooks.on('image.created', { schema: bytesSchema }, () => {});
    webhooks.on('image.created', (_event, context) => void others.push(context.job?.attempt));
    webhooks.onError(() => {});
    toClose.push(queue.startWorker(webhooks, QUICK));
    const event = createTestEvent('image.created', { id: 'img_1', bytes: 'large' }) as AnyEvent;
    const { headers, body } = createSignedRequest(event, { secret: tenantSecret });
    expect((await webhooks.handle({ method: 'POST', headers, body, tenant: 'acme' })).status).toBe(202);
    const key = eventKey(event.id, 'acme');
    const dead = await archived(archive, key, 2);
    expect(dead.outcome).toBe('dead-letter');
    expect(dead.timeline.find((entry) => entry.kind === 'job')).toMatchObject({
      result: 'dead-letter',
      attempt: 1,
      maxAttempts: 5,
    });
    expect(others).toEqual([1]);
    // The archive's step is written before the worker fails the job: wait for the dead letter itself.
    await until(async () => (await queue.countDeadLetters()) === 1, 'the dead letter');
    expect(await queue.listDeadLetters()).toMatchObject([{ attemptsMade: 1, delivery: { tenant: 'acme' } }]);
    await queue.discardAllDeadLetters();
  });
});
