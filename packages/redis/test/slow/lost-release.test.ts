/**
 * Issue 14, item 11: Redis runs a claim but its reply is lost (the connection drops), then stays
 * down for longer than 10 s. The request answers 503 and the store queues the release of that
 * claim; ioredis on its default settings flushes its offline queue with an error after about 10 s
 * of reconnecting (maxRetriesPerRequest: 20), and node-redis with `disableOfflineQueue` refuses
 * commands at once while disconnected (ioredis 6 flushes too, after ~76 s by default). Either way the release must still land once Redis is back,
 * so the next delivery runs the event instead of answering 409 for `inFlightTtlMs`.
 *
 * Each client reaches Redis through a proxy that drops the claim's reply and cuts the connection;
 * then the real redis-server is killed and restarted (persistent, so the claim survives it).
 */
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { type RedisClientLike, RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis as IoRedis5 } from 'ioredis';
import { Redis as IoRedis6 } from 'ioredis6';
import { createClient as createClient5 } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { createClient as createClient6 } from 'redis6';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/clients.js';
import { type ReplyCutter, startReplyCutter } from '../helpers/reply-cutter.js';

const SECRET = 'whsec_redis_lost_release_1b2c3d';
/** Longer than ioredis's default give-up on queued commands (20 reconnection attempts, ~10.5 s). */
const OUTAGE_MS = 14_000;
/** Far longer than the test: a claim left behind would answer 409 to the last delivery. */
const IN_FLIGHT_TTL_MS = 120_000;
/** The store's bound on each command: room for a busy machine and a Redis that fsyncs every write. */
const TIMEOUT_MS = 3_000;
/** How long the clients may take to reconnect and land their releases once Redis is back. */
const RECOVERY_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Client {
  name: string;
  connect(port: number): Promise<{ client: RedisClientLike; close(): void }>;
}

function ioredis(
  name: string,
  Redis: typeof IoRedis5,
  options: { retryStrategy?: (times: number) => number } = {},
): Client {
  return {
    name,
    connect: async (port) => {
      // maxRetriesPerRequest 20 (the default): queued commands fail after 20 reconnection attempts.
      const client = new Redis(port, '127.0.0.1', options);
      client.on('error', () => {});
      await client.ping();
      return { client, close: () => client.disconnect() };
    },
  };
}

function nodeRedis(name: string, createClient: typeof createClient5, disableOfflineQueue: boolean): Client {
  return {
    name,
    connect: async (port) => {
      const client = createClient({ socket: { host: '127.0.0.1', port }, disableOfflineQueue });
      client.on('error', () => {});
      await client.connect();
      const closable = client as unknown as { destroy?: () => void; disconnect?: () => Promise<void> };
      return {
        client: client as unknown as RedisClientLike,
        close: () => {
          if (typeof closable.destroy === 'function') closable.destroy();
          else void closable.disconnect?.().catch(() => {});
        },
      };
    },
  };
}

const CLIENTS: Client[] = [
  ioredis('ioredis@5 (defaults)', IoRedis5),
  // ioredis 6 backs off up to 5 s, so by default its 20 attempts take ~76 s: with ioredis 5's
  // schedule, the same flush comes after ~10.5 s.
  ioredis('ioredis@6 (retryStrategy of ioredis 5)', IoRedis6 as unknown as typeof IoRedis5, {
    retryStrategy: (times) => Math.min(times * 50, 2_000),
  }),
  nodeRedis('redis@4 (disableOfflineQueue)', createClient4 as unknown as typeof createClient5, true),
  nodeRedis('redis@5 (disableOfflineQueue)', createClient5, true),
  nodeRedis('redis@6 (disableOfflineQueue)', createClient6 as unknown as typeof createClient5, true),
  nodeRedis('redis@5 (defaults)', createClient5, false),
];

interface Receiver {
  name: string;
  cutter: ReplyCutter;
  store: RedisStore;
  runs: string[];
  errors: string[];
  deliver(id: string): Promise<{ status: number; body: string }>;
  close(): void;
}

