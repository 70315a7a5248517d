/**
 * The inbox list at 10^4, 10^5 and 10^6 archived events on a real Postgres: the first page and a
 * page deep in the list (a cursor half-way down), with and without a filter, and record()'s time at
 * each size. Prints the figures (median of 7 after a warm-up); asserts only that the pages are right,
 * not a time (the machine is shared).
 */

import { migrateArchive, PostgresArchive } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testPool, uniqueTable } from '../helpers/postgres.js';

const SIZES = [10_000, 100_000, 1_000_000];
const BASE = Date.now() - 24 * 60 * 60 * 1000;
/** Row i: lastAt BASE + i*10 (two rows per time: ties), type `type.<i % 10>`, outcome by i % 4. */
const TYPES = 10;

/** Milliseconds of `run`, the median of 7 after one warm-up. */
async function median(run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let index = 0; index < 7; index += 1) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[3] as number;
}

/** The cursor that starts the page after row `i` (the inbox's cursor: base64url JSON of [lastAt, eventId]). */
function cursorAfter(i: number): string {
  return Buffer.from(JSON.stringify([BASE + Math.floor(i / 2) * 10, eventId(i)])).toString('base64url');
}

const eventId = (i: number) => `evt_${String(i).padStart(8, '0')}`;

describeWithPostgres('the inbox list at a million archived events', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url);
  });
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  });

  it('pages at 10^4, 10^5 and 10^6 events, first and deep, with and without a type filter', async () => {
    const table = uniqueTable('inbox');
    await migrateArchive(pool, { table });
    const archive = new PostgresArchive(pool, { table, pruneIntervalMs: false });
    const figures: string[] = [];
    let seeded = 0;
    for (const size of SIZES) {
      const started = performance.now();
      await pool.query(
        `INSERT INTO "${table}" (event_id, event_type, created, first_at, last_at, outcome, deliveries, bytes, kept, mode, body, headers)
         SELECT 'evt_' || lpad(i::text, 8, '0'), 'type.' || (i % ${TYPES}), NULL, $1::bigint + (i / 2) * 10, $1::bigint + (i / 2) * 10,
           (ARRAY['processed', 'failed', 'queued', 'dead-letter'])[i % 4 + 1], 1, 64, 200, 'inline',
           convert_to(repeat('x', 64), 'UTF8'), '{"content-type":"application/json"}'
         FROM generate_series($2::int, $3::int - 1) AS i`,
        [BASE, seeded, size],
      );
      await pool.query(`ANALYZE "${table}"`);
      const seedMs = performance.now() - started;
      seeded = size;

      const newest = size - 1;
      const deep = Math.floor(size / 2);
      // The first page: the newest 50.
      const first = await archive.list({ limit: 50 });
      expect(first.items.map((item) => item.eventId)).toEqual(
        Array.from({ length: 50 }, (_, k) => newest - k).map(eventId),
      );
      expect(first.next).toBeDefined();
      // A page half-way down.
      const deepPage = await archive.list({ limit: 50, cursor: cursorAfter(deep) });
      expect(deepPage.items[0]?.eventId).toBe(eventId(deep - 1));
      expect(deepPage.items).toHaveLength(50);
      // A type (a tenth of the events), first and deep.
      const typed = await archive.list({ limit: 50, type: 'type.3' });
      expect(typed.items.every((item) => item.eventType === 'type.3')).toBe(true);
      expect(typed.items).toHaveLength(50);
      const deepTyped = await archive.list({ limit: 50, type: 'type.3', cursor: cursorAfter(deep) });
      expect(
        deepTyped.items.every((item) => item.eventType === 'type.3' && item.lastAt <= BASE + (deep / 2) * 10),
      ).toBe(true);
      expect(deepTyped.items).toHaveLength(50);
      // The next page of a page reads on from its cursor.
      const second = await archive.list({ limit: 50, type: 'type.3', cursor: typed.next });
      expect(second.items[0]?.eventId).not.toBe(typed.items[49]?.eventId);

      const timings = {
        first: await median(() => archive.list({ limit: 50 })),
        deep: await median(() => archive.list({ limit: 50, cursor: cursorAfter(deep) })),
        typeFirst: await median(() => archive.list({ limit: 50, type: 'type.3' })),
        typeDeep: await median(() => archive.list({ limit: 50, type: 'type.3', cursor: cursorAfter(deep) })),
        outcomeTypeDeep: await median(() =>
          archive.list({ limit: 50, type: 'type.3', outcome: 'failed', cursor: cursorAfter(deep) }),
        ),
        // No event is both (type.3 ids are odd, processed ones even): the worst case, a whole index read.
        noMatch: await median(() => archive.list({ limit: 50, type: 'type.3', outcome: 'processed' })),
        sinceUntil: await median(() =>
          archive.list({ limit: 50, since: BASE + (deep / 2) * 10 - 100_000, until: BASE + (deep / 2) * 10 }),
        ),
      };
      // record(): a new event's delivery, one statement, 200 of them one after another.
      const records = 200;
      const recordStarted = performance.now();
      for (let index = 0; index < records; index += 1) {
        await archive.record({
          kind: 'delivery',
          eventId: `evt_new_${size}_${index}`,
          eventType: 'type.new',
          created: 1_700_000_000,
          deliveryId: `dlv_new_${size}_${index}`,
          timestamp: 1_700_000_000,
          at: Date.now(),
          body: new TextEncoder().encode(JSON.stringify({ id: index, data: 'x'.repeat(500) })),
          headers: { 'content-type': 'application/json', 'x-service-delivery': `dlv_new_${size}_${index}` },
          secretIndex: 0,
          mode: 'inline',
          status: 200,
          result: 'processed',
          ms: 2,
          runs: [{ handler: 'store', ms: 1, ok: true }],
        });
      }
      const recordMs = (performance.now() - recordStarted) / records;
      // Out of the way of the next size's pages.
      await pool.query(`DELETE FROM "${table}" WHERE event_type = 'type.new'`);
      const ms = (value: number) => `${value.toFixed(2)} ms`;
      figures.push(
        `${size.toLocaleString('en')} events (seeded in ${(seedMs / 1000).toFixed(1)} s): ` +
          `first page ${ms(timings.first)}, deep page ${ms(timings.deep)}; ` +
          `type filter: first ${ms(timings.typeFirst)}, deep ${ms(timings.typeDeep)}; ` +
          `type+outcome deep ${ms(timings.outcomeTypeDeep)}, with no match ${ms(timings.noMatch)}; ` +
          `since/until ${ms(timings.sinceUntil)}; ` +
          `record() ${ms(recordMs)} each`,
      );
    }
    console.log(`PostgresArchive.list(), 50 a page, median of 7:\n${figures.join('\n')}`);
    await archive.close();
  });
});
