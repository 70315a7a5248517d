/**
 * The pg-boss queue moved to @pixhook/pg-boss; @pixhook/postgres re-exports it until its next
 * minor. The old import still gives every name it gave, builds a queue that warns once that it
 * moved, is the same class both ways of `instanceof`, and queues and runs deliveries on a real
 * pg-boss.
 */

import { type HandlerContext, Webhooks } from '@pixhook/core';
import * as moved from '@pixhook/pg-boss';
import * as postgres from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, until } from './helpers/postgres.js';

/** A queue name no other test uses. */
const uniqueName = () => `pixhook-test-moved-${globalThis.crypto.randomUUID().slice(0, 8)}`;

/** Node emits a warning on the next tick after `process.emitWarning`. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describeWithPostgres('the pg-boss queue imported from @pixhook/postgres (deprecated)', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  const warnings: (Error & { code?: string })[] = [];
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code === 'PIXHOOK_PG_BOSS_MOVED') warnings.push(warning);
  };
  const toClose: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    process.on('warning', onWarning);
    server = await startPostgresServer();
    boss = new PgBoss({ connectionString: server.url, schedule: false, max: 5 });
    boss.on('error', () => {});
    await boss.start();
  });
  afterEach(async () => {
    for (const queue of toClose.splice(0).reverse()) await queue.close();
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await boss?.stop({ graceful: false, wait: true });
    await server?.close();
  });

  it('gives every name it gave before the move: the same function, the same class', () => {
    expect(Object.keys(postgres).sort()).toEqual([
      'PgBossQueue',
      'PostgresArchive',
      'PostgresStore',
      'PostgresTransactions',
      'getArchiveMigrationSql',
      'getMigrationSql',
      'migrate',
      'migrateArchive',
      'pgBossJobIdFor',
    ]);
    expect(postgres.pgBossJobIdFor).toBe(moved.pgBossJobIdFor);
    expect(Object.getPrototypeOf(postgres.PgBossQueue)).toBe(moved.PgBossQueue);
    expect(postgres.PgBossQueue.name).toBe('PgBossQueue');
  });

  it('warns once, when the first queue is built, naming @pixhook/pg-boss; a queue of either import is an instance of both', async () => {
    expect(warnings).toEqual([]); // importing warns nothing
    const old = new postgres.PgBossQueue(boss, { name: uniqueName() });
    toClose.push(old);
    await nextTurn();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ name: 'DeprecationWarning', code: 'PIXHOOK_PG_BOSS_MOVED' });
    expect(warnings[0]?.message).toMatch(/^pixhook: /);
    expect(warnings[0]?.message).toContain("import { PgBossQueue } from '@pixhook/pg-boss'");

    toClose.push(new postgres.PgBossQueue(boss, { name: uniqueName() }));
    const current = new moved.PgBossQueue(boss, { name: uniqueName() });
    toClose.push(current);
    await nextTurn();
    expect(warnings).toHaveLength(1);

    expect(old).toBeInstanceOf(moved.PgBossQueue);
    expect(old).toBeInstanceOf(postgres.PgBossQueue);
    expect(current).toBeInstanceOf(postgres.PgBossQueue);
    expect({}).not.toBeInstanceOf(postgres.PgBossQueue);
    // Bad input is refused as before, by the same checks.
    expect(() => new postgres.PgBossQueue('postgres://localhost/app' as never)).toThrow(
      /^pixhook: new PgBossQueue\(boss\) needs a PgBoss instance/,
    );
  });

  it('queues a delivery (202) that its worker runs, with the job id of @pixhook/pg-boss', async () => {
    const queue = new postgres.PgBossQueue(boss, { name: uniqueName(), attempts: 1 });
    toClose.push(queue);
    const webhooks = new Webhooks({ secret: SECRET, queue });
    const runs: { eventId: string; job: HandlerContext['job'] }[] = [];
    webhooks.on('image.created', (event, { job }) => void runs.push({ eventId: event.id, job }));
    queue.startWorker(webhooks, { pollingIntervalMs: 100 });

    const request = signed();
    const answer = await webhooks.handle(request);
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    await until(() => runs.length === 1, 'the queued event to run');
    expect(runs[0]).toMatchObject({
      eventId: request.event.id,
      job: { engine: 'pg-boss', jobId: moved.pgBossJobIdFor(request.event.id), attempt: 1 },
    });
  });
});
