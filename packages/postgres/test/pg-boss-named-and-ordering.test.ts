/**
 * Named handlers and the ordering guard in pg-boss workers, with this package's PostgresStore and
 * PostgresTransactions, on a real Postgres (here, not in @pixhook/pg-boss, which must not depend on
 * this package). Transactional workers: each named handler's job runs in a transaction of its own,
 * retried alone, its writes committed once; a late older event is skipped (STALE_EVENT), its job
 * completes, and the mark commits with the newer event's writes. A worker with a PostgresStore keeps
 * the marks there.
 */

import { type AnyEvent, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { migrate, PostgresStore, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import type pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, sleep, testPool, uniqueTable, until } from './helpers/postgres.js';

/** An idle worker polls every 100 ms. */
const QUICK = { pollingIntervalMs: 100 } as const;

const BY_IMAGE = { key: (event: AnyEvent) => `image:${(event.data.object as { id: string }).id}` };

describeWithPostgres(
  'named handlers and the ordering guard in pg-boss workers, with PostgresStore and PostgresTransactions',
  () => {
    let server: PostgresServer;
    let boss: PgBoss;
    let pool: ReturnType<typeof testPool>;
    const toClose: { close(): Promise<unknown> }[] = [];
    const track = <T extends { close(): Promise<unknown> }>(thing: T): T => {
      toClose.push(thing);
      return thing;
    };

    beforeAll(async () => {
      server = await startPostgresServer();
      boss = new PgBoss({ connectionString: server.url, max: 10 });
      boss.on('error', () => {});
      await boss.start();
      pool = testPool(server.url, { max: 20 });
    });
    afterEach(async () => {
      for (const thing of toClose.splice(0).reverse()) await thing.close();
    });
    afterAll(async () => {
      await pool?.end();
      await boss?.stop({ graceful: false, wait: true });
      await server?.close();
    });

    /** A queue of its own, retried at once; a migrated events table, and a table the handlers write. */
    async function setUp(attempts = 3) {
      const queue = track(
        new PgBossQueue(boss, {
          name: `pixhook-test-${globalThis.crypto.randomUUID().slice(0, 8)}`,
          attempts,
          backoff: { type: 'fixed', delayMs: 0 },
        }),
      );
      const table = uniqueTable();
      await migrate(pool, { table });
      const rows = uniqueTable('rows');
      await pool.query(`CREATE TABLE ${rows} (handler text NOT NULL, event_id text NOT NULL)`);
      const written = async () =>
        (await pool.query<{ handler: string; event_id: string }>(`SELECT handler, event_id FROM ${rows} ORDER BY 1, 2`))
          .rows;
      const marks = async () =>
        (await pool.query<{ key: string; event_id: string }>(`SELECT key, event_id FROM ${table}_marks`)).rows;
      const state = async (key: string) => (await boss.getJobById(queue.name, pgBossJobIdFor(key)))?.state;
      const errors: { code: string; jobId: string | undefined }[] = [];
      const listen = (webhooks: Webhooks) =>
        webhooks.onError((error: WebhookVerificationError, context) => {
          errors.push({ code: error.code, jobId: context.job?.jobId });
        });
      return { queue, table, rows, written, marks, state, errors, listen };
    }

    const insert = (client: pg.PoolClient | undefined, rows: string, handler: string, eventId: string) =>
      (client as pg.PoolClient).query(`INSERT INTO ${rows} (handler, event_id) VALUES ($1, $2)`, [handler, eventId]);

    it('transactional workers: each named handler is a job in a transaction of its own, a failing one retried alone; every write committed once', async () => {
      const { queue, table, rows, written, state, errors, listen } = await setUp();
      const webhooks = new Webhooks({ secret: SECRET, queue, transactions: new PostgresTransactions(pool, { table }) });
      listen(webhooks);
      let searchRuns = 0;
      webhooks.on('image.created', (event, { transaction }) => insert(transaction, rows, 'unnamed', event.id));
      webhooks.on('image.created', { id: 'thumbnails' }, (event, { transaction }) =>
        insert(transaction, rows, 'thumbnails', event.id),
      );
      webhooks.on('image.created', { id: 'search' }, async (event, { transaction }) => {
        await insert(transaction, rows, 'search', event.id);
        // Its first attempt fails after writing: the write rolls back with it.
        if (++searchRuns === 1) throw new Error('search index unreachable');
      });
      const request = signed();
      const { id } = request.event;
      expect((await webhooks.handle(request)).status).toBe(202);
      track(queue.startWorker(webhooks, QUICK));
      for (const key of [id, `${id}#thumbnails`, `${id}#search`]) {
        await until(async () => (await state(key)) === 'completed', `the job ${key}`);
      }
      expect(searchRuns).toBe(2);
      expect(await written()).toEqual([
        { handler: 'search', event_id: id },
        { handler: 'thumbnails', event_id: id },
        { handler: 'unnamed', event_id: id },
      ]);
      expect(errors).toEqual([{ code: 'HANDLER_FAILED', jobId: pgBossJobIdFor(`${id}#search`) }]);
      // Each job's transaction recorded its key: the event, and each named handler's own.
      const { rows: recorded } = await pool.query<{ event_id: string }>(`SELECT event_id FROM ${table} ORDER BY 1`);
      expect(recorded.map((row) => row.event_id)).toEqual([id, `${id}#search`, `${id}#thumbnails`].sort());
      // A redelivery of the event adds no job.
      expect((await webhooks.handle(signed(request.event))).status).toBe(202);
      await sleep(300);
      expect((await written()).length).toBe(3);
    });

    it('transactional workers: an older event processed after a newer one is skipped (STALE_EVENT) and its jobs complete; the mark committed with the newer', async () => {
      const { queue, table, rows, written, marks, state, errors, listen } = await setUp();
      const webhooks = new Webhooks({ secret: SECRET, queue, transactions: new PostgresTransactions(pool, { table }) });
      listen(webhooks);
      webhooks.on('image.created', { ordering: BY_IMAGE }, (event, { transaction }) =>
        insert(transaction, rows, 'state', event.id),
      );
      webhooks.on('image.created', { id: 'search', ordering: BY_IMAGE }, (event, { transaction }) =>
        insert(transaction, rows, 'search', event.id),
      );
      const created = Math.floor(Date.now() / 1000);
      const older = createTestEvent('image.created', { id: 'img_1' }, { created: created - 60 }) as AnyEvent;
      const newer = createTestEvent('image.created', { id: 'img_1' }, { created }) as AnyEvent;
      track(queue.startWorker(webhooks, QUICK));
      expect((await webhooks.handle(signed(newer))).status).toBe(202);
      for (const key of [newer.id, `${newer.id}#search`]) {
        await until(async () => (await state(key)) === 'completed', `the job ${key}`);
      }
      expect(await marks()).toEqual([{ key: 'image:img_1', event_id: newer.id }]);
      expect((await webhooks.handle(signed(older))).status).toBe(202);
      for (const key of [older.id, `${older.id}#search`]) {
        await until(async () => (await state(key)) === 'completed', `the job ${key}`);
      }
      expect(await written()).toEqual([
        { handler: 'search', event_id: newer.id },
        { handler: 'state', event_id: newer.id },
      ]);
      expect(errors).toEqual(
        expect.arrayContaining([
          { code: 'STALE_EVENT', jobId: pgBossJobIdFor(older.id) },
          { code: 'STALE_EVENT', jobId: pgBossJobIdFor(`${older.id}#search`) },
        ]),
      );
      expect(errors).toHaveLength(2);
      expect(await marks()).toEqual([{ key: 'image:img_1', event_id: newer.id }]);
      expect(await queue.countDeadLetters()).toBe(0);
    });

    it('a worker with a PostgresStore keeps the marks there: an older event after a newer one is skipped, its job completes', async () => {
      const { queue, table, marks, state, errors, listen } = await setUp();
      const store = new PostgresStore(pool, { table });
      const webhooks = new Webhooks({ secret: SECRET, queue, store, ordering: BY_IMAGE });
      listen(webhooks);
      const applied: string[] = [];
      webhooks.on('image.created', (event) => void applied.push(event.id));
      const created = Math.floor(Date.now() / 1000);
      const older = createTestEvent('image.created', { id: 'img_2' }, { created: created - 60 }) as AnyEvent;
      const newer = createTestEvent('image.created', { id: 'img_2' }, { created }) as AnyEvent;
      track(queue.startWorker(webhooks, QUICK));
      expect((await webhooks.handle(signed(newer))).status).toBe(202);
      await until(async () => (await state(newer.id)) === 'completed', 'the newer job');
      expect((await webhooks.handle(signed(older))).status).toBe(202);
      await until(async () => (await state(older.id)) === 'completed', 'the older job');
      expect(applied).toEqual([newer.id]);
      expect(errors).toEqual([{ code: 'STALE_EVENT', jobId: pgBossJobIdFor(older.id) }]);
      expect(await marks()).toEqual([{ key: 'image:img_2', event_id: newer.id }]);
      expect(await queue.countDeadLetters()).toBe(0);
    });
  },
);
