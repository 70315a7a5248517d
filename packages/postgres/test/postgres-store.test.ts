/** PostgresStore on a real Postgres: the shared store behaviour table, its migration, and outages. */

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Webhooks } from '@pixhook/core';
import { getMigrationSql, migrate, PostgresStore, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { describeStoreSuite } from '@pixhook/test-helpers/store-suite';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, signed, sleep, testPool, uniqueTable, until } from './helpers/postgres.js';

describeWithPostgres('PostgresStore against a real Postgres', () => {
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

  describeStoreSuite(
    'PostgresStore',
    async (options) => {
      const table = uniqueTable();
      await migrate(pool, { table });
      return new PostgresStore(pool, { ...options, table });
    },
    // Each test has its own table; most of the table waits for TTLs to lapse, so the tests run side
    // by side (at most 5 at once, within the pool's 20 connections) instead of one sleep after another.
    describe.concurrent,
  );

  describe('the migration', () => {
    it('ships migration.sql, the same SQL getMigrationSql() gives for the default table', () => {
      const file = readFileSync(fileURLToPath(new URL('../sql/migration.sql', import.meta.url)), 'utf8');
      expect(file).toBe(getMigrationSql());
      expect(file).toContain('CREATE TABLE IF NOT EXISTS "public"."pixhook_events"');
    });

    it('creates the table in another schema, and is safe to run again and from several instances at once', async () => {
      await pool.query('CREATE SCHEMA IF NOT EXISTS webhooks');
      const table = uniqueTable();
      await Promise.all(Array.from({ length: 5 }, () => migrate(pool, { schema: 'webhooks', table })));
      await migrate(pool, { schema: 'webhooks', table });
      const { rows } = await pool.query(
        'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
        ['webhooks', table],
      );
      expect(rows.map((row) => row.column_name)).toEqual(['event_id', 'state', 'token', 'expires_at', 'updated_at']);
      const store = new PostgresStore(pool, { schema: 'webhooks', table });
      expect(await store.claim('evt_schema', 'token-1')).toBe('claimed');
    });

    it('quotes odd table names rather than running them as SQL', async () => {
      const table = `odd"; DROP TABLE x; --${uniqueTable().slice(-6)}`;
      await migrate(pool, { table });
      const store = new PostgresStore(pool, { table });
      expect(await store.claim('evt_odd', 'token-1')).toBe('claimed');
      const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_tables WHERE tablename = $1', [table]);
      expect(rows[0].n).toBe(1);
    });

    it('says to run migrate() when the table is missing, through onError with a 503', async () => {
      const store = new PostgresStore(pool, { table: uniqueTable('missing') });
      await expect(store.claim('evt_missing', 'token-1')).rejects.toThrow(/does not exist: run migrate\(pool\)/);
      const webhooks = new Webhooks({ secret: SECRET, store });
      const causes: unknown[] = [];
      webhooks.onError((error) => void causes.push(error.cause));
      webhooks.onAny(() => {});
      const answer = await webhooks.handle(signed());
      expect(answer.status).toBe(503);
      expect(String(causes[0])).toMatch(/migrate\(pool\)/);
    });
  });

  describe('options', () => {
    const fakePool = { connect: async () => ({}), query: async () => ({}) } as unknown as pg.Pool;
    it('checks them when the store is built', () => {
      expect(() => new PostgresStore(undefined as unknown as pg.Pool)).toThrow(/needs a node-postgres Pool/);
      expect(() => new PostgresStore(fakePool, { timeoutMs: 10_000 })).toThrow(/above 9000/);
      expect(() => new PostgresStore(fakePool, { timeoutMs: 0 })).toThrow(/positive whole number/);
      expect(() => new PostgresStore(fakePool, { inFlightTtlMs: 1.5 })).toThrow(/inFlightTtlMs/);
      expect(() => new PostgresStore(fakePool, { table: '' })).toThrow(/table must be a non-empty string/);
      expect(() => new PostgresStore(fakePool, { table: 'x'.repeat(64) })).toThrow(/63-byte/);
      expect(() => new PostgresStore(fakePool, { tabel: 'x' } as never)).toThrow(/tabel/);
      expect(() => new PostgresTransactions(fakePool, { inFlightTtlMs: 5 } as never)).toThrow(/inFlightTtlMs/);
      expect(() => new PostgresTransactions(fakePool, { pruneIntervalMs: false })).not.toThrow();
      expect(() => new PostgresStore(fakePool, { preparedStatements: 'yes' } as never)).toThrow(/true or false/);
    });

    it('shows its table, and nothing of the connection, in console.log', () => {
      const store = new PostgresStore(fakePool, { table: 'events' });
      const shown = (store as unknown as Record<symbol, () => string>)[Symbol.for('nodejs.util.inspect.custom')]?.();
      expect(shown).toBe('PostgresStore { table: "public"."events" }');
    });
  });

  it('prunes expired rows, and keeps live ones', async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const store = new PostgresStore(pool, { table, completedTtlMs: 200, pruneIntervalMs: false });
    for (const id of ['evt_p1', 'evt_p2', 'evt_p3']) await store.complete(id, 'token');
    await sleep(300);
    expect(await store.claim('evt_live', 'token-2')).toBe('claimed');
    expect(await store.prune()).toBe(3);
    const { rows } = await pool.query(`SELECT event_id FROM ${table}`);
    expect(rows.map((row) => row.event_id)).toEqual(['evt_live']);
  });

  it('prunes by itself on the first claim, once per pruneIntervalMs', async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const writer = new PostgresStore(pool, { table, completedTtlMs: 100, pruneIntervalMs: false });
    await writer.complete('evt_old', 'token');
    await sleep(200);
    const store = new PostgresStore(pool, { table });
    await store.claim('evt_new', 'token-2');
    await until(
      async () => (await pool.query(`SELECT 1 FROM ${table} WHERE event_id = 'evt_old'`)).rowCount === 0,
      'the prune',
    );
  });
});

