/**
 * PostgresArchive on a real Postgres, through its public API: record and get byte-exact, the outcome
 * rule (core's outcomeAfter), list filters and keyset paging, the savepoint in the event's
 * transaction, retention and size-cap pruning, replay requests taken once, and the replay option of
 * PostgresTransactions.begin().
 */

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type ArchivedDelivery,
  type ArchivedStep,
  type ArchiveEntry,
  INBOX_OUTCOMES,
  type InboxOutcome,
  type InboxSummary,
  outcomeAfter,
} from '@pixhook/core';
import {
  getArchiveMigrationSql,
  migrate,
  migrateArchive,
  PostgresArchive,
  type PostgresArchiveOptions,
  PostgresTransactions,
} from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, testPool, uniqueTable, until } from './helpers/postgres.js';

let sequence = 0;

/** A verified delivery of `eventId`, as core hands it to the archive. */
function delivery(eventId: string, overrides: Partial<ArchivedDelivery> = {}): ArchivedDelivery {
  sequence += 1;
  return {
    kind: 'delivery',
    eventId,
    eventType: 'image.created',
    created: 1_700_000_000,
    deliveryId: `dlv_${sequence}`,
    timestamp: 1_700_000_000,
    at: Date.now(),
    body: new TextEncoder().encode(JSON.stringify({ id: eventId, type: 'image.created' })),
    headers: { 'content-type': 'application/json', 'x-service-delivery': `dlv_${sequence}` },
    secretIndex: 0,
    mode: 'inline',
    status: 200,
    result: 'processed',
    ms: 3,
    runs: [{ handler: 'store', ms: 2, ok: true }],
    ...overrides,
  };
}

/** A queue job's attempt or a replay of `eventId`. */
function step(eventId: string, overrides: Partial<ArchivedStep> = {}): ArchivedStep {
  return {
    kind: 'job',
    eventId,
    eventType: 'image.created',
    at: Date.now(),
    result: 'processed',
    jobId: `job_${eventId}`,
    attempt: 1,
    maxAttempts: 5,
    ms: 4,
    runs: [],
    ...overrides,
  };
}

