/** RedisStore's own behaviour: options, keys and TTLs, tokens across instances, and a failing Redis. */
import { DEFAULT_COMPLETED_TTL_MS, type IdempotencyStore, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { Redis as IoRedis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../src/index.js';
import { CLIENTS, type TestClient, uniquePrefix } from './helpers/clients.js';
import { describeWithRedis, type RedisServer, startRedisServer } from './helpers/redis-server.js';

const SECRET = 'whsec_redis_store_7a6b5c';
/** The service's whole retry schedule: 1 min + 5 min + 30 min + 2 h + 6 h + 24 h. */
const RETRY_SCHEDULE_MS = (1 + 5 + 30 + 120 + 360 + 1440) * 60 * 1000;

const newId = () => `evt_redis_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Webhooks on `store` whose handler records each run, and a function to deliver an event to it. */
function receiver(store: IdempotencyStore) {
  const runs: string[] = [];
  const errors: string[] = [];
  const webhooks = new Webhooks({ secret: SECRET, store });
  webhooks.on('image.created', (event) => {
    runs.push(event.id);
  });
  webhooks.onError((error) => {
    errors.push((error as { code?: string }).code ?? 'unknown');
  });
  const deliver = (id: string) => {
    const { body, headers } = createSignedRequest(createTestEvent('image.created', undefined, { id }), {
      secret: SECRET,
    });
    return webhooks.handle({ method: 'POST', headers, body });
  };
  return { runs, errors, deliver };
}

describe('new RedisStore(client, options)', () => {
  const io = new IoRedis({ lazyConnect: true });
  const node = createClient();

  it('tells an ioredis client from a node-redis one', () => {
    expect(new RedisStore(io).clientKind).toBe('ioredis');
    expect(new RedisStore(node).clientKind).toBe('node-redis');
  });

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a URL string', 'redis://127.0.0.1:6379'],
    ['a plain object', {}],
    ['an object with a get method only', { get: async () => null }],
  ])('refuses %s as the client', (_name, client) => {
    expect(() => new RedisStore(client as never)).toThrow(/ioredis client .* or a node-redis client/);
  });

  it('refuses a node-redis cluster client, whose sendCommand takes other arguments', () => {
    const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:6379' }] });
    expect(() => new RedisStore(cluster as never)).toThrow(/cluster clients \(createCluster\) are not supported/);
  });

  it.each([
    [{ inFlightTtlMs: 0 }, /inFlightTtlMs must be a positive whole number/],
    [{ inFlightTtlMs: -5 }, /inFlightTtlMs/],
    [{ completedTtlMs: 1.5 }, /completedTtlMs must be a positive whole number/],
    [{ completedTtlMs: Number.NaN }, /completedTtlMs/],
    [{ timeoutMs: '2000' }, /timeoutMs must be a positive whole number/],
    [{ timeoutMs: 10_000 }, /timeoutMs must be at most 9000/],
    [{ prefix: 42 }, /prefix must be a string/],
  ])('refuses the options %o when built', (options, message) => {
    expect(() => new RedisStore(io, options as never)).toThrow(message);
  });

  it('accepts every option in range', () => {
    expect(
      () => new RedisStore(node, { prefix: '', inFlightTtlMs: 1, completedTtlMs: 1, timeoutMs: 9_000 }),
    ).not.toThrow();
  });
});

describeWithRedis('RedisStore on a real redis-server', () => {
  let server: RedisServer;
  let admin: IoRedis;
  const connections: TestClient[] = [];
  const connect = async (index: number) => {
    const connection = await CLIENTS[index]!.connect(server.port);
    connections.push(connection);
    return connection.client;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new IoRedis(server.port, '127.0.0.1');
  });
  afterAll(async () => {
    for (const connection of connections) await connection.close();
    admin?.disconnect();
    await server?.close();
  });

  it('keeps one key per event, prefix + id, with the in-flight and then the completed TTL', async () => {
    const prefix = uniquePrefix('keys');
    const store = new RedisStore(await connect(0), { prefix, inFlightTtlMs: 30_000 });
    const id = newId();
    await store.claim(id);
    const claimTtl = await admin.pttl(prefix + id);
    expect(claimTtl).toBeGreaterThan(0);
    expect(claimTtl).toBeLessThanOrEqual(30_000);
    expect(await admin.get(prefix + id)).not.toBe('completed');

    await store.complete(id);
    expect(await admin.get(prefix + id)).toBe('completed');
    const completedTtl = await admin.pttl(prefix + id);
    // The default outlives the whole retry schedule, so no retry of a processed event runs it again.
    expect(completedTtl).toBeGreaterThan(RETRY_SCHEDULE_MS);
    expect(completedTtl).toBeLessThanOrEqual(DEFAULT_COMPLETED_TTL_MS);
    expect(await admin.keys(`${prefix}*`)).toEqual([prefix + id]);
  });

  it('shares claims between instances with the same prefix, across client libraries', async () => {
    const prefix = uniquePrefix('shared');
    const a = new RedisStore(await connect(0), { prefix });
    const b = new RedisStore(await connect(3), { prefix });
    const other = new RedisStore(await connect(3), { prefix: uniquePrefix('other') });
    const id = newId();
    expect(await a.claim(id)).toBe('claimed');
    expect(await b.claim(id)).toBe('in-flight');
    expect(await other.claim(id)).toBe('claimed');
    // b never held the claim: its release must not free a's.
    await b.release(id);
    expect(await b.claim(id)).toBe('in-flight');
    await a.complete(id);
    expect(await b.claim(id)).toBe('completed');
  });

  it("never lets an instance whose claim expired release or complete another instance's claim", async () => {
    const prefix = uniquePrefix('expired');
    const slow = new RedisStore(await connect(1), { prefix, inFlightTtlMs: 100 });
    const next = new RedisStore(await connect(4), { prefix });
    const observer = new RedisStore(await connect(2), { prefix });
    const id = newId();
    expect(await slow.claim(id)).toBe('claimed');
    await sleep(250);
    expect(await next.claim(id)).toBe('claimed');

    await slow.release(id);
    expect(await observer.claim(id)).toBe('in-flight');
    expect(await slow.claim(id)).toBe('in-flight');

    const late = new RedisStore(await connect(0), { prefix, inFlightTtlMs: 100 });
    const other = newId();
    expect(await late.claim(other)).toBe('claimed');
    await sleep(250);
    expect(await next.claim(other)).toBe('claimed');
    await expect(late.complete(other)).rejects.toThrow(/claim expired .* Raise inFlightTtlMs/);
    expect(await observer.claim(other)).toBe('in-flight');
    await next.complete(other);
    expect(await observer.claim(other)).toBe('completed');
  });

  it('marks the event completed when its claim expired but nobody claimed it since', async () => {
    const prefix = uniquePrefix('expired-free');
    const store = new RedisStore(await connect(2), { prefix, inFlightTtlMs: 100 });
    const id = newId();
    expect(await store.claim(id)).toBe('claimed');
    await sleep(250);
    await store.complete(id);
    expect(await store.claim(id)).toBe('completed');
  });

  it('answers 503 STORE_UNAVAILABLE and runs no handler when Redis answers an error', async () => {
    const prefix = uniquePrefix('wrongtype');
    const id = newId();
    await admin.hset(prefix + id, 'field', 'value');
    for (const index of [0, 3]) {
      const { runs, errors, deliver } = receiver(new RedisStore(await connect(index), { prefix }));
      const answer = await deliver(id);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
      expect(runs).toEqual([]);
      expect(errors).toEqual(['STORE_UNAVAILABLE']);
    }
  });

  it('keeps trying to record a completion that Redis refused, until Redis takes it', async () => {
    const prefix = uniquePrefix('unwritten');
    const store = new RedisStore(await connect(3), { prefix });
    const id = newId();
    expect(await store.claim(id)).toBe('claimed');
    // Replace the claim by a value the completion script cannot read: Redis answers an error.
    await admin.del(prefix + id);
    await admin.hset(prefix + id, 'field', 'value');
    await expect(store.complete(id)).rejects.toThrow(/RedisStore: complete\(evt_redis_\w+\) failed: WRONGTYPE/);
    expect(store.pendingCompletions).toBe(1);
    await admin.del(prefix + id);
    await sleep(1_000);
    expect(store.pendingCompletions).toBe(0);
    expect(await admin.get(prefix + id)).toBe('completed');
    expect(await store.claim(id)).toBe('completed');
  });

  for (const index of [0, 3]) {
    const name = CLIENTS[index]!.name;
    it(`gives up on a Redis that does not answer (${name}): 503 after timeoutMs, no handler, no claim left behind`, async () => {
      const prefix = uniquePrefix(`paused-${name}`);
      const store = new RedisStore(await connect(index), { prefix, timeoutMs: 200 });
      const { runs, deliver } = receiver(store);
      const id = newId();
      // A paused server reads commands but does not run them: the client waits, as on a dead link.
      await admin.call('CLIENT', 'PAUSE', '1000', 'ALL');
      const answer = await deliver(id);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
      expect(runs).toEqual([]);
      // Once Redis runs the late claim, the release queued behind it frees the event at once.
      await sleep(1_200);
      expect(await admin.exists(prefix + id)).toBe(0);
      expect((await deliver(id)).status).toBe(200);
      expect(runs).toEqual([id]);
    });
  }

  it('answers 503 well within the 10 s deadline when Redis cannot be reached at all', async () => {
    // An ioredis client that queues commands forever while it reconnects (a common setting):
    // without the store's timeout this request would never be answered.
    const closedPort = server.port === 1 ? 2 : 1;
    const offline = new IoRedis(closedPort, '127.0.0.1', { maxRetriesPerRequest: null });
    offline.on('error', () => {});
    const neverConnected = createClient({ socket: { host: '127.0.0.1', port: closedPort } });
    try {
      for (const client of [offline, neverConnected]) {
        const { runs, deliver } = receiver(new RedisStore(client, { timeoutMs: 300 }));
        const started = performance.now();
        const answer = await deliver(newId());
        expect(answer.status).toBe(503);
        expect(performance.now() - started).toBeLessThan(10_000);
        expect(runs).toEqual([]);
      }
    } finally {
      offline.disconnect();
    }
  });
});
