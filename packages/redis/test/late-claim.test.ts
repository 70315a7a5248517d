/**
 * A claim that lands after its own release. The request gave up on the claim (503) and the store
 * released it; but the client still held the claim and sent it afterwards, as an ioredis Cluster
 * does with a command it retries on another node during a failover (seen in
 * test/slow/cluster-failover.test.ts: events answered 409 until inFlightTtlMs). The late claim must
 * take nothing: the next delivery runs the event at once, and events abandoned so leave the key to
 * any other claim, completion or release as if it were free.
 */
import { RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniquePrefix } from './helpers/clients.js';

const newId = () => `evt_late_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** An ioredis client whose next claims are held back until `release()` sends them, as a client retrying them late. */
function holdingClaims(redis: Redis) {
  const held: (() => Promise<unknown>)[] = [];
  let holding = 0;
  const client = {
    get status() {
      return redis.status;
    },
    call(command: string, ...args: string[]): Promise<unknown> {
      if (holding > 0 && command === 'EVAL' && args[0]?.includes("'NX'")) {
        holding -= 1;
        return new Promise((resolve, reject) => {
          held.push(() =>
            redis.call(command, ...args).then(
              (reply) => {
                resolve(reply);
                return reply;
              },
              (error: unknown) => {
                reject(error);
                return error;
              },
            ),
          );
        });
      }
      return redis.call(command, ...args);
    },
  };
  return {
    client,
    hold: (count: number) => {
      holding = count;
    },
    /** Sends every claim held back and resolves with their replies. */
    sendHeld: () => Promise.all(held.splice(0).map((send) => send())),
  };
}

describeWithRedis('a claim that lands after its release', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.port, '127.0.0.1');
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  it('takes nothing: the next delivery claims the event at once', async () => {
    const prefix = uniquePrefix('late');
    const { client, hold, sendHeld } = holdingClaims(redis);
    const store = new RedisStore(client, { prefix, timeoutMs: 100, inFlightTtlMs: 60_000 });
    const id = newId();
    hold(2);
    await expect(store.claim(id, 'token-a')).rejects.toThrow(/did not answer claim/);
    await expect(store.claim(id, 'token-b')).rejects.toThrow(/did not answer claim/);
    // Both abandoned (the releases of the claims that failed landed), before the claims themselves.
    await until(async () => (await redis.get(prefix + id)) === 'abandoned:token-a token-b', 'the releases');
    expect(await sendHeld()).toEqual(['abandoned', 'abandoned']);
    // The service's next delivery runs the event: no 409 for inFlightTtlMs.
    expect(await store.claim(id, 'token-c')).toBe('claimed');
    expect(await redis.get(prefix + id)).toBe('token-c');
    await store.complete(id, 'token-c');
    expect(await store.claim(id, 'token-d')).toBe('completed');
  });

  it('a key holding abandoned claims is free to complete and to release', async () => {
    const prefix = uniquePrefix('late');
    const { client, hold } = holdingClaims(redis);
    const store = new RedisStore(client, { prefix, timeoutMs: 100 });
    const [completed, released] = [newId(), newId()];
    hold(2);
    await expect(store.claim(completed, 'token-a')).rejects.toThrow(/did not answer claim/);
    await expect(store.claim(released, 'token-a')).rejects.toThrow(/did not answer claim/);
    await until(async () => (await redis.exists(prefix + completed, prefix + released)) === 2, 'the releases');
    // A run whose claim expired meanwhile completes the event all the same.
    await store.complete(completed, 'token-x');
    expect(await redis.get(prefix + completed)).toBe('completed');
    // Another delivery's release does not touch it; the abandoned claims expire with the in-flight TTL.
    await store.release(released, 'token-y');
    expect(await redis.get(prefix + released)).toBe('abandoned:token-a');
    expect(await redis.pttl(prefix + released)).toBeGreaterThan(0);
  });
});