describeWithPostgres('PostgresArchive against a real Postgres', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  const archives: PostgresArchive[] = [];
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url, { max: 20 });
  });
  afterAll(async () => {
    for (const archive of archives) await archive.close();
    await pool?.end();
    await server?.close();
  });

  /** A migrated archive on its own table (background pruning off unless asked). */
  async function freshArchive(options: PostgresArchiveOptions = {}) {
    const table = uniqueTable('inbox');
    await migrateArchive(pool, { table });
    const archive = new PostgresArchive(pool, { table, pruneIntervalMs: false, ...options });
    archives.push(archive);
    return { archive, table };
  }

  describe('the migration', () => {
    it('ships archive-migration.sql, the same SQL getArchiveMigrationSql() gives for the default tables', () => {
      const file = readFileSync(fileURLToPath(new URL('../sql/archive-migration.sql', import.meta.url)), 'utf8');
      expect(file).toBe(getArchiveMigrationSql());
      expect(file).toContain('CREATE TABLE IF NOT EXISTS "public"."pixhook_inbox_timeline"');
    });

    it('creates the tables in another schema, and is safe to run again and from several instances at once', async () => {
      await pool.query('CREATE SCHEMA IF NOT EXISTS inbox');
      const table = uniqueTable('inbox');
      await Promise.all(Array.from({ length: 4 }, () => migrateArchive(pool, { schema: 'inbox', table })));
      await migrateArchive(pool, { schema: 'inbox', table });
      const { rows } = await pool.query<{ tablename: string }>(
        'SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE $2 ORDER BY tablename',
        ['inbox', `${table}%`],
      );
      expect(rows.map((row) => row.tablename)).toEqual([table, `${table}_replays`, `${table}_timeline`]);
      const archive = new PostgresArchive(pool, { schema: 'inbox', table, pruneIntervalMs: false });
      await archive.record(delivery('evt_schema'));
      expect((await archive.get('evt_schema'))?.eventId).toBe('evt_schema');
    });

    it('refuses bad names and options, and a migration that fails rolls back', async () => {
      expect(() => getArchiveMigrationSql({ table: 'x'.repeat(46) })).toThrow(/63-byte/);
      expect(getArchiveMigrationSql({ table: 'x'.repeat(45) })).toContain(`"${'x'.repeat(45)}_timeline_delivery"`);
      expect(() => getArchiveMigrationSql({ tabel: 'x' } as never)).toThrow(
        /pixhook: getArchiveMigrationSql has no option "tabel"/,
      );
      expect(() => getArchiveMigrationSql('x' as never)).toThrow(/options must be an object/);
      await expect(migrateArchive(undefined as unknown as pg.Pool)).rejects.toThrow(/needs a node-postgres Pool/);
      await expect(migrateArchive(pool, { schema: 'no_such_schema', table: uniqueTable() })).rejects.toThrow(
        /no_such_schema/,
      );
    });

    it('says to run migrateArchive() when the tables are missing', async () => {
      const archive = new PostgresArchive(pool, { table: uniqueTable('missing'), pruneIntervalMs: false });
      await expect(archive.record(delivery('evt_missing'))).rejects.toThrow(/do not exist: run migrateArchive\(pool\)/);
      await expect(archive.list()).rejects.toThrow(/migrateArchive/);
      const other = new PostgresArchive(pool, { schema: 'no_such_schema', pruneIntervalMs: false });
      await expect(other.get('evt_missing')).rejects.toThrow(/migrateArchive/);
      // Any other error is passed on as Postgres gave it.
      const { archive: good } = await freshArchive();
      await expect(good.record(delivery('evt_nul', { eventType: 'a\u0000b' }))).rejects.toThrow(/0x00/);
    });
  });

  describe('options', () => {
    const fakePool = { connect: async () => ({}), query: async () => ({}) } as unknown as pg.Pool;
    it('checks them when the archive is built', () => {
      expect(() => new PostgresArchive(undefined as unknown as pg.Pool)).toThrow(/needs a node-postgres Pool/);
      expect(() => new PostgresArchive(fakePool, { writeTimeoutMs: 9_001 })).toThrow(/above 9000/);
      expect(() => new PostgresArchive(fakePool, { retentionMs: 0 })).toThrow(/retentionMs must be a positive/);
      expect(() => new PostgresArchive(fakePool, { maxBytes: -1 })).toThrow(
        /maxBytes must be a positive whole number of bytes/,
      );
      expect(() => new PostgresArchive(fakePool, { replayPollMs: 1.5 })).toThrow(/replayPollMs/);
      expect(() => new PostgresArchive(fakePool, { pruneIntervalMs: 'often' as never })).toThrow(/pruneIntervalMs/);
      expect(() => new PostgresArchive(fakePool, { preparedStatements: 'yes' as never })).toThrow(/true or false/);
      expect(() => new PostgresArchive(fakePool, { onError: 'log' as never })).toThrow(/onError must be a function/);
      expect(() => new PostgresArchive(fakePool, { retention: 5 } as never)).toThrow(/Did you mean "retentionMs"/);
      expect(() => new PostgresArchive(fakePool, [] as never)).toThrow(/options must be an object/);
      expect(() => new PostgresArchive(fakePool, { table: '' })).toThrow(/table must be a non-empty string/);
      expect(() => new PostgresArchive(fakePool, { pruneIntervalMs: false, maxBytes: 1 })).not.toThrow();
    });

    it('shows its table, and nothing of the connection, in console.log, and its writeTimeoutMs to core', () => {
      const archive = new PostgresArchive(fakePool, { table: 'inbox', writeTimeoutMs: 1_500 });
      const shown = (archive as unknown as Record<symbol, () => string>)[Symbol.for('nodejs.util.inspect.custom')]?.();
      expect(shown).toBe('PostgresArchive { table: "public"."inbox" }');
      expect(archive.writeTimeoutMs).toBe(1_500);
      expect(new PostgresArchive(fakePool).writeTimeoutMs).toBe(2_000);
    });
  });

  describe('record and get', () => {
    it('keeps the first delivery bytes-exact with its headers, and every entry in the timeline, oldest first', async () => {
      const { archive } = await freshArchive();
      // Not UTF-8, a NUL, and every byte value: bytes, not text.
      const body = Uint8Array.from({ length: 256 }, (_, index) => (index * 7) % 256);
      const first = delivery('evt_bytes', {
        body,
        headers: { 'content-type': 'application/json', 'x-odd': "'; DROP TABLE x; -- \u0000\u202e" },
        at: 1_000,
        mode: 'queued',
        result: 'queued',
        status: 202,
        created: 1_700_000_000.5,
      });
      await archive.record(first);
      const job = step('evt_bytes', { at: 2_000, result: 'failed', error: 'TypeError: <script>alert(1)</script>' });
      await archive.record(job);
      const second = delivery('evt_bytes', {
        body: new TextEncoder().encode('another body'),
        headers: { 'x-second': 'yes' },
        at: 3_000,
        result: 'duplicate',
      });
      await archive.record(second);

      const event = await archive.get('evt_bytes');
      expect(event).toBeDefined();
      expect(event?.body).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(event?.body ?? []).equals(Buffer.from(body))).toBe(true);
      expect(event?.headers).toEqual(first.headers);
      expect(event).toMatchObject({
        eventId: 'evt_bytes',
        eventType: 'image.created',
        created: 1_700_000_000.5,
        firstAt: 1_000,
        lastAt: 3_000,
        outcome: 'failed',
        deliveries: 2,
        bytes: 256,
        mode: 'queued',
      });
      const { body: _first, ...firstEntry } = first;
      const { body: _second, ...secondEntry } = second;
      expect(event?.timeline).toEqual([firstEntry, job, secondEntry]);
      expect(await archive.get('evt_absent')).toBeUndefined();
    });

    it('keeps an event whose job ended before its delivery was written, and fills it in from the delivery', async () => {
      const { archive } = await freshArchive();
      await archive.record(step('evt_early', { at: 5_000, result: 'processed' }));
      const early = await archive.get('evt_early');
      expect(early).toMatchObject({
        deliveries: 0,
        bytes: 0,
        mode: 'queued',
        created: undefined,
        outcome: 'processed',
      });
      expect(early?.body).toEqual(new Uint8Array(0));
      expect(early?.headers).toEqual({});
      await archive.record(step('evt_replayed_first', { kind: 'replay', result: 'processed', at: 5_000 }));
      expect((await archive.get('evt_replayed_first'))?.mode).toBe('inline');

      const late = delivery('evt_early', { at: 4_000, mode: 'queued', result: 'queued', status: 202 });
      await archive.record(late);
      const event = await archive.get('evt_early');
      expect(event).toMatchObject({
        deliveries: 1,
        firstAt: 4_000,
        lastAt: 5_000,
        outcome: 'processed',
        mode: 'queued',
      });
      expect(Buffer.from(event?.body ?? []).toString()).toBe(Buffer.from(late.body).toString());
      expect(event?.headers).toEqual(late.headers);
      // Read in time order (on `at`), not as written.
      expect(event?.timeline.map((entry) => entry.kind)).toEqual(['delivery', 'job']);
    });

    it('applies core outcomeAfter to every entry on every outcome before it', async () => {
      const { archive } = await freshArchive();
      const entries: ArchiveEntry[] = [];
      for (const result of ['processed', 'duplicate', 'queued', 'in-flight', 'failed'] as const) {
        entries.push(delivery('x', { result }));
      }
      for (const kind of ['job', 'replay'] as const) {
        for (const result of ['processed', 'failed', 'dead-letter', 'queued'] as const)
          entries.push(step('x', { kind, result }));
      }
      const cases: { id: string; before: InboxOutcome | undefined; entry: ArchiveEntry }[] = [];
      for (const [index, entry] of entries.entries()) {
        for (const before of [undefined, ...INBOX_OUTCOMES]) {
          const id = `evt_rule_${index}_${before ?? 'new'}`;
          cases.push({ id, before, entry: { ...entry, eventId: id } });
        }
      }
      await Promise.all(
        cases.map(async ({ id, before, entry }) => {
          if (before !== undefined) await archive.record(step(id, { result: before, at: 1 }));
          await archive.record(entry);
        }),
      );
      for (const { id, before, entry } of cases) {
        const listed = await archive.list({ eventId: id });
        expect({ id, outcome: listed.items[0]?.outcome }).toEqual({ id, outcome: outcomeAfter(before, entry) });
      }
    });

    it('counts every one of many deliveries and steps of one event written at once', async () => {
      const { archive } = await freshArchive();
      await Promise.all([
        ...Array.from({ length: 20 }, (_, index) => archive.record(delivery('evt_burst', { at: 1_000 + index }))),
        ...Array.from({ length: 5 }, (_, index) => archive.record(step('evt_burst', { at: 2_000 + index }))),
      ]);
      const event = await archive.get('evt_burst');
      expect(event).toMatchObject({ deliveries: 20, firstAt: 1_000, lastAt: 2_004 });
      expect(event?.timeline).toHaveLength(25);
    });

    it('refuses entries it cannot keep, with a clear TypeError', async () => {
      const { archive } = await freshArchive();
      const bad: [unknown, RegExp][] = [
        [null, /an entry must be an object, got null/],
        [{ ...delivery('e'), kind: 'other' }, /kind "delivery", "job" or "replay"/],
        [{ ...delivery('e'), eventId: '' }, /needs an eventId/],
        [{ ...delivery('e'), eventType: 5 }, /needs an eventType/],
        [{ ...delivery('e'), at: Number.NaN }, /needs at/],
        [{ ...delivery('e'), body: 'text' }, /needs its body/],
      ];
      for (const [entry, message] of bad) {
        await expect(archive.record(entry as ArchiveEntry)).rejects.toThrow(message);
        await expect(archive.record(entry as ArchiveEntry)).rejects.toThrow(/^pixhook: PostgresArchive\.record\(\): /);
      }
      await expect(archive.get('' as string)).rejects.toThrow(/^pixhook: .*eventId must be a non-empty string/);
      await expect(archive.get(5 as unknown as string)).rejects.toThrow(TypeError);
    });

    it('works with preparedStatements off, and fractional times are kept whole in the list', async () => {
      const { archive } = await freshArchive({ preparedStatements: false });
      await archive.record(delivery('evt_plain', { at: 1_234.9, created: undefined }));
      const page = await archive.list();
      expect(page.items).toEqual([
        expect.objectContaining({ eventId: 'evt_plain', lastAt: 1_234, firstAt: 1_234, created: undefined }),
      ]);
      expect((await archive.get('evt_plain'))?.timeline[0]?.at).toBe(1_234.9);
    });
  });

  describe('list', () => {
    /** 90 events: three types, every outcome, ties on lastAt, a delivery id each. */
    async function seeded() {
      const { archive } = await freshArchive();
      const expected: InboxSummary[] = [];
      const types = ['image.created', 'image.deleted', 'user.updated'];
      await Promise.all(
        Array.from({ length: 90 }, async (_, index) => {
          const eventId = `evt_list_${String(index).padStart(3, '0')}`;
          const eventType = types[index % 3] as string;
          // Every fourth pair shares its lastAt: ties are ordered by event id.
          const at = 10_000 + Math.floor(index / 2) * 1_000;
          const outcome = INBOX_OUTCOMES[index % 4] as InboxOutcome;
          const entry = delivery(eventId, { eventType, at, deliveryId: `dlv_list_${index}`, result: 'processed' });
          await archive.record(entry);
          if (outcome !== 'processed') await archive.record(step(eventId, { eventType, at, result: outcome }));
          expected.push({
            eventId,
            eventType,
            created: entry.created,
            firstAt: at,
            lastAt: at,
            outcome,
            deliveries: 1,
            bytes: entry.body.byteLength,
            mode: 'inline',
          });
        }),
      );
      expected.sort((a, b) => b.lastAt - a.lastAt || (a.eventId < b.eventId ? 1 : -1));
      return { archive, expected };
    }

    /** Every page of `query`, `limit` at a time. */
    async function allPages(archive: PostgresArchive, query: Parameters<PostgresArchive['list']>[0], limit: number) {
      const items: InboxSummary[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await archive.list({ ...query, limit, cursor });
        expect(page.items.length).toBeLessThanOrEqual(limit);
        items.push(...page.items);
        cursor = page.next;
        pages += 1;
      } while (cursor !== undefined && pages < 100);
      return { items, pages };
    }

    it('lists newest first, 50 by default, and pages with the cursor without duplicates or gaps', async () => {
      const { archive, expected } = await seeded();
      const first = await archive.list();
      expect(first.items).toEqual(expected.slice(0, 50));
      expect(first.next).toEqual(expect.any(String));
      const second = await archive.list({ cursor: first.next });
      expect(second.items).toEqual(expected.slice(50));
      expect(second.next).toBeUndefined();
      for (const limit of [1, 7, 45, 90, 500]) {
        const { items, pages } = await allPages(archive, {}, limit);
        expect(items).toEqual(expected);
        expect(pages).toBe(Math.ceil(90 / limit));
      }
    });

    it('filters on type, outcome, time, event id and delivery id, alone and together, across pages', async () => {
      const { archive, expected } = await seeded();
      const filters: [Parameters<PostgresArchive['list']>[0], (item: InboxSummary) => boolean][] = [
        [{ type: 'image.deleted' }, (item) => item.eventType === 'image.deleted'],
        [{ outcome: 'dead-letter' }, (item) => item.outcome === 'dead-letter'],
        [{ since: 30_000 }, (item) => item.lastAt >= 30_000],
        [{ until: 30_000 }, (item) => item.lastAt < 30_000],
        [
          { since: 20_000, until: 40_000, type: 'user.updated' },
          (i) => i.lastAt >= 20_000 && i.lastAt < 40_000 && i.eventType === 'user.updated',
        ],
        [
          { type: 'image.created', outcome: 'failed' },
          (item) => item.eventType === 'image.created' && item.outcome === 'failed',
        ],
        [{ eventId: 'evt_list_042' }, (item) => item.eventId === 'evt_list_042'],
        [{ deliveryId: 'dlv_list_17' }, (item) => item.eventId === 'evt_list_017'],
        [{ type: 'no.such.type' }, () => false],
      ];
      for (const [query, keep] of filters) {
        const want = expected.filter(keep);
        const { items } = await allPages(archive, query, 4);
        expect({ query, ids: items.map((item) => item.eventId) }).toEqual({
          query,
          ids: want.map((item) => item.eventId),
        });
      }
      expect((await archive.list({ type: 'no.such.type' })).items).toEqual([]);
    });

    it('rejects a bad query with a TypeError that starts with pixhook:', async () => {
      const { archive } = await freshArchive();
      const forged = Buffer.from(JSON.stringify(['x', 5])).toString('base64url');
      const bad: [unknown, RegExp][] = [
        [{ cursor: 'not a cursor!' }, /cursor is not one this inbox gave/],
        [{ cursor: forged }, /cursor is not one this inbox gave/],
        [{ cursor: Buffer.from('{not json').toString('base64url') }, /cursor/],
        [{ cursor: 5 }, /cursor/],
        [{ limit: 0 }, /limit must be a whole number from 1 to 500, got the number 0/],
        [{ limit: 501 }, /limit/],
        [{ limit: '10' }, /limit/],
        [{ outcome: 'lost' }, /outcome must be one of processed, failed, queued, dead-letter/],
        [{ type: '' }, /type must be a non-empty string/],
        [{ deliveryId: 7 }, /deliveryId must be a non-empty string/],
        [{ since: 1.5 }, /since must be a time in ms since the epoch/],
        [{ until: 'yesterday' }, /until/],
        [{ typ: 'x' }, /has no option "typ". Did you mean "type"?/],
        ['all', /the query must be an object/],
      ];
      for (const [query, message] of bad) {
        const listing = archive.list(query as never);
        await expect(listing).rejects.toThrow(TypeError);
        await expect(listing).rejects.toThrow(message);
        await expect(listing).rejects.toThrow(/^pixhook: PostgresArchive\.list\(\)[: ]/);
      }
      expect((await archive.list(null as never)).items).toEqual([]);
    });
  });

  describe('in the event transaction', () => {
    it('commits with the event, rolls back with it, and a failed write never fails the transaction', async () => {
      const { archive, table } = await freshArchive();
      const business = uniqueTable('rows');
      await pool.query(`CREATE TABLE ${business} (event_id text)`);
      const inTransaction = async (eventId: string, end: 'COMMIT' | 'ROLLBACK') => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(`INSERT INTO ${business} (event_id) VALUES ($1)`, [eventId]);
          const recorded = await archive.record(delivery(eventId), client).then(
            () => 'recorded',
            (error: Error) => error.message,
          );
          const ended = await client.query(end);
          return { recorded, ended: ended.command };
        } finally {
          client.release();
        }
      };
      expect(await inTransaction('evt_tx_commit', 'COMMIT')).toEqual({ recorded: 'recorded', ended: 'COMMIT' });
      expect((await archive.get('evt_tx_commit'))?.deliveries).toBe(1);
      expect(await inTransaction('evt_tx_rollback', 'ROLLBACK')).toEqual({ recorded: 'recorded', ended: 'ROLLBACK' });
      expect(await archive.get('evt_tx_rollback')).toBeUndefined();

      // The archive's tables are gone: the write fails, the event's own write still commits.
      await pool.query(`DROP TABLE ${table}_timeline`);
      const failed = await inTransaction('evt_tx_failed', 'COMMIT');
      expect(failed.recorded).toMatch(/^pixhook: the inbox's tables .* do not exist/);
      expect(failed.ended).toBe('COMMIT');
      const { rows } = await pool.query(`SELECT event_id FROM ${business} ORDER BY event_id`);
      expect(rows.map((row) => row.event_id)).toEqual(['evt_tx_commit', 'evt_tx_failed']);
    });

    it('gives up after writeTimeoutMs and the late write is undone before the event commits', async () => {
      const { archive } = await freshArchive({ writeTimeoutMs: 300 });
      await archive.record(delivery('evt_slow', { at: 1 }));
      const business = uniqueTable('rows');
      await pool.query(`CREATE TABLE ${business} (event_id text)`);
      // Another transaction holds the event's row: the archive's upsert waits for it.
      const blocker = await pool.connect();
      const client = await pool.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM ${uniqueTableOf(archive)} WHERE event_id = 'evt_slow' FOR UPDATE`);
        await client.query('BEGIN');
        await client.query(`INSERT INTO ${business} (event_id) VALUES ('evt_slow')`);
        const started = Date.now();
        await expect(archive.record(delivery('evt_slow', { at: 2 }), client)).rejects.toThrow(
          /^pixhook: Postgres did not answer within writeTimeoutMs \(300 ms\): recording an archive entry \(delivery\)\.$/,
        );
        expect(Date.now() - started).toBeLessThan(5_000);
        // Core commits the event once the archive gave up; the COMMIT waits behind the upsert.
        const committing = client.query('COMMIT');
        await blocker.query('COMMIT');
        expect((await committing).command).toBe('COMMIT');
      } finally {
        client.release();
        blocker.release();
      }
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${business}`)).rows[0].n).toBe(1);
      expect((await archive.get('evt_slow'))?.deliveries).toBe(1);

      // Through the pool (no transaction given), the same bound.
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM ${uniqueTableOf(archive)} WHERE event_id = 'evt_slow' FOR UPDATE`);
        await expect(archive.record(delivery('evt_slow', { at: 3 }), { notAClient: true })).rejects.toThrow(
          /writeTimeoutMs \(300 ms\)/,
        );
        await holder.query('ROLLBACK');
      } finally {
        holder.release();
      }
      // The write landed late, once the row was free: "the write may still land".
      await until(async () => (await archive.get('evt_slow'))?.deliveries === 2, 'the late write');
    });

    it('rejects with the write error when the event connection is cut while the write waits', async () => {
      const { archive } = await freshArchive({ writeTimeoutMs: 9_000 });
      await archive.record(delivery('evt_cut', { at: 1 }));
      const blocker = await pool.connect();
      const client = await pool.connect();
      const clientErrors: Error[] = [];
      client.on('error', (error) => void clientErrors.push(error));
      try {
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM ${uniqueTableOf(archive)} WHERE event_id = 'evt_cut' FOR UPDATE`);
        const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
        await client.query('BEGIN');
        const recording = archive.record(delivery('evt_cut', { at: 2 }), client).catch((error: Error) => error);
        await until(
          async () =>
            (await pool.query('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]
              ?.wait_event_type === 'Lock',
          'the write to wait on the row',
        );
        await pool.query('SELECT pg_terminate_backend($1)', [pid]);
        // The write failed and so did ROLLBACK TO SAVEPOINT (no connection): the write's error is the one.
        expect(String(await recording)).toMatch(/terminat/);
        await blocker.query('ROLLBACK');
      } finally {
        client.release(true);
        blocker.release();
      }
      expect((await archive.get('evt_cut'))?.deliveries).toBe(1);
    });

    it('with Postgres frozen during the savepoint, never sends the write, and the event still commits', async () => {
      const { archive } = await freshArchive({ writeTimeoutMs: 300 });
      const business = uniqueTable('rows');
      await pool.query(`CREATE TABLE ${business} (event_id text)`);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(`INSERT INTO ${business} (event_id) VALUES ('evt_frozen')`);
        server.pause();
        let failure: unknown;
        try {
          failure = await archive.record(delivery('evt_frozen'), client).catch((error: unknown) => error);
        } finally {
          server.resume();
        }
        expect(String(failure)).toMatch(/writeTimeoutMs \(300 ms\)/);
        expect((await client.query('COMMIT')).command).toBe('COMMIT');
      } finally {
        client.release();
      }
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${business}`)).rows[0].n).toBe(1);
      expect(await archive.get('evt_frozen')).toBeUndefined();
    });
  });

  describe('pruning', () => {
    it('deletes events past retentionMs with their timeline, and keeps the others', async () => {
      const { archive, table } = await freshArchive({ retentionMs: 60_000 });
      const old = Date.now() - 120_000;
      for (let index = 0; index < 12; index += 1)
        await archive.record(delivery(`evt_old_${index}`, { at: old + index }));
      await archive.record(step('evt_old_0', { at: old + 100 }));
      await archive.record(delivery('evt_fresh'));
      await archive.requestReplay(['evt_old_1']);
      expect(await archive.prune()).toBe(12);
      expect((await archive.list()).items.map((item) => item.eventId)).toEqual(['evt_fresh']);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${table}_timeline`);
      expect(rows[0].n).toBe(1);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}_replays`)).rows[0].n).toBe(0);
      expect(await archive.prune()).toBe(0);
    });

    it('deletes the oldest events until what is kept fits maxBytes', async () => {
      // Every event the same size: the same headers, delivery id, id length and time digits.
      const sizedDelivery = (eventId: string, at: number) =>
        delivery(eventId, { at, body: new Uint8Array(1_000), deliveryId: 'dlv_size', headers: { 'x-size': 'same' } });
      const sized = await freshArchive();
      const base = Date.now() - 60_000;
      await sized.archive.record(sizedDelivery('evt_size_p', base));
      const { rows } = await pool.query(`SELECT kept::int FROM ${sized.table} WHERE event_id = 'evt_size_p'`);
      const perEvent = rows[0].kept as number;
      expect(perEvent).toBeGreaterThan(1_000);

      const { archive, table } = await freshArchive({ maxBytes: perEvent * 4 + 10 });
      for (let index = 0; index < 10; index += 1)
        await archive.record(sizedDelivery(`evt_size_${index}`, base + index));
      expect(await archive.prune()).toBe(6);
      expect((await archive.list()).items.map((item) => item.eventId)).toEqual([
        'evt_size_9',
        'evt_size_8',
        'evt_size_7',
        'evt_size_6',
      ]);
      const total = await pool.query(`SELECT sum(kept)::int AS total FROM ${table}`);
      expect(total.rows[0].total).toBeLessThanOrEqual(perEvent * 4 + 10);
      expect(await archive.prune()).toBe(0);
    });

    it('prunes in the background of record(), once per pruneIntervalMs, and one process at a time', async () => {
      const { archive: writer, table } = await freshArchive({ retentionMs: 60_000 });
      await writer.record(delivery('evt_stale', { at: Date.now() - 120_000 }));
      const pruning = new PostgresArchive(pool, { table, retentionMs: 60_000, pruneIntervalMs: 60_000 });
      archives.push(pruning);
      // A reader never prunes.
      await pruning.list();
      await pruning.get('evt_stale');
      expect((await pruning.get('evt_stale'))?.eventId).toBe('evt_stale');
      await pruning.record(delivery('evt_new'));
      await until(async () => (await pruning.get('evt_stale')) === undefined, 'the background prune');

      // Another process holds the prune lock: this one leaves the work to it.
      await writer.record(delivery('evt_stale_2', { at: Date.now() - 120_000 }));
      const holder = await pool.connect();
      try {
        const lock = `pixhook:archive-prune:"public"."${table}"`;
        await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lock]);
        expect(await writer.prune()).toBe(0);
        await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lock]);
      } finally {
        holder.release();
      }
      expect(await writer.prune()).toBe(1);
    });

    it('deletes more than a batch (5,000 per statement), for retention and for the size cap', async () => {
      const { archive, table } = await freshArchive({ retentionMs: 60_000, maxBytes: 100 * 1_000 });
      // Seeded in one statement each: 6,000 expired events, then 12,000 live ones of 100 bytes kept.
      const seed = (from: number, count: number, at: number) =>
        pool.query(
          `INSERT INTO ${table} (event_id, event_type, first_at, last_at, outcome, deliveries, bytes, kept, mode)
           SELECT 'evt_seed_' || lpad(i::text, 6, '0'), 'seeded', $1::bigint + i, $1::bigint + i, 'processed', 1, 0, 100, 'inline'
           FROM generate_series($2::int, $3::int) AS i`,
          [at, from, from + count - 1],
        );
      await seed(0, 6_000, Date.now() - 600_000);
      await seed(6_000, 12_000, Date.now() - 30_000);
      expect(await archive.prune()).toBe(6_000 + 11_000);
      const left = await pool.query(`SELECT min(event_id) AS oldest, count(*)::int AS n FROM ${table}`);
      expect(left.rows[0]).toEqual({ oldest: 'evt_seed_017000', n: 1_000 });
    });

    it('gives up on a connection to prune after writeTimeoutMs, and gives back one that comes late', async () => {
      const small = testPool(server.url, { max: 1 });
      try {
        const table = uniqueTable('inbox');
        await migrateArchive(small, { table });
        const archive = new PostgresArchive(small, { table, pruneIntervalMs: false, writeTimeoutMs: 200 });
        const held = await small.connect();
        await expect(archive.prune()).rejects.toThrow(/writeTimeoutMs \(200 ms\): a connection to prune/);
        held.release();
        // The late connection went back to the pool: the pool's one connection is free again.
        const next = await small.connect();
        next.release();
        expect(await archive.prune()).toBe(0);
      } finally {
        await small.end();
      }
    });

    it('rejects when its connection is cut mid-prune, and the next prune runs', async () => {
      const { archive } = await freshArchive({ retentionMs: 60_000 });
      await archive.record(delivery('evt_locked_old', { at: Date.now() - 120_000 }));
      const blocker = await pool.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM ${uniqueTableOf(archive)} WHERE event_id = 'evt_locked_old' FOR UPDATE`);
        const pruning = archive.prune().catch((error: Error) => error);
        let pid: number | undefined;
        await until(async () => {
          const { rows } = await pool.query(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM%'",
          );
          pid = rows[0]?.pid;
          return pid !== undefined;
        }, 'the prune to wait on the row');
        await pool.query('SELECT pg_terminate_backend($1)', [pid]);
        expect(String(await pruning)).toMatch(/terminat/);
        await blocker.query('ROLLBACK');
      } finally {
        blocker.release();
      }
      expect(await archive.prune()).toBe(1);
    });

    it('reports a background prune that fails to onError, and a prune() that fails rejects', async () => {
      const errors: Error[] = [];
      const table = uniqueTable('inbox');
      await migrateArchive(pool, { table });
      const archive = new PostgresArchive(pool, {
        table,
        pruneIntervalMs: 60_000,
        onError: (error) => {
          errors.push(error);
          throw new Error('a listener that throws changes nothing');
        },
      });
      archives.push(archive);
      await pool.query(`DROP TABLE ${table} CASCADE`);
      await expect(archive.record(delivery('evt_gone'))).rejects.toThrow(/migrateArchive/);
      await until(() => errors.length > 0, 'the prune error');
      expect(errors[0]?.message).toMatch(/migrateArchive/);
      await expect(archive.prune()).rejects.toThrow(/migrateArchive/);
      // close() waits for a prune under way, failed or not.
      const pruning = archive.prune();
      await archive.close();
      await expect(pruning).rejects.toThrow(/migrateArchive/);
    });
  });

  describe('replay requests', () => {
    it('stores one request per archived event, and each is taken by one of two attached archives', async () => {
      const { archive, table } = await freshArchive({ replayPollMs: 30 });
      const ids = Array.from({ length: 50 }, (_, index) => `evt_replay_${index}`);
      for (const id of ids) await archive.record(delivery(id));
      const other = new PostgresArchive(pool, { table, pruneIntervalMs: false, replayPollMs: 30 });
      archives.push(other);
      const taken: { by: string; id: string }[] = [];
      const detachA = archive.attach(async (id) => void taken.push({ by: 'a', id }));
      const detachB = other.attach(async (id) => void taken.push({ by: 'b', id }));
      expect(await archive.requestReplay([...ids, 'evt_not_archived', ids[0] as string])).toBe(50);
      await until(() => taken.length >= 50, 'every replay to be taken');
      const seen = taken.map((entry) => entry.id).sort();
      expect(seen).toEqual([...ids].sort());
      expect(new Set(seen).size).toBe(50);
      // Oldest first within one archive.
      const byA = taken.filter((entry) => entry.by === 'a').map((entry) => Number(entry.id.split('_')[2]));
      expect(byA).toEqual([...byA].sort((a, b) => a - b));
      detachA();
      detachB();
      detachB();
      expect(await archive.requestReplay([])).toBe(0);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}_replays`)).rows[0].n).toBe(0);
    });

    it('hands requests to the latest attached replay, swallows its rejection, and stops when detached or closed', async () => {
      const { archive, table } = await freshArchive({ replayPollMs: 30 });
      await archive.record(delivery('evt_r1'));
      await archive.record(delivery('evt_r2'));
      const older: string[] = [];
      const newer: string[] = [];
      archive.attach(async (id) => void older.push(id));
      const detach = archive.attach(async (id) => {
        newer.push(id);
        throw new Error('core reports this itself');
      });
      await archive.requestReplay(['evt_r1']);
      await until(() => newer.length === 1, 'the replay');
      detach();
      await archive.requestReplay(['evt_r2']);
      await until(() => older.length === 1, 'the older replay');
      expect({ older, newer }).toEqual({ older: ['evt_r2'], newer: ['evt_r1'] });

      await archive.close();
      await archive.requestReplay(['evt_r1']);
      // Closed: nobody takes it. A second archive on the table sees it waiting, and takes it.
      const count = async () => (await pool.query(`SELECT count(*)::int AS n FROM ${table}_replays`)).rows[0].n;
      expect(await count()).toBe(1);
      const next = new PostgresArchive(pool, { table, pruneIntervalMs: false, replayPollMs: 30 });
      archives.push(next);
      const taken: string[] = [];
      next.attach(async (id) => void taken.push(id));
      await until(() => taken.length === 1, 'the waiting request');
      expect(await count()).toBe(0);
      expect(() => archive.attach(async () => {})).not.toThrow();
    });

    it('reports a poll that fails to onError and tries again on the next tick', async () => {
      const errors: Error[] = [];
      const table = uniqueTable('inbox');
      const archive = new PostgresArchive(pool, {
        table,
        pruneIntervalMs: false,
        replayPollMs: 30,
        onError: (e) => void errors.push(e),
      });
      archives.push(archive);
      const taken: string[] = [];
      archive.attach(async (id) => void taken.push(id));
      await until(() => errors.length >= 2, 'two failed polls');
      expect(errors[0]?.message).toMatch(/migrateArchive/);
      await migrateArchive(pool, { table });
      await archive.record(delivery('evt_after_outage'));
      await archive.requestReplay(['evt_after_outage']);
      await until(() => taken.length === 1, 'the replay once the tables exist');
    });

    it('runs one poll at a time: a request waits while a replay runs', async () => {
      const { archive, table } = await freshArchive({ replayPollMs: 20 });
      await archive.record(delivery('evt_slow_a'));
      await archive.record(delivery('evt_slow_b'));
      const started: string[] = [];
      let finish: () => void = () => {};
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      archive.attach(async (id) => {
        started.push(id);
        if (id === 'evt_slow_a') await finished;
      });
      await archive.requestReplay(['evt_slow_a']);
      await until(() => started.length === 1, 'the first replay');
      await archive.requestReplay(['evt_slow_b']);
      // Many ticks pass while the first replay runs: none of them takes the second request.
      await sleep(400);
      expect(started).toEqual(['evt_slow_a']);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}_replays`)).rows[0].n).toBe(1);
      finish();
      await until(() => started.length === 2, 'the second replay');
      expect(started).toEqual(['evt_slow_a', 'evt_slow_b']);
    });

    it('refuses bad input', async () => {
      const { archive } = await freshArchive();
      await expect(archive.requestReplay('evt_1' as never)).rejects.toThrow(/^pixhook: .*array of strings/);
      await expect(archive.requestReplay([5] as never)).rejects.toThrow(TypeError);
      expect(() => archive.attach('replay' as never)).toThrow(/^pixhook: .*replay must be a function/);
    });
  });
});