describeWithRedis('a claim whose reply was lost, then Redis down for longer than 10 s', () => {
  let server: RedisServer;
  const receivers: Receiver[] = [];
  const prefix = uniquePrefix('lost-release');

  beforeAll(async () => {
    // Persistent (appendfsync always), as production should run it: the claim survives the restart.
    server = await startRedisServer({ persistent: true });
    for (const { name, connect } of CLIENTS) {
      const cutter = await startReplyCutter(server.port);
      const { client, close } = await connect(cutter.port);
      const store = new RedisStore(client, { prefix, inFlightTtlMs: IN_FLIGHT_TTL_MS, timeoutMs: TIMEOUT_MS });
      const webhooks = new Webhooks({ secret: SECRET, store });
      const runs: string[] = [];
      const errors: string[] = [];
      webhooks.on('image.created', (event) => {
        runs.push(event.id);
      });
      webhooks.onError((error) => {
        errors.push(error.code);
      });
      const deliver = (id: string) => {
        const event = createTestEvent('image.created', undefined, { id });
        const { body, headers } = createSignedRequest(event, { secret: SECRET });
        return webhooks.handle({ method: 'POST', headers, body });
      };
      receivers.push({ name, cutter, store, runs, errors, deliver, close });
    }
  });
  afterAll(async () => {
    for (const receiver of receivers) {
      receiver.close();
      await receiver.cutter.close();
    }
    await server?.close();
  });

  it('releases the claim once Redis is back, so the next delivery runs the event instead of answering 409', async () => {
    const started = performance.now();
    const admin = new IoRedis5(server.port, '127.0.0.1');
    admin.on('error', () => {});
    try {
      const ids = receivers.map(() => `evt_lost_${globalThis.crypto.randomUUID().replaceAll('-', '')}`);
      const cuts = receivers.map((receiver) => receiver.cutter.cutNextReply());
      const firsts = receivers.map((receiver, index) => receiver.deliver(ids[index]!));
      await Promise.all(cuts);
      // Redis ran every claim: each key holds the token of a claim nobody will run.
      for (const id of ids) expect(await admin.exists(prefix + id), id).toBe(1);
      admin.disconnect();
      await server.stop('SIGKILL');
      const downAt = performance.now();

      const answers = await Promise.all(firsts);
      expect(answers.map((answer) => answer.status)).toEqual(receivers.map(() => 503));
      expect(answers.map((answer) => JSON.parse(answer.body).error.code)).toEqual(
        receivers.map(() => 'STORE_UNAVAILABLE'),
      );
      expect(receivers.flatMap((receiver) => receiver.runs)).toEqual([]);

      await sleep(OUTAGE_MS - (performance.now() - downAt));
      // Every release is still waiting to be retried: the clients gave up on it or still hold it.
      expect(receivers.map((receiver) => [receiver.name, receiver.store.pendingReleases])).toEqual(
        receivers.map((receiver) => [receiver.name, 1]),
      );
      await server.start();
      for (const receiver of receivers) await receiver.cutter.restore();

      // Once the clients have reconnected, the retried releases land and free the events. Waited for
      // on both sides: Redis has run the release (the key is gone) and the client has read its reply
      // (the store no longer counts it), which comes a moment later, through the proxy.
      admin.connect().catch(() => {});
      const freeBy = performance.now() + RECOVERY_MS;
      let held = ids;
      while (performance.now() < freeBy) {
        const exists = await Promise.all(ids.map((id) => admin.exists(prefix + id)));
        held = ids.filter((_, index) => exists[index] === 1);
        if (held.length === 0 && receivers.every((receiver) => receiver.store.pendingReleases === 0)) break;
        await sleep(200);
      }
      const name = (id: string) => receivers[ids.indexOf(id)]!.name;
      expect(held.map(name), 'claims still held after Redis came back').toEqual([]);
      expect(receivers.map((receiver) => [receiver.name, receiver.store.pendingReleases])).toEqual(
        receivers.map((receiver) => [receiver.name, 0]),
      );

      const seconds = await Promise.all(receivers.map((receiver, index) => receiver.deliver(ids[index]!)));
      expect(receivers.map((receiver, index) => [receiver.name, seconds[index]!.status])).toEqual(
        receivers.map((receiver) => [receiver.name, 200]),
      );
      expect(receivers.map((receiver, index) => receiver.runs.length === 1 && receiver.runs[0] === ids[index])).toEqual(
        receivers.map(() => true),
      );
      for (const receiver of receivers) expect(receiver.errors, receiver.name).toEqual(['STORE_UNAVAILABLE']);
      console.info(
        `[lost-release] ${receivers.length} clients, Redis down ${(OUTAGE_MS / 1000).toFixed(0)} s; test took ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    } finally {
      admin.disconnect();
    }
  });
});
