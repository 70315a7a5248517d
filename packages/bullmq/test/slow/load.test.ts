/**
 * Bounded load on loopback: a few thousand deliveries, a quarter of them duplicates, spread over
 * three receiving instances (Express, Fastify, Koa) and processed by two workers. Every delivery is
 * answered 202, and the handlers run exactly once per unique event.
 */

import { BullMQQueue } from '@pixhook/bullmq';
import { Webhooks } from '@pixhook/core';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SECRET, signed, testQueueOptions, until } from '../helpers/queues.js';

const UNIQUE = 2_400;
const DUPLICATES = 800;
const CONCURRENCY = 32;

describeWithRedis('queued processing under load', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('three receivers and two workers: handler runs equal unique events', { timeout: 120_000 }, async () => {
    const options = testQueueOptions(server.port);
    const queues: BullMQQueue[] = [];
    const clients: Client[] = [];
    const runs = new Map<string, number>();
    try {
      for (const name of ['express@5', 'fastify@5', 'koa@3']) {
        const queue = new BullMQQueue(options);
        queues.push(queue);
        const webhooks = new Webhooks({ secret: SECRET, queue });
        clients.push(await ADAPTERS.find((adapter) => adapter.name === name)!.create(webhooks));
      }
      for (let i = 0; i < 2; i += 1) {
        const queue = new BullMQQueue(options);
        queues.push(queue);
        const webhooks = new Webhooks({ secret: SECRET, queue });
        webhooks.onAny((event) => void runs.set(event.id, (runs.get(event.id) ?? 0) + 1));
        queue.startWorker(webhooks, { concurrency: 8 });
      }

      const unique = Array.from({ length: UNIQUE }, () => signed());
      // A quarter of the deliveries repeat an event (a service retry: the same body and signature).
      const deliveries = [...unique, ...unique.slice(0, DUPLICATES)].sort(() => Math.random() - 0.5);
      const statuses = new Map<number, number>();
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
      expect(Object.fromEntries(statuses)).toEqual({ 202: UNIQUE + DUPLICATES });

      await until(async () => (await queues[0]!.bullQueue.getCompletedCount()) === UNIQUE, 'every job', 60_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(runs.size).toBe(UNIQUE);
      expect([...runs.values()].filter((count) => count !== 1)).toEqual([]);
      expect(new Set(runs.keys())).toEqual(new Set(unique.map((request) => request.event.id)));
    } finally {
      for (const client of clients) await client.close();
      for (const queue of queues) await queue.close();
    }
  });
});
