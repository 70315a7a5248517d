/**
 * The README's recipes for Kysely and Drizzle: each writes through the event's own transaction (the
 * same connection, not a second one), so a handler that throws after an ORM write keeps nothing.
 * The code of each recipe is the README's, word for word.
 */

import { Webhooks } from '@pixhook/core';
import { PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, text } from 'drizzle-orm/pg-core';
import { Kysely, sql as kyselySql, PostgresDialect } from 'kysely';
import type { PoolClient } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, testPool, uniqueTable } from './helpers/postgres.js';

// --- README: Kysely ---------------------------------------------------------------------------
interface Database {
  images: { id: string; event_id: string };
}

/** Kysely on the event's transaction: its one connection, which Kysely must not give back. */
function kyselyOn(transaction: PoolClient): Kysely<Database> {
  return new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => ({ query: transaction.query.bind(transaction), release() {} }),
        end: async () => {},
      },
    }),
  });
}
// ------------------------------------------------------------------------------------------------

// --- README: Drizzle --------------------------------------------------------------------------
const images = pgTable('images', { id: text('id').primaryKey(), eventId: text('event_id').notNull() });
// In a handler: const db = drizzle({ client: transaction })
// ------------------------------------------------------------------------------------------------

describeWithPostgres('the Kysely and Drizzle recipes', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url);
    await pool.query('CREATE TABLE images (id text PRIMARY KEY, event_id text NOT NULL)');
  });
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  });

  const cases = [
    {
      name: 'Kysely',
      write: async (transaction: PoolClient, id: string, eventId: string) => {
        const db = kyselyOn(transaction);
        await db.insertInto('images').values({ id, event_id: eventId }).execute();
        const { rows } = await kyselySql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db);
        return rows[0]?.pid;
      },
    },
    {
      name: 'Drizzle',
      write: async (transaction: PoolClient, id: string, eventId: string) => {
        const db = drizzle({ client: transaction });
        await db.insert(images).values({ id, eventId });
        const result = await db.execute<{ pid: number }>(drizzleSql`SELECT pg_backend_pid() AS pid`);
        return result.rows[0]?.pid;
      },
    },
  ];

  for (const { name, write } of cases) {
    it(`${name} writes in the event's transaction: rolled back with a throw, committed with the record`, async () => {
      const table = uniqueTable();
      const { migrate } = await import('@pixhook/postgres');
      await migrate(pool, { table });
      const webhooks = new Webhooks({ secret: SECRET, transactions: new PostgresTransactions(pool, { table }) });
      webhooks.onError(() => {});
      let runs = 0;
      const sameConnection: boolean[] = [];
      webhooks.on('image.created', async (event, { transaction }) => {
        runs += 1;
        const ormPid = await write(transaction, `${name}-${event.data.object.id}`, event.id);
        const { rows } = await transaction.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        sameConnection.push(ormPid === rows[0]?.pid);
        if (runs === 1) throw new Error('fails after the ORM write');
      });
      const delivery = signed();
      expect((await webhooks.handle(delivery)).status).toBe(500);
      const count = async () =>
        (await pool.query('SELECT count(*)::int AS n FROM images WHERE event_id = $1', [delivery.event.id])).rows[0].n;
      expect(await count()).toBe(0);
      expect((await webhooks.handle(delivery)).status).toBe(200);
      expect(await count()).toBe(1);
      expect((await webhooks.handle(delivery)).body).toContain('duplicate');
      expect(sameConnection).toEqual([true, true]);
    });
  }
});
