/**
 * Queued mode with an archive on a real Redis (BullMQ + RedisArchive), on every adapter: the
 * delivery is archived exactly as sent before the 202, the worker's run joins its timeline, and a
 * replay is a new job the worker runs as one.
 */

import { BullMQQueue } from '@pixhook/bullmq';
import { Webhooks } from '@pixhook/core';
import { RedisArchive } from '@pixhook/redis';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { archived, expectKeptExactly, oddDelivery } from '@pixhook/test-helpers/archive';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { testQueueOptions } from './helpers/queues.js';

describeWithRedis('queued mode on BullMQ with a RedisArchive', () => {
  let server: RedisServer;
  let redis: Redis;
  let archive: RedisArchive;
  const toClose: { close(): Promise<unknown> }[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis({ port: server.port, host: '127.0.0.1' });
    archive = new RedisArchive(redis, {
      prefix: `inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      pruneIntervalMs: false,
    });
  });
  afterEach(async () => {
    for (const thing of toClose.splice(0).reverse()) await thing.close();
  });
  afterAll(async () => {
    await archive?.close();
    redis?.disconnect();
    await server?.close();
  });

  it.each(ADAPTERS.map((adapter) => [adapter.name, adapter] as const))(
    '%s: archived as sent before the 202; the job and a replay join its timeline',
    async (_, adapter) => {
      const queue = new BullMQQueue(testQueueOptions(server.port));
      toClose.push(queue);
      const webhooks = new Webhooks({ secret: SECRET, queue, archive });
      const replays: (boolean | undefined)[] = [];
      webhooks.on('image.created', (_event, context) => void replays.push(context.replay));
      const client = await adapter.create(webhooks);
      toClose.push(client);
      const sent = oddDelivery();
      expect((await client.send(sent.request)).status).toBe(202);
      await expectKeptExactly(archive, sent, { outcome: 'queued', mode: 'queued', result: 'queued' });
      toClose.push(queue.startWorker(webhooks));
      const done = await archived(archive, sent.eventId, 2);
      // Found by kind: a job that ends within the millisecond its delivery arrived may read first.
      expect(done.timeline.find((entry) => entry.kind === 'job')).toMatchObject({ result: 'processed', attempt: 1 });
      expect(done.outcome).toBe('processed');
      expect(await webhooks.replay(sent.eventId)).toMatchObject({ outcome: 'queued' });
      const replayed = await archived(archive, sent.eventId, 4);
      expect(replayed.timeline.slice(2).map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
        'replay:queued',
        'job:processed',
      ]);
      expect(replays).toEqual([undefined, true]);
    },
  );
});