describeWithPostgres('PostgresStore when Postgres is away', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgresServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 503 within timeoutMs while Postgres is frozen, and gives back a claim that lands late', async () => {
    const pool = testPool(server.url);
    const table = uniqueTable();
    await migrate(pool, { table });
    const store = new PostgresStore(pool, { table, timeoutMs: 300 });
    const webhooks = new Webhooks({ secret: SECRET, store });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.code));
    let runs = 0;
    webhooks.onAny(() => {
      runs += 1;
    });
    const delivery = signed();
    // A connection is open before the freeze, as in a running app.
    await pool.query('SELECT 1');
    server.pause();
    let answer: Awaited<ReturnType<Webhooks['handle']>>;
    const started = Date.now();
    try {
      answer = await webhooks.handle(delivery);
    } finally {
      server.resume();
    }
    // timeoutMs is 300 ms: a frozen Postgres would otherwise hold the answer for ever. The margin is
    // a busy machine's, inside the service's 10 s.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(runs).toBe(0);
    // The claim landed once Postgres woke, and was given back: the retry runs the event at once.
    await until(async () => (await webhooks.handle(delivery)).status === 200, 'the retry to be processed');
    expect(runs).toBe(1);
    await pool.end();
  });

  it('answers 503 at once while Postgres is stopped, and processes the retry once it is back', async () => {
    const pool = testPool(server.url);
    const table = uniqueTable();
    await migrate(pool, { table });
    // A long timeoutMs: "at once" is well before it, whatever the machine's load.
    const webhooks = new Webhooks({ secret: SECRET, store: new PostgresStore(pool, { table, timeoutMs: 9_000 }) });
    webhooks.onError(() => {});
    let runs = 0;
    webhooks.onAny(() => {
      runs += 1;
    });
    const delivery = signed();
    await server.stop('fast');
    try {
      const started = Date.now();
      const answer = await webhooks.handle(delivery);
      expect(answer.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      await server.start();
    }
    await until(async () => (await webhooks.handle(delivery)).status === 200, 'the retry to be processed');
    expect(runs).toBe(1);
    await pool.end();
  });
});
