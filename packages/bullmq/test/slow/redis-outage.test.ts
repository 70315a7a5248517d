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

/**
 * What the README promises: a queue answers 202 again within about a second of Redis coming back
 * (pixhook reconnects every second at most). The test allows 2 s more for a loaded machine.
 */
const BACK_WITHIN_MS = 1_000;
const LOADED_MACHINE_MARGIN_MS = 2_000;
/** Long enough for BullMQ's own exponential reconnection delays to grow past 8 s. */
const OUTAGE_MS = 12_000;

describeWithRedis('Redis stopped mid-stream', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ persistent: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers 202 again within a second of Redis coming back after a 12-second outage (no retryStrategy given)', {
    timeout: 120_000,
  }, async () => {
    // The connection options a user writes: no retryStrategy, so pixhook's reconnection applies.
    const { queue, webhooks } = queuedWebhooks({
      ...testQueueOptions(server.port),
      connection: { host: '127.0.0.1', port: server.port },
    });
    try {
      expect((await webhooks.handle(signed())).status).toBe(202);
      await server.stop();
      const stoppedAt = performance.now();
      // Deliveries keep coming while Redis is away: each is refused at once.
      while (performance.now() - stoppedAt < OUTAGE_MS) {
        const answer = await webhooks.handle(signed());
        expect(answer.status).toBe(503);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await server.start();
      const backAt = performance.now();
      let status = 0;
      while (status !== 202) {
        status = (await webhooks.handle(signed())).status;
        if (performance.now() - backAt > 30_000) throw new Error('the queue never answered 202 again');
        if (status !== 202) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const recoveredAfterMs = performance.now() - backAt;
      console.log(`202 again ${Math.round(recoveredAfterMs)} ms after Redis was back from a ${OUTAGE_MS} ms outage`);
      expect(recoveredAfterMs).toBeLessThan(BACK_WITHIN_MS + LOADED_MACHINE_MARGIN_MS);
    } finally {
      await queue.close();
    }
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
