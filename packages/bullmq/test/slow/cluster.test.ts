/**
 * BullMQQueue on a real Redis Cluster (3 masters, 3 replicas, started here) through an ioredis
 * `Cluster`: the prefix needs a hash tag (refused without one), a delivery is answered 202 once the
 * job is on its master and a replica, the worker runs it once, a duplicate delivery adds no job,
 * dead letters are listed and retried.
 */
import { BullMQQueue } from '@pixhook/bullmq';
import type { AnyEvent } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { describeWithRedisCluster, type RedisCluster, startRedisCluster } from '@pixhook/test-helpers/redis-cluster';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, uniqueName, until } from '../helpers/queues.js';

describeWithRedisCluster('BullMQQueue on a Redis Cluster (ioredis Cluster)', () => {
  let cluster: RedisCluster;
  let connection: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    // BullMQ's workers block on their own duplicate of the connection: no per-request retry limit.
    connection = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: null } });
    connection.on('error', () => {});
    await connection.ping();
  });
  afterAll(async () => {
    connection?.disconnect();
    await cluster?.close();
  });

  it('refuses a prefix without a hash tag, naming the fix', () => {
    expect(() => new BullMQQueue({ connection, name: uniqueName() })).toThrow(
      /^pixhook: new BullMQQueue\(options\): on a Redis Cluster .*prefix: '\{bull\}'/,
    );
    expect(() => new BullMQQueue({ connection, name: uniqueName(), prefix: 'jobs' })).toThrow(/got "jobs"/);
    expect(() => new BullMQQueue({ connection, name: uniqueName(), prefix: '{}' })).toThrow(/hash tag/);
    expect(() => new BullMQQueue({ connection, name: uniqueName(), prefix: '{bull}', waitForReplicas: -1 })).toThrow(
      /waitForReplicas must be a whole number of at least 0/,
    );
  });

  it('202, one run per event, a duplicate adds no job, dead letters listed and retried', {
    timeout: 120_000,
  }, async () => {
    const name = uniqueName('cluster');
    const options = {
      connection,
      name,
      prefix: '{bull}',
      attempts: 2,
      backoff: { type: 'fixed' as const, delayMs: 20 },
    };
    let failing = true;
    const receiver = queuedWebhooks(options);
    const worker = queuedWebhooks(options, (event) => {
      if (event.type === 'image.deleted' && failing) throw new Error('deleted fails');
    });
    const app: Client = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(receiver.webhooks);
    const started = worker.queue.startWorker(worker.webhooks, { concurrency: 4 });
    try {
      // Every BullMQ key of the queue is in the {bull} slot, on one master.
      const home = await cluster.masterOf('{bull}');
      const requests = Array.from({ length: 10 }, () => signed());
      for (const request of requests) {
        const answer = await app.send(request);
        expect([answer.status, answer.json]).toEqual([202, { received: true, queued: true }]);
      }
      await until(() => worker.runs.length === requests.length, 'every job run', 30_000);
      expect(new Set(worker.runs.map((run) => run.eventId))).toEqual(new Set(requests.map((r) => r.event.id)));

      // A duplicate delivery (the service's retry) answers 202 and adds no job.
      const again = await app.send(requests[0]!);
      expect(again.status).toBe(202);
      const jobKeys = (await cluster.command(home, 'KEYS', `{bull}:${name}:evt_*`)) as string[];
      expect(jobKeys.filter((key) => /:evt_[^:]*$/.test(key))).toHaveLength(requests.length);
      await until(async () => (await receiver.queue.bullQueue.getCompletedCount()) === requests.length, 'completed');
      expect(worker.runs).toHaveLength(requests.length);

      // A failing event becomes a dead letter after its attempts; listed, then retried, it runs once more.
      const failed = signed(createDeleted());
      expect((await app.send(failed)).status).toBe(202);
      await until(async () => (await receiver.queue.countDeadLetters()) === 1, 'the dead letter', 30_000);
      const [letter] = await receiver.queue.listDeadLetters();
      expect(letter?.jobId).toBe(failed.event.id);
      expect(letter?.attemptsMade).toBe(2);
      failing = false;
      expect(await receiver.queue.retryDeadLetter(failed.event.id)).toBe(true);
      await until(
        () => worker.runs.filter((run) => run.eventId === failed.event.id).length === 3,
        'the retried dead letter',
        30_000,
      );
      await until(async () => (await receiver.queue.countDeadLetters()) === 0, 'no dead letter');
    } finally {
      await app.close();
      await started.close();
      await worker.queue.close();
      await receiver.queue.close();
    }
  });
});

describeWithRedisCluster('waitForReplicas on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let connection: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    connection = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: null } });
    connection.on('error', () => {});
    await connection.ping();
  });
  afterAll(async () => {
    connection?.disconnect();
    await cluster?.close();
  });

  it("a 202 waits for a replica: with the replica of the queue's master frozen, 503; once it is back, 202 and one run", {
    timeout: 120_000,
  }, async () => {
    const options = { connection, name: uniqueName('replicas'), prefix: '{bull}', enqueueTimeoutMs: 1_000 };
    const receiver = queuedWebhooks(options);
    const unconfirmed = queuedWebhooks({ ...options, waitForReplicas: 0 });
    const worker = queuedWebhooks(options);
    const app = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(receiver.webhooks);
    const eager = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(unconfirmed.webhooks);
    const [replica] = await cluster.replicasOf(await cluster.masterOf('{bull}'));
    const node = cluster.nodes.find((one) => one.port === replica)!;
    const request = signed();
    const other = signed();
    node.pause();
    try {
      const answer = await app.send(request);
      expect([answer.status, (answer.json as { error?: { code?: string } }).error?.code]).toEqual([
        503,
        'QUEUE_UNAVAILABLE',
      ]);
      expect(receiver.errors.map(({ error }) => (error.cause as Error | undefined)?.message).join('\n')).toMatch(
        /0 of 1 Redis replicas confirmed/,
      );
      // waitForReplicas: 0 answers once the master has it.
      expect((await eager.send(other)).status).toBe(202);
    } finally {
      node.resume();
    }
    const started = worker.queue.startWorker(worker.webhooks, { concurrency: 2 });
    try {
      // The service delivers it again: the job written before the 503 is there, confirmed now.
      await until(async () => (await app.send(request)).status === 202, 'a 202 once the replica is back', 30_000);
      await until(() => worker.runs.length === 2, 'both events run', 30_000);
      expect(worker.runs.map((run) => run.eventId).sort()).toEqual([request.event.id, other.event.id].sort());
    } finally {
      await app.close();
      await eager.close();
      await started.close();
      await Promise.all([receiver.queue, unconfirmed.queue, worker.queue].map((queue) => queue.close()));
    }
  });
});

function createDeleted(): AnyEvent {
  return createTestEvent('image.deleted') as AnyEvent;
}
