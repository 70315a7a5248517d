/**
 * Bounded load on loopback: 2,000 deliveries, a quarter of them duplicates, sent 32 at a time over
 * three receiving instances (Express, Fastify, Koa), each with its own PgBoss and a worker. Handlers
 * insert a row in the event's transaction, and a random tenth of the events throw once after their
 * insert. Every delivery is answered 202, and the business table ends with exactly one row per
 * unique event.
 */

import { Webhooks } from '@pixhook/core';
import { PgBossQueue } from '@pixhook/pg-boss';
import { migrate, PostgresTransactions } from '@pixhook/postgres';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import pg from 'pg';
import type PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobCounts, SECRET, signed, startBoss, testQueueOptions, until } from '../helpers/pg-boss.js';

const UNIQUE = 1_500;
const DUPLICATES = 500;
const CONCURRENCY = 32;

describeWithPostgres('queued processing on pg-boss under load', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgresServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('three receivers with workers: one row per unique event, retries included', { timeout: 60_000 }, async () => {
    const options = testQueueOptions({ attempts: 5 });
    const bosses: PgBoss[] = [];
    const pools: pg.Pool[] = [];
    const queues: PgBossQueue[] = [];
    const clients: Client[] = [];
    const runs = new Map<string, number>();
    // A tenth of the events fail their first run, after their insert (rolled back).
    const flaky = new Set<string>();
    const unique = Array.from({ length: UNIQUE }, () => signed());
    for (const request of unique) if (Math.random() < 0.1) flaky.add(request.event.id);
    const handlerErrors: string[] = [];
    try {
      const setup = new pg.Pool({ connectionString: server.url, max: 2 });
      await migrate(setup);
      await setup.query('CREATE TABLE effects (event_id text NOT NULL, worker int NOT NULL)');
      await setup.end();
      for (const [index, name] of ['express@5', 'fastify@5', 'koa@3'].entries()) {
        const { boss } = await startBoss(server.url, { max: 12 });
        bosses.push(boss);
        const pool = new pg.Pool({ connectionString: server.url, max: 14 });
        pool.on('error', () => {});
        pools.push(pool);
        const queue = new PgBossQueue(boss, options);
        queues.push(queue);
        const webhooks = new Webhooks({ secret: SECRET, queue, transactions: new PostgresTransactions(pool) });
        webhooks.onAny(async (event, { transaction, job }) => {
          runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
          await transaction.query('INSERT INTO effects (event_id, worker) VALUES ($1, $2)', [event.id, index]);
          if (job!.attempt === 1 && flaky.has(event.id)) throw new Error('flaky once');
        });
        webhooks.onError((error) => {
          if (error.code !== 'HANDLER_FAILED') handlerErrors.push(`${error.code}: ${error.message}`);
        });
        clients.push(await ADAPTERS.find((adapter) => adapter.name === name)!.create(webhooks));
        queue.startWorker(webhooks, { concurrency: 12, pollingIntervalMs: 200 });
      }

      // A quarter of the deliveries repeat an event (a service retry: the same body and signature).
      const deliveries = [...unique, ...unique.slice(0, DUPLICATES)].sort(() => Math.random() - 0.5);
      const statuses = new Map<number, number>();
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < deliveries.length) {
            const index = next++;
            const answer = await clients[index % clients.length]!.send(deliveries[index]!);
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          }
        }),
      );
      const answeredIn = performance.now() - started;
      expect(Object.fromEntries(statuses)).toEqual({ 202: UNIQUE + DUPLICATES });

      await until(
        async () => (await jobCounts(bosses[0]!, options.name!)).completed === UNIQUE,
        'every job to complete',
        45_000,
      );
      const processedIn = performance.now() - started;
      const effects = await pools[0]!.query<{ event_id: string; n: number }>(
        'SELECT event_id, count(*)::int AS n FROM effects GROUP BY event_id',
      );
      expect(effects.rows.length).toBe(UNIQUE);
      expect(effects.rows.filter((row) => row.n !== 1)).toEqual([]);
      expect(new Set(effects.rows.map((row) => row.event_id))).toEqual(
        new Set(unique.map((request) => request.event.id)),
      );
      // Each flaky event ran twice, every other once: no job was duplicated.
      expect([...runs.entries()].filter(([id, n]) => n !== (flaky.has(id) ? 2 : 1))).toEqual([]);
      expect(await jobCounts(bosses[0]!, options.name!)).toEqual({ completed: UNIQUE });
      expect(handlerErrors).toEqual([]);
      const spread = await pools[0]!.query('SELECT worker, count(*)::int AS n FROM effects GROUP BY worker');
      console.log(
        `pg-boss load: ${deliveries.length} deliveries answered in ${Math.round(answeredIn)} ms, ${UNIQUE} events (${flaky.size} failing once) processed in ${Math.round(processedIn)} ms; per worker: ${spread.rows.map((row) => row.n).join(' / ')}`,
      );
    } finally {
      for (const client of clients) await client.close();
      for (const queue of queues) await queue.close();
      for (const boss of bosses) await boss.stop({ graceful: false, wait: true });
      for (const pool of pools) await pool.end();
    }
  });
});
