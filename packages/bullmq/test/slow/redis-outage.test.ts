/**
 * Redis stopped in the middle of a stream of deliveries: those answer 503 and nothing is
 * acknowledged without a job; once Redis is back the service's retries are queued, and in the end
 * every event ran and none is missing. Redis keeps its data across the restart (an append-only file
 * fsynced on every write), as a production Redis behind a queue must.
 */
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, testQueueOptions, until } from '../helpers/queues.js';

const EVENTS = 300;

describeWithRedis('Redis stopped mid-stream', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ persistent: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 503 while it is away; the retries are processed; every event runs', { timeout: 120_000 }, async () => {
    const { queue, webhooks, runs, errors } = queuedWebhooks(testQueueOptions(server.port));
    try {
      queue.startWorker(webhooks, { concurrency: 4, lockDurationMs: 2_000, stalledIntervalMs: 500 });
      const requests = Array.from({ length: EVENTS }, () => signed());
      const acknowledged = new Set<string>();
      const refused: typeof requests = [];
      for (const [index, request] of requests.entries()) {
        if (index === EVENTS / 3) await server.stop();
        if (index === (2 * EVENTS) / 3) await server.start();
        const answer = await webhooks.handle(request);
        if (answer.status === 202) acknowledged.add(request.event.id);
        else {
          expect(answer.status).toBe(503);
          expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
          refused.push(request);
        }
      }
      expect(refused.length).toBeGreaterThanOrEqual(EVENTS / 3 - 5);

      // The service's retries of the refused ones (the queue's connection comes back on its own).
      for (const request of refused) {
        await until(async () => (await webhooks.handle(request)).status === 202, 'a retry to be queued', 30_000);
      }
      // Nothing acknowledged is missing: every 202 has its job, whatever happened to Redis.
      for (const id of acknowledged) expect(await queue.bullQueue.getJobState(id)).not.toBe('unknown');
      await until(() => new Set(runs.map((run) => run.eventId)).size === EVENTS, 'every event to run', 60_000);
      expect(new Set(runs.map((run) => run.eventId))).toEqual(new Set(requests.map((request) => request.event.id)));
      // A job running when Redis went away may run again (at least once); each repeat is a lost job told to onError.
      const repeats = runs.length - EVENTS;
      const lost = errors.filter(({ error }) => error.code === 'JOB_STALLED').length;
      expect(repeats).toBeLessThanOrEqual(lost);
      await until(async () => (await queue.bullQueue.getCompletedCount()) === EVENTS, 'every job completed', 30_000);
    } finally {
      await queue.close();
    }
  });
});
