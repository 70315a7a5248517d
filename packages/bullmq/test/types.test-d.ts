/** What editors infer in queued mode (vitest typecheck). */
import { BullMQQueue, type DeadLetter, type QueueCounts, type QueueWorker } from '@pixhook/bullmq';
import { type QueuedDelivery, type QueuedRun, type WebhookQueue, Webhooks } from '@pixhook/core';
import type { Request } from 'express';
import { describe, expectTypeOf, it } from 'vitest';

interface MyEvents {
  'image.created': { id: string; url: string };
}

const queue = new BullMQQueue({ connection: { host: '127.0.0.1', port: 6379 } });

describe('queued mode types', () => {
  it('a BullMQQueue is a WebhookQueue, and handlers see context.job', () => {
    expectTypeOf(queue).toMatchTypeOf<WebhookQueue>();
    const webhooks = new Webhooks<MyEvents>({ secret: 'whsec_types', queue });
    webhooks.on('image.created', (event, context) => {
      expectTypeOf(event.data.object.url).toEqualTypeOf<string>();
      expectTypeOf(context.job).toEqualTypeOf<QueuedRun | undefined>();
      expectTypeOf(context.deliveryId).toEqualTypeOf<string>();
    });
  });

  it('startWorker takes any Webhooks, whatever its event map and request type', () => {
    const typed = new Webhooks<MyEvents, Request>({ secret: 'whsec_types', queue });
    expectTypeOf(queue.startWorker(typed)).toEqualTypeOf<QueueWorker>();
    expectTypeOf(
      queue.startWorker(new Webhooks({ secret: 'whsec_types', queue }), { concurrency: 4 }),
    ).toEqualTypeOf<QueueWorker>();
    // @ts-expect-error: an unknown worker option is a type error
    queue.startWorker(typed, { concurency: 4 });
  });

  it('dead letters are typed', () => {
    expectTypeOf(queue.listDeadLetters()).resolves.toEqualTypeOf<DeadLetter[]>();
    expectTypeOf<DeadLetter['delivery']>().toEqualTypeOf<QueuedDelivery | undefined>();
    expectTypeOf(queue.retryDeadLetter('evt_1')).resolves.toEqualTypeOf<boolean>();
  });

  it('counts, engine and queueName are typed, and fit what a metrics reader takes', () => {
    expectTypeOf(queue.counts()).resolves.toEqualTypeOf<QueueCounts>();
    expectTypeOf<QueueCounts>().toEqualTypeOf<{
      readonly waiting: number;
      readonly active: number;
      readonly delayed: number;
      readonly deadLetter: number;
    }>();
    expectTypeOf(queue.engine).toEqualTypeOf<'bullmq'>();
    expectTypeOf(queue.queueName).toEqualTypeOf<string>();
    expectTypeOf(queue).toMatchTypeOf<{
      counts(): Promise<{ waiting: number; active: number; delayed: number; deadLetter: number }>;
      engine?: string;
      queueName?: string;
    }>();
  });
});
