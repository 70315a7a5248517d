/** The case as stated: a 30-second handler, answered in milliseconds, completed later. */
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, testQueueOptions, until } from '../helpers/queues.js';

const HANDLER_MS = 30_000;

describeWithRedis('a 30-second handler', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('gets its 202 in milliseconds; the handler completes about 30 s later', { timeout: 60_000 }, async () => {
    const ended: number[] = [];
    const { queue, webhooks, runs } = queuedWebhooks(testQueueOptions(server.port), async () => {
      await new Promise((resolve) => setTimeout(resolve, HANDLER_MS));
      ended.push(performance.now());
    });
    try {
      queue.startWorker(webhooks);
      const request = signed();
      const started = performance.now();
      const answer = await webhooks.handle(request);
      const answered = performance.now();
      expect(answer.status).toBe(202);
      // Milliseconds on a quiet machine; the bound keeps a busy machine's margin and still proves the
      // answer never waits for the 30 s handler.
      expect(answered - started).toBeLessThan(3_000);
      await until(() => runs.length === 1, 'the handler to start');
      await until(() => ended.length === 1, 'the handler to end', HANDLER_MS + 10_000);
      expect(ended[0]! - answered).toBeGreaterThanOrEqual(HANDLER_MS - 50);
      await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
      expect(runs).toHaveLength(1);
    } finally {
      await queue.close();
    }
  });
});
