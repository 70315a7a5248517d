/**
 * Load and failover on a real Redis Cluster (3 masters, 3 replicas): 2,000 events, 32 at a time,
 * to two app instances (Express, Fastify) with a RedisStore on an ioredis Cluster; a third of the
 * way in, one master is killed (SIGKILL) and its replica promoted. The sender retries every non-2xx
 * answer as the service would, then delivers every event once more (the service's duplicates).
 * Nothing is lost (every event's handler ran), every answer came within the service's 10 s, and
 * the events run twice are counted: only those whose completion the killed master acknowledged
 * without passing it to its replica may run again, on a later delivery.
 */
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisStore } from '@pixhook/redis';
import { ADAPTERS, type Client, type TestRequest } from '@pixhook/test-helpers/adapters';
import { describeWithRedisCluster, type RedisCluster, startRedisCluster } from '@pixhook/test-helpers/redis-cluster';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';

const SECRET = 'whsec_redis_cluster_failover_4d5e6f';
const EVENTS = 2_000;
const CONCURRENCY = 32;
/** The service gives up on an answer after 10 s. */
const DEADLINE_MS = 10_000;
/** The sender's bound: an event not answered 2xx within this is lost. */
const GIVE_UP_MS = 90_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The ioredis Cluster options the README recommends: commands during a failover wait a little and retry, bounded by the store's timeoutMs. */
function clusterClient(startupNodes: { host: string; port: number }[]): Cluster {
  const client = new Cluster(startupNodes, {
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: 2_000,
    redisOptions: { connectTimeout: 2_000 },
  });
  client.on('error', () => {});
  return client;
}

describeWithRedisCluster('RedisStore on a Redis Cluster: load and a master failover', () => {
  let cluster: RedisCluster;
  const clients: Cluster[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster({ nodeTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await cluster?.close();
  });

  it('2,000 events, a master killed mid-run: every event runs, answers within 10 s, duplicates counted', async () => {
    const prefix = `failover-${globalThis.crypto.randomUUID().slice(0, 8)}:`;
    const runs = new Map<string, number>();
    const apps: Client[] = [];
    const heard = new Map<string, number>();
    for (const name of ['express@5', 'fastify@5']) {
      const client = clusterClient(cluster.startupNodes);
      clients.push(client);
      await client.ping();
      const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(client, { prefix }) });
      webhooks.onError((error) => {
        const key = `${error.code}: ${error.message.slice(0, 100)} / ${String((error.cause as Error | undefined)?.message).slice(0, 160)}`;
        heard.set(key, (heard.get(key) ?? 0) + 1);
      });
      webhooks.on('image.created', (event) => void runs.set(event.id, (runs.get(event.id) ?? 0) + 1));
      apps.push(await ADAPTERS.find((adapter) => adapter.name === name)!.create(webhooks));
    }
    const statuses = new Map<number, number>();
    let slowest = 0;
    let answered = 0;

    /** Delivers until a 2xx, as the service retries (quickly here), bounded by GIVE_UP_MS. */
    const deliver = async (request: TestRequest, index: number) => {
      const giveUp = Date.now() + GIVE_UP_MS;
      for (let attempt = 1; ; attempt += 1) {
        const started = performance.now();
        const answer = await apps[(index + attempt) % apps.length]!.send(request);
        slowest = Math.max(slowest, performance.now() - started);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status >= 200 && answer.status < 300) return;
        if (Date.now() > giveUp) {
          throw new Error(
            `an event was not answered 2xx within ${GIVE_UP_MS} ms: last ${answer.status} ${answer.text.slice(0, 200)}; answers so far ${JSON.stringify(Object.fromEntries(statuses))}; onError heard ${JSON.stringify([...heard].slice(-5))}`,
          );
        }
        await sleep(Math.min(50 * attempt, 500));
      }
    };
    const pool = async (requests: TestRequest[], onAnswered: () => void) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < requests.length) {
            const index = next++;
            await deliver(requests[index]!, index);
            onAnswered();
          }
        }),
      );
    };

    const events = Array.from({ length: EVENTS }, () => createTestEvent('image.created'));
    const requests = events.map((event) => ({ method: 'POST', ...createSignedRequest(event, { secret: SECRET }) }));
    // The master killed: the one whose slots hold the first event's key.
    const victim = await cluster.masterOf(prefix + events[0]!.id);
    let failover: Promise<{ port: number; ms: number }> | undefined;
    const started = performance.now();
    try {
      await pool(requests, () => {
        answered += 1;
        if (answered === Math.floor(EVENTS / 3)) failover = cluster.failover(victim);
      });
      const promoted = await failover!;
      const loadMs = performance.now() - started;
      const afterFirst = Object.fromEntries(statuses);
      // The service's duplicates: every event once more, once the cluster is whole again.
      await pool(requests, () => {});

      const never = events.filter((event) => !runs.has(event.id));
      const twice = events.filter((event) => (runs.get(event.id) ?? 0) > 1);
      console.info(
        `[cluster failover] ${EVENTS} events in ${Math.round(loadMs)} ms, master ${victim} killed after ${Math.floor(EVENTS / 3)} answers, replica ${promoted.port} promoted after ${promoted.ms} ms; answers ${JSON.stringify(afterFirst)} then ${JSON.stringify(Object.fromEntries(statuses))} with the duplicates; slowest answer ${Math.round(slowest)} ms; ${never.length} never run, ${twice.length} run twice`,
      );
      expect(never).toEqual([]);
      expect(slowest).toBeLessThan(DEADLINE_MS);
      // Every status is 200, 409 (in flight elsewhere) or 503 (the store unreachable): never a 500.
      expect([...statuses.keys()].filter((status) => ![200, 409, 503].includes(status))).toEqual([]);
      expect(afterFirst[503] ?? 0).toBeGreaterThan(0);
      // Runs twice only for completions acknowledged and lost with the killed master: events whose
      // keys are in its slots (now the promoted replica's), never an event of another master. How
      // many depends on the replication lag at the kill (0 in most runs; on a loaded CI machine,
      // once, every completion of the run on that master: the README gives both).
      const elsewhere: string[] = [];
      for (const event of twice) {
        if ((await cluster.masterOf(prefix + event.id)) !== promoted.port) elsewhere.push(event.id);
      }
      expect(elsewhere).toEqual([]);
    } finally {
      for (const app of apps) await app.close();
    }
  });
});