/** The events table of `archive`, quoted, from what console.log shows. */
function uniqueTableOf(archive: PostgresArchive): string {
  const shown =
    (archive as unknown as Record<symbol, () => string>)[Symbol.for('nodejs.util.inspect.custom')]?.() ?? '';
  return shown.slice('PostgresArchive { table: '.length, -' }'.length);
}

describeWithPostgres('PostgresTransactions.begin() with replay', () => {
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

  it('runs a processed event again and records it again, but not while another transaction holds it', async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const transactions = new PostgresTransactions(pool, { table, pruneIntervalMs: false });
    const first = await transactions.begin('evt_again');
    expect(first.state).toBe('claimed');
    if (first.state !== 'claimed') return;
    await first.commit();
    expect((await transactions.begin('evt_again')).state).toBe('completed');
    expect((await transactions.begin('evt_again', { replay: false })).state).toBe('completed');

    const replay = await transactions.begin('evt_again', { replay: true });
    expect(replay.state).toBe('claimed');
    if (replay.state !== 'claimed') return;
    // While the replay's transaction is open, a delivery or another replay is in flight.
    expect((await transactions.begin('evt_again')).state).toBe('in-flight');
    expect((await transactions.begin('evt_again', { replay: true })).state).toBe('in-flight');
    await replay.transaction.query('SELECT 1');
    await replay.commit();
    const { rows } = await pool.query(`SELECT state FROM ${table} WHERE event_id = 'evt_again'`);
    expect(rows).toEqual([{ state: 'completed' }]);
    // A replay of an event never processed runs it as a first run.
    const fresh = await transactions.begin('evt_new', { replay: true });
    expect(fresh.state).toBe('claimed');
    if (fresh.state === 'claimed') await fresh.rollback();
    await expect(transactions.begin('evt_again', { replay: 'yes' } as never)).rejects.toThrow(
      /^pixhook: PostgresTransactions\.begin\(\): replay must be true or false/,
    );
  });
});
