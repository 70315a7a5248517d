/**
 * Exactly-once effects, proven under load: three receiving instances (processes, Express, in
 * transactional mode) whose handlers insert one row per event into a business table. A few thousand
 * deliveries, a quarter of them duplicates, at 32 concurrent; a tenth of the events throw once after
 * their insert; the sender retries every answer that is not a 2xx, as the service does. Then the
 * same with one instance SIGKILLed mid-run, and with Postgres restarted mid-stream. At the end the
 * business table holds exactly one row per unique event, none missing, none twice.
 */

import http from 'node:http';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTables, type Receiver, rowCounts, signed, sleep, startReceiver, testPool } from '../helpers/postgres.js';

const UNIQUE = 2_400;
const DUPLICATES = 800;
const CONCURRENCY = 32;

type Delivery = ReturnType<typeof signed>;

/** One POST, as the service sends it: the status, or 0 when the connection failed or took over 10 s. */
function post(port: number, delivery: Delivery): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/webhooks', headers: delivery.headers, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(delivery.body);
  });
}

interface Stream {
  /** Answers by status (0: no answer); retries included. */
  statuses: Map<number, number>;
}

/**
 * Sends every delivery at `CONCURRENCY` at once over the live receivers, and sends again (after a
 * short wait, to any live receiver) each one not answered 2xx, until all are. `during(sent)` runs
 * after each first send, to kill or restart something mid-stream.
 */
async function stream(
  deliveries: Delivery[],
  receivers: Receiver[],
  dead: Set<Receiver>,
  during: (sent: number) => void = () => {},
): Promise<Stream> {
  const statuses = new Map<number, number>();
  let next = 0;
  let turn = 0;
  const deadline = Date.now() + 200_000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < deliveries.length) {
        const index = next++;
        during(index);
        const delivery = deliveries[index] as Delivery;
        for (;;) {
          const live = receivers.filter((receiver) => !dead.has(receiver));
          const receiver = live[turn++ % live.length] as Receiver;
          const status = await post(receiver.port, delivery);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status >= 200 && status < 300) break;
          if (Date.now() > deadline) throw new Error(`delivery ${delivery.event.id} never got a 2xx`);
          await sleep(50);
        }
      }
    }),
  );
  return { statuses };
}

function deliveriesWithDuplicates(): { unique: Delivery[]; deliveries: Delivery[] } {
  const unique = Array.from({ length: UNIQUE }, () => signed());
  // A quarter of the deliveries repeat an event (a service retry: the same body and signature).
  const deliveries = [...unique, ...unique.slice(0, DUPLICATES)].sort(() => Math.random() - 0.5);
  return { unique, deliveries };
}

describeWithPostgres('exactly-once effects under load', () => {
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

  async function setup(mode: 'flaky' | 'slow') {
    const tables = await freshTables(pool);
    await pool.query(`CREATE TABLE ${tables.business}_failed (event_id text PRIMARY KEY)`);
    const receivers = await Promise.all([0, 1, 2].map(() => startReceiver(server.url, tables, mode)));
    return { tables, receivers };
  }

  /** One row per unique event, none missing, none twice, and every one of them recorded as processed. */
  async function expectExactlyOnce(tables: { table: string; business: string }, unique: Delivery[]) {
    const counts = await rowCounts(pool, tables.business);
    const twice = [...counts].filter(([, n]) => n > 1);
    const missing = unique.filter((delivery) => !counts.has(delivery.event.id));
    expect({ twice: twice.length, missing: missing.length, rows: counts.size }).toEqual({
      twice: 0,
      missing: 0,
      rows: UNIQUE,
    });
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${tables.table} WHERE state = 'completed'`);
    expect(rows[0].n).toBe(UNIQUE);
  }

  it('a tenth of the events fail once and one instance is SIGKILLed mid-run: one row per event', async () => {
    const { tables, receivers } = await setup('flaky');
    const dead = new Set<Receiver>();
    try {
      const { unique, deliveries } = deliveriesWithDuplicates();
      let killed: Promise<void> | undefined;
      const { statuses } = await stream(deliveries, receivers, dead, (sent) => {
        if (sent === Math.floor(deliveries.length / 3) && !killed) {
          const victim = receivers[0] as Receiver;
          dead.add(victim);
          killed = victim.kill();
        }
      });
      await killed;
      console.log('answers (status: count, 0 = connection lost):', Object.fromEntries(statuses));
      // The kill cut requests mid-handler, and the injected failures answered 500.
      expect(statuses.get(0) ?? 0).toBeGreaterThan(0);
      expect(statuses.get(500) ?? 0).toBeGreaterThan(0);
      await expectExactlyOnce(tables, unique);
      const failed = await pool.query(`SELECT count(*)::int AS n FROM ${tables.business}_failed`);
      expect(failed.rows[0].n).toBeGreaterThan(UNIQUE / 20);
    } finally {
      await Promise.all(receivers.map((receiver) => receiver.kill()));
    }
  });

  it('Postgres restarted mid-stream: those deliveries answer 5xx, nothing half-written, the retries once', async () => {
    const { tables, receivers } = await setup('slow');
    try {
      const { unique, deliveries } = deliveriesWithDuplicates();
      let restarted: Promise<void> | undefined;
      const { statuses } = await stream(deliveries, receivers, new Set(), (sent) => {
        if (sent === Math.floor(deliveries.length / 3) && !restarted) {
          restarted = (async () => {
            await server.stop('fast');
            await sleep(1_000);
            await server.start();
          })();
        }
      });
      await restarted;
      console.log('answers (status: count):', Object.fromEntries(statuses));
      const failures = [...statuses].filter(([status]) => status >= 500).reduce((sum, [, n]) => sum + n, 0);
      expect(failures).toBeGreaterThan(0);
      expect(statuses.get(0) ?? 0).toBe(0);
      await expectExactlyOnce(tables, unique);
    } finally {
      await Promise.all(receivers.map((receiver) => receiver.kill()));
    }
  });
});
