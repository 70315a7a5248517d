/**
 * PostgresArchive given to `new Webhooks({ archive })` in transactional mode on a real Postgres: the
 * delivery is archived byte-exact with the event's transaction, an archive that cannot be written
 * loses no event, and a replay (from code, or requested by another process as the CLI does) runs the
 * handlers again through `PostgresTransactions.begin(eventId, { replay: true })`.
 */

import { Webhooks } from '@pixhook/core';
import { migrateArchive, PostgresArchive, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTables, rowCounts, SECRET, signed, testPool, uniqueTable, until } from './helpers/postgres.js';

describeWithPostgres('PostgresArchive with Webhooks in transactional mode', () => {
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

  async function app() {
    const tables = await freshTables(pool);
    const inbox = uniqueTable('inbox');
    await migrateArchive(pool, { table: inbox });
    const archive = new PostgresArchive(pool, { table: inbox, pruneIntervalMs: false, replayPollMs: 50 });
    const webhooks = new Webhooks({
      secret: SECRET,
      transactions: new PostgresTransactions(pool, { table: tables.table, pruneIntervalMs: false }),
      archive,
    });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.code));
    webhooks.onAny(async (event, { transaction }) => {
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
    });
    return { tables, inbox, archive, webhooks, errors };
  }

  it('archives the delivery byte-exact with the event, and replays it from code and from a request', async () => {
    const { tables, inbox, archive, webhooks, errors } = await app();
    const delivery = signed();
    const answer = await webhooks.handle(delivery);
    expect(answer.status).toBe(200);
    const event = await archive.get(delivery.event.id);
    expect(Buffer.from(event?.body ?? []).toString('utf8')).toBe(delivery.body);
    expect(event).toMatchObject({ outcome: 'processed', deliveries: 1, mode: 'transactional' });
    expect(event?.timeline).toEqual([expect.objectContaining({ kind: 'delivery', result: 'processed', status: 200 })]);

    const replayed = await webhooks.replay(delivery.event.id);
    expect(replayed.outcome).toBe('processed');
    expect((await rowCounts(pool, tables.business)).get(delivery.event.id)).toBe(2);

    // Another process (the CLI, the dashboard) asks for a replay: the app's Webhooks takes it.
    const reader = new PostgresArchive(pool, { table: inbox, pruneIntervalMs: false });
    expect(await reader.requestReplay([delivery.event.id])).toBe(1);
    await until(
      async () => (await rowCounts(pool, tables.business)).get(delivery.event.id) === 3,
      'the requested replay',
    );
    await until(
      async () =>
        (await archive.get(delivery.event.id))?.timeline.filter((entry) => entry.kind === 'replay').length === 2,
      'both replays in the timeline',
    );
    expect(errors).toEqual([]);
    await archive.close();
  });

  it('commits the event when the archive cannot be written, and reports ARCHIVE_FAILED', async () => {
    const { tables, inbox, archive, webhooks, errors } = await app();
    await pool.query(`DROP TABLE ${inbox}_timeline`);
    const delivery = signed();
    const answer = await webhooks.handle(delivery);
    expect(answer.status).toBe(200);
    expect((await rowCounts(pool, tables.business)).get(delivery.event.id)).toBe(1);
    await until(() => errors.includes('ARCHIVE_FAILED'), 'ARCHIVE_FAILED');
    // The retry is a duplicate: the event's record committed with its write.
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect((await rowCounts(pool, tables.business)).get(delivery.event.id)).toBe(1);
    await archive.close();
  });
});
