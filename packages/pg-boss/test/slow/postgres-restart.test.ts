/**
 * Postgres stopped (a clean `fast` shutdown: open sessions ended, their transactions rolled back)
 * in the middle of a stream of deliveries, with a worker running transactional handlers, then
 * started again: the deliveries during the outage answer 503 and nothing is acknowledged without a
 * job; the service's retries are queued once Postgres is back; every event's effect is written
 * exactly once, and no transaction is left half-written. The boss keeps pg-boss's defaults
 * (cron scheduling on) apart from a short maintenance interval.
 */
import { Webhooks } from '@pixhook/core';
import { PgBossQueue, pgBossJobIdFor } from '@pixhook/pg-boss';
import { migrate, PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, sleep, startBoss, testQueueOptions, until } from '../helpers/pg-boss.js';

const EVENTS = 240;

describeWithPostgres('Postgres restarted under a pg-boss queue', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgresServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 503 while it is away; the retries are processed; every effect exactly once', {
    timeout: 60_000,
  }, async () => {
    const { boss, bossErrors } = await startBoss(server.url, { schedule: true });
    const pool = new pg.Pool({ connectionString: server.url, max: 8 });
    pool.on('error', () => {});
    await migrate(pool);
    await pool.query('CREATE TABLE effects (event_id text PRIMARY KEY, attempt int NOT NULL)');
    const options = testQueueOptions({ attempts: 10, expireInMs: 3_000 });
    const queue = new PgBossQueue(boss, options);
    const webhooks = new Webhooks({ secret: SECRET, queue, transactions: new PostgresTransactions(pool) });
    const runs: string[] = [];
    webhooks.onAny(async (event, { transaction, job }) => {
      runs.push(event.id);
      // Slow enough that some handlers are mid-transaction when Postgres goes away.
      await sleep(20);
      // A primary key: a second effect for an event would fail loudly, not hide in a count.
      await transaction.query('INSERT INTO effects (event_id, attempt) VALUES ($1, $2)', [event.id, job!.attempt]);
    });
    const codes = new Map<string, number>();
    webhooks.onError((error) => void codes.set(error.code, (codes.get(error.code) ?? 0) + 1));
    try {
      queue.startWorker(webhooks, { concurrency: 4, pollingIntervalMs: 200 });
      const requests = Array.from({ length: EVENTS }, () => signed());
      const acknowledged = new Set<string>();
      const refused: typeof requests = [];
      for (const [index, request] of requests.entries()) {
        if (index === EVENTS / 3) await server.stop('fast');
        if (index === (2 * EVENTS) / 3) await server.start();
        // Deliveries keep coming for a while during the outage.
        if (index >= EVENTS / 3 && index < (2 * EVENTS) / 3) await sleep(15);
        const answer = await webhooks.handle(request);
        if (answer.status === 202) acknowledged.add(request.event.id);
        else {
          expect(answer.status).toBe(503);
          expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
          refused.push(request);
        }
      }
      expect(refused.length).toBeGreaterThanOrEqual(EVENTS / 3 - 5);

      // The service's retries of the refused ones.
      for (const request of refused) {
        await until(async () => (await webhooks.handle(request)).status === 202, 'a retry to be queued', 20_000);
      }
      // Nothing acknowledged is missing: every 202 has its job, whatever happened to Postgres.
      const jobs = await pool.query<{ id: string }>('SELECT id FROM pgboss.job WHERE name = $1', [options.name]);
      const stored = new Set(jobs.rows.map((row) => row.id));
      for (const request of requests) expect(stored.has(pgBossJobIdFor(request.event.id))).toBe(true);
      expect(stored.size).toBe(EVENTS);

      await until(
        async () =>
          (
            await pool.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'",
              [options.name],
            )
          ).rows[0]!.n === EVENTS,
        'every job to complete',
        40_000,
      );
      const effects = await pool.query<{ event_id: string }>('SELECT event_id FROM effects');
      expect(effects.rows.length).toBe(EVENTS);
      expect(new Set(effects.rows.map((row) => row.event_id))).toEqual(
        new Set(requests.map((request) => request.event.id)),
      );
      // No transaction was left open or half-written.
      const open = await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'",
      );
      expect(open.rows[0]!.n).toBe(0);
      expect(codes.get('QUEUE_UNAVAILABLE')).toBeGreaterThanOrEqual(1);
      expect(await queue.countDeadLetters()).toBe(0);
      console.log(
        `pg-boss restart: ${refused.length} of ${EVENTS} deliveries refused during the outage; ${runs.length} handler runs for ${EVENTS} events; onError: ${JSON.stringify(Object.fromEntries(codes))}; boss errors: ${bossErrors.length}`,
      );
    } finally {
      await queue.close();
      await boss.stop({ graceful: false, wait: true });
      await pool.end();
    }
  });
});
