/**
 * The ordering guard's marks and named handlers' records on a real Postgres. `PostgresStore.advance`
 * is one statement on the marks' table `migrate()` creates (`<table>_marks`), compared as core's
 * rule, atomic under concurrent calls, pruned once expired; `PostgresTransactions` moves the mark in
 * the event's transaction (it commits or rolls back with the handlers' writes, and holds its row
 * until then). End to end: a late older event is acknowledged and skipped, also on another instance;
 * a property test delivers random interleavings of events, duplicates and failed attempts in
 * transactional mode and checks the app's table ends in the in-order state. Named handlers: a
 * failing one is retried alone, each transactional one commits its own writes.
 */

import { type AnyEvent, isCurrent, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { getMigrationSql, migrate, PostgresStore, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, testPool, uniqueTable, until } from './helpers/postgres.js';

const BY_IMAGE = { key: (event: { data: { object: Record<string, unknown> } }) => `image:${event.data.object.id}` };

/** Core's rule, the tests' reference: `a` is at least as new as `b`. */
const atLeast = (a: { version: number; id: string }, b: { version: number; id: string }) =>
  isCurrent(a.version, a.id, b.version, b.id);

/** Now, in the service's seconds: a failed delivery of an event this young is not its last attempt. */
const NOW = () => Math.floor(Date.now() / 1000);

function event(image: string, created: number, id?: string) {
  return createTestEvent('image.created', { id: image }, { created, ...(id === undefined ? {} : { id }) }) as AnyEvent;
}

async function send(webhooks: Webhooks, sent: AnyEvent) {
  const { status, body } = await webhooks.handle({ method: 'POST', ...createSignedRequest(sent, { secret: SECRET }) });
  return { status, body: JSON.parse(body) as unknown };
}

describeWithPostgres('the ordering guard and named handlers on Postgres', () => {
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

  /** A migrated table, and a PostgresStore on it. */
  async function migrated(options: { completedTtlMs?: number; pruneIntervalMs?: false } = {}) {
    const table = uniqueTable();
    await migrate(pool, { table });
    return { table, marks: `${table}_marks`, store: new PostgresStore(pool, { table, ...options }) };
  }

  /** The marks' rows, by key. */
  async function marks(table: string) {
    const { rows } = await pool.query(`SELECT key, version, event_id FROM ${table} ORDER BY key`);
    return Object.fromEntries(rows.map((row) => [row.key, `${row.version} ${row.event_id}`]));
  }

  describe('the migration', () => {
    it('creates the marks table (version double precision, event_id COLLATE "C"); an app migrated before gets it by running migrate() again', async () => {
      const table = uniqueTable();
      // What migrate() created before the marks: the events' table and its index only.
      const before = getMigrationSql({ table }).split('-- The ordering guard')[0] as string;
      expect(before).toContain('CREATE TABLE IF NOT EXISTS');
      await pool.query(before);
      const store = new PostgresStore(pool, { table });
      await expect(store.advance('image:img_1', 1, 'evt_a')).rejects.toThrow(
        `pixhook: the ordering guard's table "public"."${table}_marks" does not exist: run migrate(pool) from @pixhook/postgres again`,
      );
      // Nothing else needs the marks: claims and pruning go on.
      expect(await store.claim('evt_old', 'token-1')).toBe('claimed');
      expect(await store.prune()).toBe(0);
      await migrate(pool, { table });
      await migrate(pool, { table });
      expect(await store.advance('image:img_1', 1, 'evt_a')).toBe('current');
      const { rows } = await pool.query(
        `SELECT column_name, data_type, collation_name FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
        [`${table}_marks`],
      );
      expect(rows).toEqual([
        { column_name: 'key', data_type: 'text', collation_name: null },
        { column_name: 'version', data_type: 'double precision', collation_name: null },
        { column_name: 'event_id', data_type: 'text', collation_name: 'C' },
        { column_name: 'expires_at', data_type: 'timestamp with time zone', collation_name: null },
      ]);
      const index = await pool.query('SELECT 1 FROM pg_indexes WHERE indexname = $1', [`${table}_marks_exp`]);
      expect(index.rowCount).toBe(1);
    });

    it('takes the longest table name the events table takes: the marks and their index fit too', async () => {
      const table = `pixhook_${'x'.repeat(52 - 'pixhook_'.length)}`;
      expect(Buffer.byteLength(`${table}_expires_at`)).toBe(63);
      await migrate(pool, { table });
      expect(await new PostgresStore(pool, { table }).advance('k', 1, 'evt_a')).toBe('current');
      const { rows } = await pool.query('SELECT tablename FROM pg_tables WHERE tablename = $1', [`${table}_marks`]);
      expect(rows).toHaveLength(1);
    });
  });

  describe('PostgresStore.advance()', () => {
    it('current on a new key, stale for an older version, current again for the same event, ties by event id', async () => {
      const { store, marks: table } = await migrated();
      expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('current');
      expect(await marks(table)).toEqual({ 'image:img_1': '1000 evt_m' });
      expect(await store.advance('image:img_1', 999, 'evt_z')).toBe('stale');
      expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('current');
      // Equal versions: the greater event id wins, byte by byte ('Z' < 'a' < 'b'), whatever the locale.
      expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('stale');
      expect(await store.advance('image:img_1', 1_000, 'evt_Z')).toBe('stale');
      expect(await store.advance('image:img_1', 1_000, 'evt_mm')).toBe('current');
      expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('stale');
      expect(await store.advance('image:img_1', 1_001, 'evt_a')).toBe('current');
      expect(await store.advance('image:img_2', 5, 'evt_a')).toBe('current');
      expect(await marks(table)).toEqual({ 'image:img_1': '1001 evt_a', 'image:img_2': '5 evt_a' });
      // Kept for completedTtlMs (48 h by default).
      const { rows } = await pool.query(
        `SELECT extract(epoch FROM expires_at - now()) AS left FROM ${table} WHERE key = 'image:img_1'`,
      );
      expect(Number(rows[0].left)).toBeGreaterThan(47 * 60 * 60);
      expect(Number(rows[0].left)).toBeLessThanOrEqual(48 * 60 * 60);
    });

    it('compares versions as numbers at full precision (fractions, 2^53, negatives, exponents)', async () => {
      const { store } = await migrated();
      const pairs: [number, number][] = [
        [9, 10],
        [0.1 + 0.2, 0.30000000000000004 + Number.EPSILON],
        [0.3, 0.1 + 0.2],
        [2 ** 53, 2 ** 53 + 2],
        [-5, -4.5],
        [1e21, 1e21 * 1.0000000001],
        [5e-324, 1e-323],
        [-1e-7, 0],
      ];
      for (const [index, [older, newer]] of pairs.entries()) {
        expect(older < newer).toBe(true);
        expect(await store.advance(`k${index}`, newer, 'evt_a')).toBe('current');
        expect(await store.advance(`k${index}`, older, 'evt_z')).toBe('stale');
        expect(await store.advance(`k${index}`, newer, 'evt_a')).toBe('current');
      }
    });

    it('lets an older event in again once the mark expired (completedTtlMs), and prunes expired marks', async () => {
      const { store, marks: table } = await migrated({ completedTtlMs: 300, pruneIntervalMs: false });
      expect(await store.advance('image:img_1', 2_000, 'evt_b')).toBe('current');
      expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('stale');
      expect(await store.advance('image:img_2', 1, 'evt_a')).toBe('current');
      await until(
        async () => (await pool.query(`SELECT 1 FROM ${table} WHERE expires_at <= now()`)).rowCount === 2,
        'the marks to expire',
      );
      expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('current');
      expect(await marks(table)).toEqual({ 'image:img_1': '1000 evt_a', 'image:img_2': '1 evt_a' });
      await until(
        async () => (await pool.query(`SELECT 1 FROM ${table} WHERE expires_at <= now()`)).rowCount === 2,
        'the marks to expire again',
      );
      expect(await store.advance('image:img_3', 1, 'evt_a')).toBe('current');
      expect(await store.prune()).toBe(2);
      expect(await marks(table)).toEqual({ 'image:img_3': '1 evt_a' });
    });

    it('refuses what is not a key, a finite version or an event id, and writes nothing', async () => {
      const { store, marks: table } = await migrated();
      await expect(store.advance('', 1, 'evt_a')).rejects.toThrow(/^pixhook: PostgresStore: advance\(\)/);
      await expect(store.advance(5 as never, 1, 'evt_a')).rejects.toThrow(TypeError);
      await expect(store.advance('k', Number.NaN, 'evt_a')).rejects.toThrow(/finite number version/);
      await expect(store.advance('k', Number.NEGATIVE_INFINITY, 'evt_a')).rejects.toThrow(/finite/);
      await expect(store.advance('k', '5' as never, 'evt_a')).rejects.toThrow(/finite/);
      await expect(store.advance('k', 1, '')).rejects.toThrow(/event id/);
      expect(await marks(table)).toEqual({});
    });

    it('is atomic under concurrent calls from two stores: each current one was at least every mark before it, the greatest ends as the mark', async () => {
      const { store, table, marks: marksTable } = await migrated();
      const other = new PostgresStore(pool, { table });
      // Every write to the marks, in the order it was made (the row's lock orders them), by a trigger.
      const log = uniqueTable('log');
      await pool.query(
        `CREATE TABLE ${log} (n bigserial PRIMARY KEY, key text, version double precision, event_id text)`,
      );
      await pool.query(`CREATE FUNCTION ${log}_f() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO ${log} (key, version, event_id) VALUES (NEW.key, NEW.version, NEW.event_id); RETURN NEW; END $$`);
      await pool.query(
        `CREATE TRIGGER ${log}_t AFTER INSERT OR UPDATE ON ${marksTable} FOR EACH ROW EXECUTE FUNCTION ${log}_f()`,
      );
      for (let round = 0; round < 5; round++) {
        const key = `image:race_${round}`;
        const calls = Array.from({ length: 40 }, (_, i) => ({
          version: Math.floor(Math.random() * 8),
          id: `evt_${String.fromCharCode(97 + Math.floor(Math.random() * 26))}${i}`,
        }));
        const answers = await Promise.all(
          calls.map((call, i) => (i % 2 === 0 ? store : other).advance(key, call.version, call.id)),
        );
        const greatest = calls.reduce((best, call) => (atLeast(call, best) ? call : best));
        expect(answers[calls.indexOf(greatest)]).toBe('current');
        expect((await marks(marksTable))[key]).toBe(`${greatest.version} ${greatest.id}`);
        const currents = calls.filter((_, i) => answers[i] === 'current');
        for (const [i, call] of calls.entries()) {
          if (answers[i] === 'stale') expect(currents.some((newer) => !atLeast(call, newer))).toBe(true);
        }
        // The marks written are exactly the current answers, and each was at least the one before.
        const { rows } = await pool.query(`SELECT version, event_id AS id FROM ${log} WHERE key = $1 ORDER BY n`, [
          key,
        ]);
        const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
        expect([...rows].sort(byId)).toEqual(currents.map(({ version, id }) => ({ version, id })).sort(byId));
        for (let i = 1; i < rows.length; i++) expect(atLeast(rows[i], rows[i - 1])).toBe(true);
      }
    });
  });

  describe("PostgresTransactions' open events", () => {
    it("advance() moves the mark in the event's transaction: another waits on its row, and sees it committed or rolled back", async () => {
      const { table, marks: marksTable } = await migrated();
      // Long waits: the other advance() waits on the row for as long as the test holds it.
      const store = new PostgresStore(pool, { table, timeoutMs: 9_000 });
      const transactions = new PostgresTransactions(pool, { table, timeoutMs: 9_000 });
      /** Waits until a statement on the marks waits for a lock. */
      const someoneWaits = () =>
        until(
          async () =>
            (
              await pool.query(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%_marks%'",
              )
            ).rowCount === 1,
          'a statement waiting for the mark',
        );

      for (const ending of ['rollback', 'commit'] as const) {
        const key = `image:${ending}`;
        const begun = await transactions.begin(`evt_${ending}`);
        if (begun.state !== 'claimed') throw new Error(`begin answered ${begun.state}`);
        expect(await begun.advance?.(key, 5, 'evt_b')).toBe('current');
        // Not visible outside the transaction yet.
        expect((await marks(marksTable))[key]).toBeUndefined();
        const waiting = store.advance(key, 4, 'evt_a');
        await someoneWaits();
        if (ending === 'rollback') {
          await begun.rollback();
          // The mark rolled back: the older event is the first one seen.
          expect(await waiting).toBe('current');
          expect((await marks(marksTable))[key]).toBe('4 evt_a');
        } else {
          await begun.commit();
          expect(await waiting).toBe('stale');
          expect((await marks(marksTable))[key]).toBe('5 evt_b');
        }
      }
      const begun = await transactions.begin('evt_after');
      if (begun.state !== 'claimed') throw new Error(`begin answered ${begun.state}`);
      await begun.commit();
      await expect(begun.advance?.('k', 1, 'evt_a')).rejects.toThrow(/after the transaction ended/);
    });
  });

  describe('end to end', () => {
    it('inline: a late older event is acknowledged, its handler skipped, STALE_EVENT told; a second instance agrees', async () => {
      const { table, marks: marksTable } = await migrated();
      const secondPool = testPool(server.url, { max: 5 });
      try {
        const state = new Map<string, string>();
        const errors: WebhookVerificationError[] = [];
        const instance = (on: typeof pool) => {
          const webhooks = new Webhooks({ secret: SECRET, store: new PostgresStore(on, { table }) });
          webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => void state.set(String(e.data.object.id), e.id));
          webhooks.onError((error) => void errors.push(error));
          return webhooks;
        };
        const [a, b] = [instance(pool), instance(secondPool)];
        const newer = event('img_1', 2_000);
        const older = event('img_1', 1_000);
        expect(await send(a, newer)).toEqual({ status: 200, body: { received: true } });
        expect(await send(b, older)).toEqual({ status: 200, body: { received: true } });
        expect(state.get('img_1')).toBe(newer.id);
        expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
        expect(errors[0]?.message).toContain(`Event ${older.id} (image.created, version 1000)`);
        expect(await send(a, older)).toEqual({ status: 200, body: { received: true, duplicate: true } });
        expect(await marks(marksTable)).toEqual({ 'image:img_1': `2000 ${newer.id}` });
        // A tie, across instances: the greater event id stays.
        expect((await send(b, event('img_2', 500, 'evt_b'))).status).toBe(200);
        expect((await send(a, event('img_2', 500, 'evt_a'))).status).toBe(200);
        expect(state.get('img_2')).toBe('evt_b');
      } finally {
        await secondPool.end();
      }
    });

    it('transactional: the mark commits with the writes; a failed newest event rolls it back, the older one applies, the newest retried wins', async () => {
      const { table, marks: marksTable } = await migrated();
      const images = uniqueTable('images');
      await pool.query(`CREATE TABLE ${images} (id text PRIMARY KEY, event_id text NOT NULL)`);
      const webhooks = new Webhooks({ secret: SECRET, transactions: new PostgresTransactions(pool, { table }) });
      const errors: WebhookVerificationError[] = [];
      webhooks.onError((error) => void errors.push(error));
      let fail = true;
      webhooks.on('image.created', { ordering: BY_IMAGE }, async (e, { transaction }) => {
        await transaction.query(
          `INSERT INTO ${images} (id, event_id) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET event_id = EXCLUDED.event_id`,
          [e.data.object.id, e.id],
        );
        if (fail && e.id === newest.id) throw new Error('the newest fails once, after its write');
      });
      const now = NOW();
      const newest = event('img_1', now + 2);
      const older = event('img_1', now + 1);
      const state = async () => (await pool.query(`SELECT id, event_id FROM ${images}`)).rows;
      expect((await send(webhooks, newest)).status).toBe(500);
      expect(await state()).toEqual([]);
      expect(await marks(marksTable)).toEqual({});
      expect((await send(webhooks, older)).status).toBe(200);
      expect(await state()).toEqual([{ id: 'img_1', event_id: older.id }]);
      expect(await marks(marksTable)).toEqual({ 'image:img_1': `${now + 1} ${older.id}` });
      fail = false;
      expect((await send(webhooks, newest)).status).toBe(200);
      expect(await state()).toEqual([{ id: 'img_1', event_id: newest.id }]);
      expect(await marks(marksTable)).toEqual({ 'image:img_1': `${now + 2} ${newest.id}` });
      // The older one again (a late copy): a duplicate. A third, older still and new: stale, nothing written.
      expect((await send(webhooks, older)).body).toEqual({ received: true, duplicate: true });
      const oldest = event('img_1', now);
      expect(await send(webhooks, oldest)).toEqual({ status: 200, body: { received: true } });
      expect(await state()).toEqual([{ id: 'img_1', event_id: newest.id }]);
      expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED', 'STALE_EVENT']);
    });

    it('property, transactional: random interleavings of events, duplicates and failed attempts end in the in-order state', async () => {
      const { table } = await migrated();
      const images = uniqueTable('images');
      await pool.query(`CREATE TABLE ${images} (id text PRIMARY KEY, event_id text NOT NULL)`);
      const secondPool = testPool(server.url, { max: 5 });
      const spec = fc.record({
        image: fc.constantFrom('a', 'b'),
        // Few distinct seconds: many ties, which the event id breaks.
        created: fc.integer({ min: 0, max: 3 }),
        failures: fc.integer({ min: 0, max: 2 }),
        copies: fc.integer({ min: 1, max: 3 }),
      });
      let run = 0;
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.uniqueArray(spec, { minLength: 1, maxLength: 6, selector: (s) => JSON.stringify(s) }),
            fc.infiniteStream(fc.nat()),
            async (specs, picks) => {
              run += 1;
              const now = NOW();
              const events = specs.map((s, i) => ({
                ...s,
                image: `r${run}_${s.image}`,
                event: event(
                  `r${run}_${s.image}`,
                  now + s.created,
                  `evt_${String.fromCharCode(97 + ((i * 5) % 26))}${i}_r${run}`,
                ),
              }));
              const attempts = new Map<string, number>();
              // Two instances, each with its own pool, on the same tables.
              const instances = [pool, secondPool].map((on) => {
                const webhooks = new Webhooks({
                  secret: SECRET,
                  transactions: new PostgresTransactions(on, { table }),
                });
                webhooks.onError(() => {});
                webhooks.on('image.created', { ordering: BY_IMAGE }, async (e, { transaction }) => {
                  await transaction.query(
                    `INSERT INTO ${images} (id, event_id) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET event_id = EXCLUDED.event_id`,
                    [e.data.object.id, e.id],
                  );
                  const made = (attempts.get(e.id) ?? 0) + 1;
                  attempts.set(e.id, made);
                  const failures = events.find((x) => x.event.id === e.id)?.failures ?? 0;
                  // After its write: the rollback must undo it, and the mark with it.
                  if (made <= failures) throw new Error('transient');
                });
                return webhooks;
              });
              const pending = events.flatMap((x) => Array.from({ length: x.copies }, () => x.event));
              const next = picks[Symbol.iterator]();
              let sent = 0;
              while (pending.length > 0) {
                const [one] = pending.splice((next.next().value as number) % pending.length, 1) as [AnyEvent];
                const { status } = await send(instances[sent++ % 2] as Webhooks, one);
                if (status !== 200) pending.splice((next.next().value as number) % (pending.length + 1), 0, one);
              }
              const { rows } = await pool.query(`SELECT id, event_id FROM ${images} WHERE id LIKE $1`, [`r${run}\\_%`]);
              const kept = Object.fromEntries(rows.map((row) => [row.id, row.event_id]));
              const expected: Record<string, string> = {};
              for (const image of new Set(events.map((x) => x.image))) {
                const mine = events.filter((x) => x.image === image).map((x) => x.event);
                const newest = mine.sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : 1)).at(-1) as AnyEvent;
                expected[image] = newest.id;
              }
              expect(kept).toEqual(expected);
            },
          ),
          { numRuns: 30 },
        );
      } finally {
        await secondPool.end();
      }
    });
  });

  describe('named handlers', () => {
    it('PostgresStore: a failing one is retried alone; each has its record under <event id>#<id>', async () => {
      const { table, store } = await migrated();
      const webhooks = new Webhooks({ secret: SECRET, store });
      webhooks.onError(() => {});
      const runs = { thumbnails: 0, billing: 0 };
      webhooks.on('image.created', { id: 'thumbnails' }, async () => {
        runs.thumbnails += 1;
      });
      webhooks.on('image.created', { id: 'billing' }, async () => {
        runs.billing += 1;
        if (runs.billing === 1) throw new Error('billing is down');
      });
      const sent = event('img_1', NOW());
      const records = async () =>
        (await pool.query(`SELECT event_id, state FROM ${table} ORDER BY event_id`)).rows.map(
          (row) => `${row.event_id} ${row.state}`,
        );
      expect((await send(webhooks, sent)).status).toBe(500);
      expect(runs).toEqual({ thumbnails: 1, billing: 1 });
      expect(await records()).toEqual([`${sent.id}#thumbnails completed`]);
      expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true } });
      expect(runs).toEqual({ thumbnails: 1, billing: 2 });
      expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(runs).toEqual({ thumbnails: 1, billing: 2 });
      expect(await records()).toEqual(
        [`${sent.id} completed`, `${sent.id}#billing completed`, `${sent.id}#thumbnails completed`].sort(),
      );
    });

    it('PostgresTransactions: each named handler commits its own writes; a failing one rolls back alone and is retried alone', async () => {
      const { table } = await migrated();
      const rows = uniqueTable('rows');
      await pool.query(`CREATE TABLE ${rows} (handler text NOT NULL, event_id text NOT NULL)`);
      const webhooks = new Webhooks({ secret: SECRET, transactions: new PostgresTransactions(pool, { table }) });
      webhooks.onError(() => {});
      const runs = { thumbnails: 0, billing: 0, plain: 0 };
      webhooks.on('image.created', { id: 'thumbnails' }, async (e, { transaction }) => {
        runs.thumbnails += 1;
        await transaction.query(`INSERT INTO ${rows} VALUES ('thumbnails', $1)`, [e.id]);
      });
      webhooks.on('image.created', { id: 'billing' }, async (e, { transaction }) => {
        runs.billing += 1;
        await transaction.query(`INSERT INTO ${rows} VALUES ('billing', $1)`, [e.id]);
        if (runs.billing === 1) throw new Error('billing fails once, after its write');
      });
      webhooks.on('image.created', async (e, { transaction }) => {
        runs.plain += 1;
        await transaction.query(`INSERT INTO ${rows} VALUES ('plain', $1)`, [e.id]);
      });
      const sent = event('img_1', NOW());
      const written = async () =>
        (await pool.query(`SELECT handler, count(*)::int AS n FROM ${rows} GROUP BY handler ORDER BY handler`)).rows;
      expect((await send(webhooks, sent)).status).toBe(500);
      expect(runs).toEqual({ thumbnails: 1, billing: 1, plain: 1 });
      // Thumbnails committed in its own transaction; billing's write and the event's rolled back.
      expect(await written()).toEqual([{ handler: 'thumbnails', n: 1 }]);
      expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true } });
      expect(runs).toEqual({ thumbnails: 1, billing: 2, plain: 2 });
      expect(await written()).toEqual([
        { handler: 'billing', n: 1 },
        { handler: 'plain', n: 1 },
        { handler: 'thumbnails', n: 1 },
      ]);
      expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(runs).toEqual({ thumbnails: 1, billing: 2, plain: 2 });
      const records = await pool.query(`SELECT event_id FROM ${table} WHERE state = 'completed' ORDER BY event_id`);
      expect(records.rows.map((row) => row.event_id)).toEqual(
        [sent.id, `${sent.id}#billing`, `${sent.id}#thumbnails`].sort(),
      );
    });
  });
});
