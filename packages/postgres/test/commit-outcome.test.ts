/**
 * A COMMIT whose answer is lost, on a real Postgres through a proxy that loses it at that exact
 * moment: pixhook reads the event's record back on another connection and answers what happened
 * (200 when it committed, 503 when it did not), or says the outcome is unknown when Postgres is
 * frozen and nothing can be read back; the retry finds out, and effects stay exactly-once.
 */

import { Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { PostgresTransactions } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CommitProxy, startCommitProxy } from './helpers/commit-proxy.js';
import { freshTables, rowCounts, SECRET, signed, testPool, until } from './helpers/postgres.js';

/** Generous for a loaded machine: a healthy step answers in milliseconds. */
const TIMEOUT_MS = 1_500;

describeWithPostgres('a COMMIT whose answer is lost', () => {
  let server: PostgresServer;
  let proxy: CommitProxy;
  let pool: ReturnType<typeof testPool>;
  beforeAll(async () => {
    server = await startPostgresServer();
    proxy = await startCommitProxy(server.port);
    pool = testPool(proxy.url, { max: 10 });
  });
  afterAll(async () => {
    await pool?.end();
    await proxy?.close();
    await server?.close();
  });

  async function setup() {
    const tables = await freshTables(pool);
    const webhooks = new Webhooks({
      secret: SECRET,
      transactions: new PostgresTransactions(pool, { table: tables.table, timeoutMs: TIMEOUT_MS }),
    });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    let runs = 0;
    webhooks.onAny(async (event, { transaction }) => {
      runs += 1;
      await transaction.query(`INSERT INTO ${tables.business} (event_id) VALUES ($1)`, [event.id]);
    });
    return { tables, webhooks, errors, runs: () => runs };
  }

  it.each(['answer-lost-connection-dropped', 'answer-lost-silently'] as const)(
    'answers 200 when the commit reached Postgres and its answer was lost (%s), and says so to onError',
    async (fault) => {
      const { tables, webhooks, errors, runs } = await setup();
      const delivery = signed();
      const trap = proxy.trap(fault);
      const answer = await webhooks.handle(delivery);
      await trap.seen;
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ received: true });
      expect(errors).toHaveLength(1);
      expect(errors[0]?.code).toBe('STORE_UNAVAILABLE');
      expect(errors[0]?.message).toMatch(/answer to the commit .* was lost, but the event's record was read back/);
      expect(errors[0]?.message).not.toMatch(/none of their writes were kept/);
      expect(errors[0]?.cause).toBeInstanceOf(Error);
      expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
      expect(JSON.parse((await webhooks.handle(delivery)).body)).toEqual({ received: true, duplicate: true });
      expect(runs()).toBe(1);
    },
  );

  it('answers 503 "none kept" when the commit never reached Postgres, and the retry runs the event once', async () => {
    const { tables, webhooks, errors, runs } = await setup();
    const delivery = signed();
    const trap = proxy.trap('never-sent');
    const answer = await webhooks.handle(delivery);
    await trap.seen;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/none of their writes were kept/);
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toMatch(/record is absent on another connection/);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map());
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs()).toBe(2);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });

  it('answers 503 "unknown" when Postgres froze with the commit in hand, and the retry finds it was kept', async () => {
    const { tables, webhooks, errors, runs } = await setup();
    const delivery = signed();
    const trap = proxy.trap('held');
    const answering = webhooks.handle(delivery);
    await trap.seen;
    // Frozen before the COMMIT reaches it: it sits in the socket, unanswered, until Postgres goes on.
    server.pause();
    let answer: Awaited<typeof answering>;
    try {
      trap.forward();
      answer = await answering;
    } finally {
      server.resume();
    }
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/whether their writes were kept is unknown/);
    expect(errors[0]?.message).toMatch(/the retry finds out/);
    expect(errors[0]?.message).not.toMatch(/none of their writes were kept/);
    // Postgres went on and committed: the retry is a duplicate, and the handler ran once.
    await until(
      async () => (await webhooks.handle(delivery)).body.includes('duplicate'),
      'the retry to find the commit',
    );
    expect(runs()).toBe(1);
    expect(await rowCounts(pool, tables.business)).toEqual(new Map([[delivery.event.id, 1]]));
  });
});
