/** What editors infer in queued mode on pg-boss (vitest typecheck). */
import { type QueuedDelivery, type QueuedRun, type WebhookQueue, Webhooks } from '@pixhook/core';
import {
  type PgBossDeadLetter,
  type PgBossLike,
  PgBossQueue,
  type PgBossWorker,
  type QueueCounts,
} from '@pixhook/pg-boss';
import { PostgresTransactions } from '@pixhook/postgres';
import type { Request } from 'express';
import type { Pool, PoolClient } from 'pg';
import PgBoss from 'pg-boss';
import { describe, expectTypeOf, it } from 'vitest';

interface MyEvents {
  'image.created': { id: string; url: string };
}

const boss = new PgBoss('postgres://localhost/app');
const queue = new PgBossQueue(boss);
declare const pool: Pool;

describe('queued mode types on pg-boss', () => {
  it('a PgBoss is what PgBossQueue takes, and a PgBossQueue is a WebhookQueue', () => {
    expectTypeOf(boss).toMatchTypeOf<PgBossLike>();
    expectTypeOf(queue).toMatchTypeOf<WebhookQueue>();
    expectTypeOf(queue.enqueueTimeoutMs).toEqualTypeOf<number>();
    // @ts-expect-error: a connection string is not a boss
    new PgBossQueue('postgres://localhost/app');
    // @ts-expect-error: an unknown option is a type error
    new PgBossQueue(boss, { keepCompletedMs: 1 });
    // @ts-expect-error: pg-boss has no jitter setting
    new PgBossQueue(boss, { backoff: { type: 'fixed', delayMs: 1_000, jitter: 0.1 } });
  });

  it('handlers see context.job', () => {
    const webhooks = new Webhooks<MyEvents>({ secret: 'whsec_types', queue });
    webhooks.on('image.created', (event, context) => {
      expectTypeOf(event.data.object.url).toEqualTypeOf<string>();
      expectTypeOf(context.job).toEqualTypeOf<QueuedRun | undefined>();
      expectTypeOf(context.deliveryId).toEqualTypeOf<string>();
    });
  });

  it('with transactions, handlers see context.transaction and context.job', () => {
    const transactions = new PostgresTransactions(pool);
    const inferred = new Webhooks({ secret: 'whsec_types', queue, transactions });
    inferred.on('image.created', (_event, context) => {
      expectTypeOf(context.transaction).toEqualTypeOf<PoolClient>();
      expectTypeOf(context.job).toEqualTypeOf<QueuedRun | undefined>();
    });
    const typed = new Webhooks<MyEvents, unknown, PoolClient>({ secret: 'whsec_types', queue, transactions });
    typed.on('image.created', (event, { transaction, job }) => {
      expectTypeOf(event.data.object.id).toEqualTypeOf<string>();
      expectTypeOf(transaction).toEqualTypeOf<PoolClient>();
      expectTypeOf(job).toEqualTypeOf<QueuedRun | undefined>();
    });
    expectTypeOf(queue.startWorker(inferred)).toEqualTypeOf<PgBossWorker>();
    expectTypeOf(queue.startWorker(typed)).toEqualTypeOf<PgBossWorker>();
  });

  it('startWorker takes any Webhooks, whatever its event map and request type', () => {
    const typed = new Webhooks<MyEvents, Request>({ secret: 'whsec_types', queue });
    expectTypeOf(queue.startWorker(typed)).toEqualTypeOf<PgBossWorker>();
    expectTypeOf(
      queue.startWorker(new Webhooks({ secret: 'whsec_types', queue }), { concurrency: 4, pollingIntervalMs: 500 }),
    ).toEqualTypeOf<PgBossWorker>();
    expectTypeOf(queue.startWorker(typed).running).toEqualTypeOf<number>();
    expectTypeOf(queue.startWorker(typed).close()).resolves.toEqualTypeOf<boolean>();
    // @ts-expect-error: an unknown worker option is a type error
    queue.startWorker(typed, { concurency: 4 });
  });

  it('dead letters are typed', () => {
    expectTypeOf(queue.listDeadLetters()).resolves.toEqualTypeOf<PgBossDeadLetter[]>();
    expectTypeOf<PgBossDeadLetter['delivery']>().toEqualTypeOf<QueuedDelivery | undefined>();
    expectTypeOf(queue.getDeadLetter('evt_1')).resolves.toEqualTypeOf<PgBossDeadLetter | undefined>();
    expectTypeOf(queue.retryDeadLetter('evt_1')).resolves.toEqualTypeOf<boolean>();
    expectTypeOf(queue.retryAllDeadLetters()).resolves.toEqualTypeOf<number>();
    expectTypeOf(queue.countDeadLetters()).resolves.toEqualTypeOf<number>();
  });

  it('counts, engine and queueName are typed, and fit what a metrics reader takes', () => {
    expectTypeOf(queue.counts()).resolves.toEqualTypeOf<QueueCounts>();
    expectTypeOf<QueueCounts>().toEqualTypeOf<{
      readonly waiting: number;
      readonly active: number;
      readonly delayed: number;
      readonly deadLetter: number;
    }>();
    expectTypeOf(queue.engine).toEqualTypeOf<'pg-boss'>();
    expectTypeOf(queue.queueName).toEqualTypeOf<string>();
    expectTypeOf(queue).toMatchTypeOf<{
      counts(): Promise<{ waiting: number; active: number; delayed: number; deadLetter: number }>;
      engine?: string;
      queueName?: string;
    }>();
  });
});
