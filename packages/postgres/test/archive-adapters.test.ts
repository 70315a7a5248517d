/**
 * The archive on every adapter with a real Postgres: the bytes and headers each adapter hands
 * pixhook are archived exactly as sent, inline (the default MemoryStore) and in transactional mode
 * (the entry commits with the event's transaction).
 */

import { Webhooks } from '@pixhook/core';
import { migrateArchive, PostgresArchive, PostgresTransactions } from '@pixhook/postgres';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { expectKeptExactly, oddDelivery } from '@pixhook/test-helpers/archive';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTables, testPool, uniqueTable } from './helpers/postgres.js';

describeWithPostgres('PostgresArchive on every adapter', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  let archive: PostgresArchive;
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url, { max: 20 });
    const table = uniqueTable('inbox');
    await migrateArchive(pool, { table });
    archive = new PostgresArchive(pool, { table, pruneIntervalMs: false });
  });
  afterAll(async () => {
    await archive?.close();
    await pool?.end();
    await server?.close();
  });

  describe.each(ADAPTERS)('$name', (adapter) => {
    it('inline: archives the exact bytes and headers before answering 200', async () => {
      const webhooks = new Webhooks({ secret: SECRET, archive });
      webhooks.on('image.created', () => {});
      const client = await adapter.create(webhooks);
      try {
        const sent = oddDelivery();
        expect((await client.send(sent.request)).status).toBe(200);
        await expectKeptExactly(archive, sent, { outcome: 'processed', mode: 'inline', result: 'processed' });
      } finally {
        await client.close();
      }
    });

    it('transactional: archives them in the event’s transaction', async () => {
      const tables = await freshTables(pool);
      const webhooks = new Webhooks({
        secret: SECRET,
        transactions: new PostgresTransactions(pool, { table: tables.table, pruneIntervalMs: false }),
        archive,
      });
      webhooks.on('image.created', async (event, { transaction }) => {
        await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
      });
      const client = await adapter.create(webhooks);
      try {
        const sent = oddDelivery();
        expect((await client.send(sent.request)).status).toBe(200);
        const kept = await expectKeptExactly(archive, sent, {
          outcome: 'processed',
          mode: 'transactional',
          result: 'processed',
        });
        expect(kept.outcome).toBe('processed');
      } finally {
        await client.close();
      }
    });
  });
});
