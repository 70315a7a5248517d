/**
 * Group commit in PostgresStore: concurrent claims (and completions) of one store go to Postgres in
 * one statement, each caller getting the answer it would get alone, and a statement that fails
 * answers every caller with the usual error. Statements are counted on a pool wrapper.
 */

import { Webhooks } from '@pixhook/core';
import { migrate, PostgresStore } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { expectNoUnhandledRejection } from '@pixhook/test-helpers/tenants';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, signed, testPool, uniqueTable, until } from './helpers/postgres.js';

/** `pool` behind a wrapper that counts the statements sent through it (each one round trip). */
function counting(pool: pg.Pool) {
  let statements = 0;
  const wrapper = {
    connect: () => pool.connect(),
    query: (...args: Parameters<pg.Pool['query']>) => {
      statements += 1;
      return (pool.query as (...a: unknown[]) => unknown)(...args);
    },
  };
  return { pool: wrapper as unknown as pg.Pool, statements: () => statements };
}

describeWithPostgres('PostgresStore group commit against a real Postgres', () => {
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

  /**
   * 200 claims at once: 50 new events claimed 3 times each, 25 events already completed, 25 held by
   * another claim. Resolves with each id's answers and the statements the claims took.
   */
  async function twoHundredClaims(batchSize?: number) {
    const table = uniqueTable();
    await migrate(pool, { table });
    const setup = new PostgresStore(pool, { table, pruneIntervalMs: false });
    const completed = Array.from({ length: 25 }, (_, i) => `evt_done_${i}`);
    const held = Array.from({ length: 25 }, (_, i) => `evt_held_${i}`);
    const fresh = Array.from({ length: 50 }, (_, i) => `evt_new_${i}`);
    for (const id of completed) await setup.complete(id, 'setup');
    for (const id of held) expect(await setup.claim(id, 'setup')).toBe('claimed');

    const counted = counting(pool);
    const store = new PostgresStore(counted.pool, { table, pruneIntervalMs: false, batchSize, timeoutMs: 9_000 });
    const calls = [...fresh, ...completed, ...fresh, ...held, ...fresh].map((id, i) => ({ id, token: `token-${i}` }));
    expect(calls).toHaveLength(200);
    const answers = await Promise.all(calls.map(({ id, token }) => store.claim(id, token)));
    const byId = new Map<string, string[]>();
    calls.forEach(({ id }, i) => void byId.set(id, [...(byId.get(id) ?? []), answers[i] as string]));
    const { rows } = await pool.query<{ event_id: string; state: string; token: string }>(
      `SELECT event_id, state, token FROM ${table}`,
    );
    const rowOf = new Map(rows.map((row) => [row.event_id, row]));
    return { byId, calls, answers, rowOf, fresh, completed, held, statements: counted.statements() };
  }

  for (const batchSize of [undefined, 1]) {
    it(`answers each of 200 concurrent claims as alone, one claimer per event (batchSize: ${batchSize ?? 'default'})`, async () => {
      const { byId, calls, answers, rowOf, fresh, completed, held, statements } = await twoHundredClaims(batchSize);
      for (const id of fresh) {
        expect([...(byId.get(id) ?? [])].sort()).toEqual(['claimed', 'in-flight', 'in-flight']);
        // The row holds the token of the call that was answered `claimed`.
        const winner = calls.find((call, i) => call.id === id && answers[i] === 'claimed');
        expect(rowOf.get(id)).toMatchObject({ state: 'in-flight', token: winner?.token });
      }
      for (const id of completed) expect(byId.get(id)).toEqual(['completed']);
      for (const id of held) {
        expect(byId.get(id)).toEqual(['in-flight']);
        expect(rowOf.get(id)).toMatchObject({ state: 'in-flight', token: 'setup' });
      }
      // One statement per claim without batches; with them, a few for all 200.
      if (batchSize === 1) expect(statements).toBe(200);
      else expect(statements).toBeLessThanOrEqual(20);
    });
  }

  it('completes and releases concurrent claims in fewer statements, each answered as alone', async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const counted = counting(pool);
    // A long timeoutMs: a busy machine must not turn a slow answer into a failure here.
    const store = new PostgresStore(counted.pool, { table, pruneIntervalMs: false, timeoutMs: 9_000 });
    const ids = Array.from({ length: 100 }, (_, i) => `evt_c_${i}`);
    const claims = await Promise.all(ids.map((id) => store.claim(id, `t-${id}`)));
    expect(claims.every((answer) => answer === 'claimed')).toBe(true);
    // Another delivery holds evt_other: a completion with a stale token is refused.
    expect(await store.claim('evt_other', 'holder')).toBe('claimed');
    const before = counted.statements();
    const results = await Promise.allSettled([
      ...ids.map((id) => store.complete(id, `t-${id}`)),
      // The same completion twice at once: both succeed, as one after the other would.
      store.complete('evt_c_0', 't-evt_c_0'),
      store.complete('evt_other', 'stale-token'),
    ]);
    expect(counted.statements() - before).toBeLessThanOrEqual(12);
    const refused = results.slice(0, 101).filter((result) => result.status === 'rejected');
    expect(refused.map((result) => String(result.reason))).toEqual([]);
    expect(results[101]).toMatchObject({
      status: 'rejected',
      reason: {
        message: expect.stringMatching(/^pixhook: PostgresStore: event evt_other is claimed by another delivery/),
      },
    });
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE state = 'completed' AND event_id LIKE 'evt_c_%'`,
    );
    expect(rows[0]?.n).toBe(100);
    expect(await store.claim('evt_c_7', 'again')).toBe('completed');
  });

  it('rejects every claim of a statement that fails (the table dropped) with the usual error, none unhandled', async () => {
    const table = uniqueTable();
    await migrate(pool, { table });
    const store = new PostgresStore(pool, { table, pruneIntervalMs: false });
    expect(await store.claim('evt_first', 'token')).toBe('claimed');
    await pool.query(`DROP TABLE ${table}`);
    await expectNoUnhandledRejection(async () => {
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) => store.claim(`evt_${i % 40}`, `token-${i}`)),
      );
      for (const result of results) {
        expect(result).toMatchObject({
          status: 'rejected',
          reason: { message: expect.stringMatching(/does not exist: run migrate\(pool\)/) },
        });
      }
      const completions = await Promise.allSettled([
        store.complete('evt_first', 'token'),
        store.complete('evt_2', 'x'),
      ]);
      for (const result of completions) expect(result.status).toBe('rejected');
    });
  });

  describe('when Postgres is away', () => {
    it('answers 503 to each of many concurrent deliveries while Postgres is stopped, then processes each retry once', async () => {
      const own = testPool(server.url);
      const table = uniqueTable();
      await migrate(own, { table });
      const webhooks = new Webhooks({ secret: SECRET, store: new PostgresStore(own, { table, timeoutMs: 9_000 }) });
      webhooks.onError(() => {});
      const runs = new Map<string, number>();
      webhooks.onAny((event) => void runs.set(event.id, (runs.get(event.id) ?? 0) + 1));
      const deliveries = Array.from({ length: 30 }, () => signed());
      await server.stop('fast');
      try {
        await expectNoUnhandledRejection(async () => {
          const answers = await Promise.all(deliveries.map((delivery) => webhooks.handle(delivery)));
          expect(answers.map((answer) => answer.status)).toEqual(deliveries.map(() => 503));
          expect(answers.map((answer) => JSON.parse(answer.body).error.code)).toEqual(
            deliveries.map(() => 'STORE_UNAVAILABLE'),
          );
        });
      } finally {
        await server.start();
      }
      await until(async () => {
        const answers = await Promise.all(deliveries.map((delivery) => webhooks.handle(delivery)));
        return answers.every((answer) => answer.status === 200 || answer.status === 409);
      }, 'the retries to be processed');
      expect(runs.size).toBe(30);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      await own.end();
    });

    it('answers 503 within timeoutMs to each of many claims while Postgres is frozen, and gives back the claims that land late', async () => {
      const own = testPool(server.url);
      const table = uniqueTable();
      await migrate(own, { table });
      const store = new PostgresStore(own, { table, timeoutMs: 300, pruneIntervalMs: false });
      const webhooks = new Webhooks({ secret: SECRET, store });
      webhooks.onError(() => {});
      const runs = new Map<string, number>();
      webhooks.onAny((event) => void runs.set(event.id, (runs.get(event.id) ?? 0) + 1));
      const deliveries = Array.from({ length: 30 }, () => signed());
      // Connections are open before the freeze, as in a running app.
      await Promise.all(Array.from({ length: 5 }, () => own.query('SELECT 1')));
      server.pause();
      let answers: Awaited<ReturnType<Webhooks['handle']>>[];
      try {
        answers = await Promise.all(deliveries.map((delivery) => webhooks.handle(delivery)));
      } finally {
        server.resume();
      }
      expect(answers.map((answer) => answer.status)).toEqual(deliveries.map(() => 503));
      expect(runs.size).toBe(0);
      // The claims that reached Postgres landed once it woke and were given back: every retry runs.
      await until(async () => {
        const retries = await Promise.all(deliveries.map((delivery) => webhooks.handle(delivery)));
        return retries.every((answer) => answer.status === 200);
      }, 'the retries to be processed');
      expect(runs.size).toBe(30);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      await own.end();
    });
  });
});
