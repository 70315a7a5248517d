/** RedisStore's own behaviour: options, keys and TTLs, claim tokens, an older core without them, and a failing Redis. */
import { DEFAULT_COMPLETED_TTL_MS, type IdempotencyStore, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis as IoRedis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENTS, type TestClient, uniquePrefix } from './helpers/clients.js';

const SECRET = 'whsec_redis_store_7a6b5c';
/** The service's whole retry schedule: 1 min + 5 min + 30 min + 2 h + 6 h + 24 h. */
const RETRY_SCHEDULE_MS = (1 + 5 + 30 + 120 + 360 + 1440) * 60 * 1000;

const newId = () => `evt_redis_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
const newToken = () => `redis-test-${globalThis.crypto.randomUUID()}:1`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check()` is true, polling; throws with `what` after `ms` (room for a busy machine). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

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

  it.each([
    ['a plain object', {}, 'a plain object'],
    ['a Map', new Map(), 'an instance of Map'],
    ['an object without a prototype', Object.create(null), 'a plain object'],
    ['a number', 6379, 'the number 6379'],
  ])('names %s given as the client in words (never "a Object")', (_name, client, words) => {
    expect(() => new RedisStore(client as never)).toThrow(`; got ${words}.`);
  });

  it.each([
    [{ prefx: 'app:' }, /no option "prefx"\. Did you mean "prefix"\?/],
    [{ inflightTtlMs: 60_000 }, /no option "inflightTtlMs"\. Did you mean "inFlightTtlMs"\?/],
    [{ completedTTLMs: 60_000 }, /no option "completedTTLMs"\. Did you mean "completedTtlMs"\?/],
    [{ ttl: 60_000 }, /no option "ttl"/],
    [{ timeout: 500 }, /no option "timeout"\. Did you mean "timeoutMs"\?/],
  ])('refuses the unknown option %o when built, naming the right one (issue 24)', (options, message) => {
    expect(() => new RedisStore(io, options as never)).toThrow(message);
    expect(() => new RedisStore(io, options as never)).toThrow(
      /^pixhook: RedisStore: new RedisStore\(client, options\) has no option/,
    );
  });

  it('does not echo a string option that may be a secret put in the wrong place', () => {
    expect(() => new RedisStore(io, { timeoutMs: 'hunter2-password' } as never)).toThrow(
      /got a string of 16 characters/,
    );
    expect(() => new RedisStore(io, { prefix: {} } as never)).toThrow(/prefix must be a string, got an object/);
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

  it("exposes inFlightTtlMs, which paces core's claim renewals", () => {
    expect(new RedisStore(io).inFlightTtlMs).toBe(600_000);
    expect(new RedisStore(node, { inFlightTtlMs: 60_000 }).inFlightTtlMs).toBe(60_000);
  });

  it.each([
    ['an empty token', ''],
    ["the value of a completed key, 'completed'", 'completed'],
    ['a number', 42],
  ])('refuses %s as a claim token, before sending anything', async (_name, token) => {
    // lazyConnect and never connected: a command sent would wait, not fail at once.
    const store = new RedisStore(io);
    await expect(store.claim('evt_1', token as never)).rejects.toThrow(
      /RedisStore: claim tokens are non-empty strings/,
    );
    await expect(store.complete('evt_1', token as never)).rejects.toThrow(/claim tokens/);
    await expect(store.release('evt_1', token as never)).rejects.toThrow(/claim tokens/);
    await expect(store.extend('evt_1', token as never)).rejects.toThrow(/claim tokens/);
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

  it('keeps one key per event, prefix + id, holding the claim token with the in-flight TTL, then completed', async () => {
    const prefix = uniquePrefix('keys');
    const store = new RedisStore(await connect(0), { prefix, inFlightTtlMs: 30_000 });
    const id = newId();
    const token = newToken();
    await store.claim(id, token);
    const claimTtl = await admin.pttl(prefix + id);
    expect(claimTtl).toBeGreaterThan(0);
    expect(claimTtl).toBeLessThanOrEqual(30_000);
    expect(await admin.get(prefix + id)).toBe(token);

    await store.complete(id, token);
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
    const aToken = newToken();
    const bToken = newToken();
    expect(await a.claim(id, aToken)).toBe('claimed');
    expect(await b.claim(id, bToken)).toBe('in-flight');
    expect(await other.claim(id, newToken())).toBe('claimed');
    // b's attempt never held the claim: its release and completion must not touch a's.
    await b.release(id, bToken);
    await expect(b.complete(id, bToken)).rejects.toThrow(/was not marked completed/);
    expect(await b.claim(id, newToken())).toBe('in-flight');
    await a.complete(id, aToken);
    expect(await b.claim(id, newToken())).toBe('completed');
  });

  it("renews only the caller's claim with extend(): PEXPIRE to a full inFlightTtlMs again", async () => {
    const prefix = uniquePrefix('extend');
    const store = new RedisStore(await connect(4), { prefix, inFlightTtlMs: 1_000 });
    const id = newId();
    const token = newToken();
    await store.claim(id, token);
    await sleep(500);
    expect(await admin.pttl(prefix + id)).toBeLessThanOrEqual(500);
    expect(await store.extend(id, token)).toBe(true);
    expect(await admin.pttl(prefix + id)).toBeGreaterThan(800);
    expect(await store.extend(id, newToken())).toBe(false);
    expect(await admin.get(prefix + id)).toBe(token);
    await store.complete(id, token);
    expect(await store.extend(id, token)).toBe(false);
    // A completed key keeps its completed TTL.
    expect(await admin.pttl(prefix + id)).toBeGreaterThan(RETRY_SCHEDULE_MS);
  });

  // An older core calls claim(id), complete(id), release(id): the store makes up a token per claim
  // and keeps it in this instance, keyed by event id, as it did before core passed tokens.
  it('without tokens (an older core): keeps the token it made up for complete(id), release(id) and extend(id)', async () => {
    const prefix = uniquePrefix('untokened');
    const store = new RedisStore(await connect(2), { prefix, inFlightTtlMs: 30_000 });
    const [done, failed] = [newId(), newId()];
    expect(await store.claim(done)).toBe('claimed');
    expect(await admin.get(prefix + done)).toMatch(/^[0-9a-f-]{36}$/);
    expect(await store.extend(done)).toBe(true);
    await store.complete(done);
    expect(await store.claim(done)).toBe('completed');

    expect(await store.claim(failed)).toBe('claimed');
    await store.release(failed);
    expect(await admin.exists(prefix + failed)).toBe(0);
    // Nothing held any more: a second release(id) or extend(id) of this instance does nothing.
    expect(await store.claim(failed, newToken())).toBe('claimed');
    await store.release(failed);
    expect(await store.extend(failed)).toBe(false);
    expect(await store.claim(failed, newToken())).toBe('in-flight');
  });

  it("without tokens (an older core): an instance whose claim expired never releases or completes another instance's claim", async () => {
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
    await until(() => store.pendingCompletions === 0, 'the retried completion to land');
    expect(await admin.get(prefix + id)).toBe('completed');
    expect(await store.claim(id)).toBe('completed');
  });

  it('keeps trying to release a claim when Redis refused the release, until Redis takes it', async () => {
    const prefix = uniquePrefix('unreleased');
    const store = new RedisStore(await connect(0), { prefix });
    const id = newId();
    const token = newToken();
    expect(await store.claim(id, token)).toBe('claimed');
    // Replace the claim by a value the release script cannot read: Redis answers an error.
    await admin.del(prefix + id);
    await admin.hset(prefix + id, 'field', 'value');
    await expect(store.release(id, token)).rejects.toThrow(
      /RedisStore: release\(evt_redis_\w+\) failed: WRONGTYPE.*keeps retrying the release/,
    );
    expect(store.pendingReleases).toBe(1);
    expect(store.pendingCompletions).toBe(0);
    // The claim is back, as after a reconnect: the retry must find and drop it.
    await admin.del(prefix + id);
    await admin.set(prefix + id, token, 'PX', 60_000);
    await until(() => store.pendingReleases === 0, 'the retried release to land');
    expect(await admin.exists(prefix + id)).toBe(0);
    expect(await store.claim(id, newToken())).toBe('claimed');
  });

  it('retries the other pending writes while Redis keeps refusing one of them', async () => {
    const prefix = uniquePrefix('refused');
    const store = new RedisStore(await connect(1), { prefix });
    const [refused, later, released] = [newId(), newId(), newId()];
    const releasedToken = newToken();
    await store.claim(released, releasedToken);
    for (const id of [refused, later, released]) {
      await admin.del(prefix + id);
      await admin.hset(prefix + id, 'field', 'value');
    }
    await expect(store.complete(refused, newToken())).rejects.toThrow(/WRONGTYPE/);
    await expect(store.complete(later, newToken())).rejects.toThrow(/WRONGTYPE/);
    await expect(store.release(released, releasedToken)).rejects.toThrow(/WRONGTYPE/);
    expect([store.pendingCompletions, store.pendingReleases]).toEqual([2, 1]);
    await admin.del(prefix + later, prefix + released);
    await admin.set(prefix + released, releasedToken);
    // The oldest is still refused; the two behind it land all the same.
    await until(
      () => store.pendingCompletions === 1 && store.pendingReleases === 0,
      'the two writes behind the refused one to land',
    );
    expect(await admin.get(prefix + later)).toBe('completed');
    expect(await admin.exists(prefix + released)).toBe(0);
    await admin.del(prefix + refused);
    await until(() => store.pendingCompletions === 0, 'the refused completion to land');
    expect(await admin.get(prefix + refused)).toBe('completed');
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
      await until(async () => (await admin.exists(prefix + id)) === 0, 'the late claim to be released');
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
