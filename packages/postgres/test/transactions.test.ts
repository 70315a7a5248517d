/**
 * Transactional handlers on a real Postgres: the handlers' writes and the event's record commit
 * together or not at all, over every adapter; a second delivery never waits on an open transaction;
 * a dead instance leaves nothing behind; Postgres away answers 503 and loses nothing.
 */

import { type AnyEvent, Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { PostgresTransactions } from '@pixhook/postgres';
import { ADAPTERS, httpSend } from '@pixhook/test-helpers/adapters';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import type { PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTables, rowCounts, SECRET, signed, sleep, startReceiver, testPool, until } from './helpers/postgres.js';

/** Webhooks in transactional mode whose every handler inserts the event's row, then does `act`. */
function transactional(
  pool: ReturnType<typeof testPool>,
  tables: { table: string; business: string },
  act: (run: number, client: PoolClient) => unknown = () => {},
  options: { handlerTimeoutMs?: number; timeoutMs?: number } = {},
) {
  const webhooks = new Webhooks({
    secret: SECRET,
    transactions: new PostgresTransactions(pool, { table: tables.table, timeoutMs: options.timeoutMs }),
    handlerTimeoutMs: options.handlerTimeoutMs,
  });
  const errors: { code: string; cause: unknown }[] = [];
  webhooks.onError((error) => void errors.push({ code: error.code, cause: error.cause }));
  let runs = 0;
  webhooks.onAny(async (event, { transaction }) => {
    runs += 1;
    await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
    await act(runs, transaction);
  });
  return { webhooks, errors, runs: () => runs };
}

describeWithPostgres('transactional handlers against a real Postgres', () => {
  let server: PostgresServer;
  let pool: ReturnType<typeof testPool>;
  beforeAll(async () => {
    server = await startPostgresServer();
    pool = testPool(server.url, { max: 40 });
  });
  afterAll(async () => {
    await pool?.end();
    await server?.close();
  });

  describe.each(ADAPTERS)('$name', (adapter) => {
    it('commits the write with the record (200), rolls it back on a throw (500), and a redelivery is a duplicate', async () => {
      const tables = await freshTables(pool);
      const { webhooks } = transactional(pool, tables, (run) => {
        if (run === 1) throw new Error('the first run fails after its insert');
      });
      const client = await adapter.create(webhooks);
      try {
        const delivery = signed();
        const first = await client.send(delivery);
        expect(first.status).toBe(500);
        expect((first.json as { error: { code: string } }).error.code).toBe('HANDLER_FAILED');
        expect(await rowCounts(pool, tables.business)).toEqual(new Map());
        const second = await client.send(delivery);
        expect(second.status).toBe(200);
        expect(second.json).toEqual({ received: true });
        const third = await client.send(delivery);
        expect(third.json).toEqual({ received: true, duplicate: true });
        expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
        const forged = await client.send({
          ...delivery,
          headers: { ...delivery.headers, 'x-service-signature': 't=1,v1=00' },
        });
        expect(forged.status).toBe(400);
      } finally {
        await client.close();
      }
    });
  });

  it('answers 409 at once to a delivery of an event whose transaction is open, and never runs it twice', async () => {
    const tables = await freshTables(pool);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { webhooks, runs } = transactional(pool, tables, () => held);
    const delivery = signed();
    const first = webhooks.handle(delivery);
    await until(async () => runs() === 1, 'the first run to start');
    const started = Date.now();
    const others = await Promise.all(Array.from({ length: 10 }, () => webhooks.handle(delivery)));
    // At once: the held transaction is never released meanwhile, so waiting on it would never end;
    // the margin is a busy machine's.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(others.map((answer) => answer.status)).toEqual(Array(10).fill(409));
    release();
    expect((await first).status).toBe(200);
    expect((await webhooks.handle(delivery)).body).toContain('duplicate');
    expect(runs()).toBe(1);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('runs each of 50 concurrent deliveries of 10 events once, one row per event', async () => {
    const tables = await freshTables(pool);
    const { webhooks } = transactional(pool, tables, () => sleep(Math.random() * 20));
    const events = Array.from({ length: 10 }, () => createTestEvent('image.created'));
    const deliver = async (event: (typeof events)[number]) => {
      // As the service does: retry until a 2xx.
      for (;;) {
        const answer = await webhooks.handle(signed(event));
        if (answer.status === 200) return;
        expect(answer.status).toBe(409);
        await sleep(20);
      }
    };
    await Promise.all(events.flatMap((event) => Array.from({ length: 5 }, () => deliver(event))));
    expect(await rowCounts(pool, tables.business)).toEqual(new Map(events.map((event) => [event.id, 1])));
  });

  it('leaves nothing behind when the instance dies mid-handler: the retry runs at once, one row', async () => {
    const tables = await freshTables(pool);
    const receiver = await startReceiver(server.url, tables, 'hang');
    const delivery = signed();
    // Never answered: the instance dies first (httpSend leaves a reset connection pending).
    void httpSend(receiver.port, delivery).catch(() => {});
    await until(() => receiver.lines.includes(`RUNNING ${delivery.event.id}`), 'the handler to insert its row');
    await receiver.kill();
    const { webhooks, runs } = transactional(pool, tables);
    const started = Date.now();
    // Postgres sees the connection close and rolls back: no claim to wait out.
    await until(async () => (await webhooks.handle(delivery)).status === 200, 'the retry to be processed', 15_000);
    // No claim to wait out; the margin is a busy machine's (Postgres notices the closed socket).
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(runs()).toBe(1);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('answers 503 when the commit fails (a deferred constraint), keeping nothing; the retry commits', async () => {
    const tables = await freshTables(pool);
    await pool.query(
      `ALTER TABLE ${tables.business} ADD CONSTRAINT ${tables.business}_once UNIQUE (event_id) DEFERRABLE INITIALLY DEFERRED`,
    );
    const { webhooks, errors } = transactional(pool, tables, async (run, client) => {
      // A second insert of the same id: only the commit sees the violation.
      if (run === 1) {
        await client.query(`INSERT INTO ${tables.business} (event_id) VALUES ('dup')`);
        await client.query(`INSERT INTO ${tables.business} (event_id) VALUES ('dup')`);
      }
    });
    const delivery = signed();
    const first = await webhooks.handle(delivery);
    expect(first.status).toBe(503);
    expect(JSON.parse(first.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(String((errors[0]?.cause as Error)?.message)).toMatch(/unique|duplicate key/);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map());
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('answers 503 when a handler swallowed a failed query (the transaction is aborted), keeping nothing', async () => {
    const tables = await freshTables(pool);
    const { webhooks, errors } = transactional(pool, tables, async (run, client) => {
      if (run === 1) await client.query('SELECT * FROM no_such_table').catch(() => {});
    });
    const delivery = signed();
    expect((await webhooks.handle(delivery)).status).toBe(503);
    expect(errors[0]?.code).toBe('STORE_UNAVAILABLE');
    expect(await rowCounts(pool, tables.business)).toEqual(new Map());
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('keeps the writes of a savepoint a handler rolled back to apart from the rest', async () => {
    const tables = await freshTables(pool);
    const webhooks = new Webhooks({
      secret: SECRET,
      transactions: new PostgresTransactions(pool, { table: tables.table }),
    });
    webhooks.on('image.created', async (event, { transaction }) => {
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
      await transaction.query('SAVEPOINT optional_step');
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ('optional')`);
      await transaction.query('ROLLBACK TO SAVEPOINT optional_step');
    });
    const delivery = signed();
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('commits a run that outlived handlerTimeoutMs when it ends: 503, then 409 meanwhile, then a duplicate', async () => {
    const tables = await freshTables(pool);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { webhooks, runs } = transactional(pool, tables, () => held, { handlerTimeoutMs: 100 });
    const delivery = signed();
    const first = await webhooks.handle(delivery);
    expect(JSON.parse(first.body).error.code).toBe('HANDLER_TIMEOUT');
    expect((await webhooks.handle(delivery)).status).toBe(409);
    release();
    await until(async () => (await webhooks.handle(delivery)).body.includes('duplicate'), 'the late commit');
    expect(runs()).toBe(1);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('answers 503 within timeoutMs when the pool has no free connection', async () => {
    const tables = await freshTables(pool);
    const small = testPool(server.url, { max: 1 });
    try {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      // The first delivery takes the pool's only connection (with the default timeoutMs: opening a
      // connection on a busy machine may take longer than the short one under test) and holds it.
      const holder = transactional(small, tables, () => held);
      const first = holder.webhooks.handle(signed());
      await until(() => holder.runs() === 1, 'the first handler to hold the connection');
      const { webhooks, errors } = transactional(small, tables, () => {}, { timeoutMs: 500 });
      const started = Date.now();
      const second = await webhooks.handle(signed());
      const took = Date.now() - started;
      expect(second.status).toBe(503);
      expect(errors.map((error) => error.code)).toEqual(['STORE_UNAVAILABLE']);
      expect(String((errors[0]?.cause as Error)?.message)).toMatch(/within timeoutMs \(500 ms\)/);
      // It gave up after timeoutMs (the connection is never freed meanwhile); the margin is a busy
      // machine's, still far below the 10 s the service waits.
      expect(took).toBeGreaterThanOrEqual(490);
      expect(took).toBeLessThan(5_000);
      release();
      expect((await first).status).toBe(200);
    } finally {
      await small.end();
    }
  });

  it('takes two round trips of its own per event: BEGIN, the lock and the check; the record and COMMIT', async () => {
    const tables = await freshTables(pool);
    for (const preparedStatements of [true, false]) {
      // Every statement sent on a connection of this pool, in order.
      const sent: string[] = [];
      const fresh = testPool(server.url, { max: 1 });
      fresh.on('connect', (client) => {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
          sent.push(typeof config === 'string' ? config : String((config as { text?: unknown }).text));
          return query(config, ...rest);
        };
      });
      try {
        const webhooks = new Webhooks({
          secret: SECRET,
          transactions: new PostgresTransactions(fresh, {
            table: tables.table,
            preparedStatements,
            pruneIntervalMs: false,
          }),
        });
        let prepared = -1;
        webhooks.on('image.created', async (event, { transaction }) => {
          await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
          const { rows } = await transaction.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'pixhook%'",
          );
          prepared = rows[0]?.n ?? -1;
        });
        const delivery = signed();
        expect((await webhooks.handle(delivery)).status).toBe(200);
        // BEGIN, the lock and the check; the handler's two queries; the record and COMMIT.
        expect(sent).toHaveLength(4);
        if (preparedStatements) {
          // Prepared (SQL PREPARE) in the first round trip on the connection, then executed.
          expect(sent[0]).toMatch(
            /^PREPARE pixhook_lock_\w+\(text\) AS SELECT pg_try_advisory_xact_lock\(.*;BEGIN;EXECUTE pixhook_lock_\w+\('.*'\);EXECUTE pixhook_check_\w+\('evt_\w+'\)$/s,
          );
          expect(sent[3]).toMatch(/^EXECUTE pixhook_record_\w+\('evt_\w+', \d+\);COMMIT$/);
        } else {
          expect(sent[0]).toMatch(/^BEGIN;SELECT pg_try_advisory_xact_lock\(.*\) AS locked;SELECT state FROM /);
          expect(sent[3]).toMatch(/^INSERT INTO .*;COMMIT$/s);
        }
        expect(prepared).toBe(preparedStatements ? 3 : 0);
        sent.length = 0;
        expect((await webhooks.handle(signed())).status).toBe(200);
        expect(sent[0]).toMatch(preparedStatements ? /^BEGIN;EXECUTE pixhook_lock_/ : /^BEGIN;SELECT/);
        // A duplicate: the first round trip answers it, and a ROLLBACK ends the transaction.
        sent.length = 0;
        expect((await webhooks.handle(delivery)).body).toContain('duplicate');
        expect(sent.map((text) => text.split(';')[0])).toEqual(['BEGIN', 'ROLLBACK']);
        // An id that cannot be a literal as it is (a quote, a backslash, not ASCII) is never written
        // into the SQL: it travels as parameters, a statement per round trip as before.
        const odd = signed({
          ...createTestEvent('image.created'),
          id: `evt_o'b\\"; DROP TABLE x; --é_${preparedStatements}`,
        } as AnyEvent);
        sent.length = 0;
        expect((await webhooks.handle(odd)).status).toBe(200);
        expect(sent.map((text) => text.split(/\s/)[0])).toEqual([
          'BEGIN',
          'SELECT',
          'SELECT',
          'INSERT',
          'SELECT',
          'INSERT',
          'COMMIT',
        ]);
        expect(sent.join('')).not.toContain('DROP');
        expect((await webhooks.handle(odd)).body).toContain('duplicate');
      } finally {
        await fresh.end();
      }
    }
    expect([...(await rowCounts(pool, tables.business)).values()]).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('never runs an event twice when a second instance begins as the first commits (the check sees the commit)', async () => {
    // The check runs after the lock, in a statement of its own: a check in the lock's statement would
    // read a snapshot taken before the lock, and could miss the record the lock's previous holder
    // committed in between, running the event again. Two instances, each event delivered to the
    // first while the second keeps delivering it until it is no longer in flight.
    const tables = await freshTables(pool);
    const other = testPool(server.url, { max: 10 });
    try {
      const first = transactional(pool, tables);
      const second = transactional(other, tables);
      const events = Array.from({ length: 60 }, () => createTestEvent('image.created'));
      await Promise.all(
        events.map(async (event) => {
          const delivery = signed(event);
          const running = first.webhooks.handle(delivery);
          for (;;) {
            const answer = await second.webhooks.handle(delivery);
            if (answer.status !== 409) break;
          }
          await running;
        }),
      );
      expect(await rowCounts(pool, tables.business)).toEqual(new Map(events.map((event) => [event.id, 1])));
    } finally {
      await other.end();
    }
  });

  it('survives idle connections dropped by Postgres on a pool without an error listener', async () => {
    const tables = await freshTables(pool);
    const { Pool } = (await import('pg')).default;
    const bare = new Pool({ connectionString: server.url, max: 3 });
    try {
      const logged: unknown[] = [];
      const original = console.error;
      console.error = (...args: unknown[]) => void logged.push(args.join(' '));
      try {
        const webhooks = new Webhooks({
          secret: SECRET,
          transactions: new PostgresTransactions(bare, { table: tables.table }),
        });
        webhooks.onAny(() => {});
        expect((await webhooks.handle(signed())).status).toBe(200);
        // Terminated until the pool has seen it and holds no connection: its connection may still be
        // finishing the transaction (not yet idle) when the first terminate runs on a loaded machine,
        // and a second one (the background prune) may be busy while the first is terminated.
        await until(async () => {
          if (bare.totalCount > 0) {
            await pool.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '' AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state = 'idle'",
            );
          }
          return logged.length > 0 && bare.totalCount === 0;
        }, 'the pool to drop its broken connections');
        expect(String(logged[0])).toMatch(/idle Postgres connection failed/);
        expect((await webhooks.handle(signed())).status).toBe(200);
      } finally {
        console.error = original;
      }
    } finally {
      await bare.end();
    }
  });
});

describeWithPostgres('transactional handlers when Postgres is away', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgresServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 503 while Postgres is down or frozen, keeps nothing half-written, and processes the retries once', async () => {
    const pool = testPool(server.url, { max: 20 });
    const tables = await freshTables(pool);
    // The first run holds its handler (its row inserted) until Postgres is confirmed down, so the
    // fault lands mid-handler, before the commit; the retries run through.
    let inside: () => void = () => {};
    const entered = new Promise<void>((resolve) => {
      inside = resolve;
    });
    let stopped: () => void = () => {};
    const down = new Promise<void>((resolve) => {
      stopped = resolve;
    });
    const { webhooks, errors } = transactional(
      pool,
      tables,
      (run) => {
        if (run !== 1) return;
        inside();
        return down;
      },
      { timeoutMs: 300 },
    );
    const before = signed();
    const during = signed();
    const frozen = signed();
    // One delivery is mid-handler when Postgres stops: its transaction is lost with the connection.
    const cut = webhooks.handle(before);
    await entered;
    try {
      await server.stop('fast');
    } finally {
      stopped();
    }
    try {
      const answer = await cut;
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
      expect(errors[0]?.code).toBe('STORE_UNAVAILABLE');
      expect((await webhooks.handle(during)).status).toBe(503);
    } finally {
      await server.start();
    }
    server.pause();
    try {
      const started = Date.now();
      expect((await webhooks.handle(frozen)).status).toBe(503);
      // timeoutMs is 300 ms: a frozen Postgres would otherwise hold the answer forever. The margin
      // is a busy machine's, inside the service's 10 s.
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      server.resume();
    }
    for (const delivery of [before, during, frozen]) {
      await until(async () => (await webhooks.handle(delivery)).status === 200, 'the retry to be processed');
    }
    expect(await rowCounts(pool, tables.business)).toEqual(
      new Map([before, during, frozen].map((delivery) => [delivery.event.id, 1])),
    );
    await pool.end();
  });
});
