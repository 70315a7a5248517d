/**
 * The ordering guard's marks and named handlers' records on a real redis-server, with every client
 * library: `RedisStore.advance` (one Lua script: the mark `<prefix>order:<key>`, kept for
 * `completedTtlMs`) compared as core's rule, atomic under concurrent calls from several
 * connections; end to end, a late older event is acknowledged and skipped, also when another
 * instance sharing the Redis saw the newer one; a named handler that fails is retried alone, its
 * record being the store's ordinary claim on `<event key>#<id>`.
 */

import { type AnyEvent, eventKey, isCurrent, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENTS, type TestClient, uniquePrefix } from './helpers/clients.js';

const SECRET = 'whsec_redis_ordering_5e6f';
const BY_IMAGE = { key: (event: { data: { object: Record<string, unknown> } }) => `image:${event.data.object.id}` };

/** Core's rule, the tests' reference: `a` is at least as new as `b`. */
const atLeast = (a: { version: number; id: string }, b: { version: number; id: string }) =>
  isCurrent(a.version, a.id, b.version, b.id);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Now, in the service's seconds: a failed delivery of an event this young is not its last attempt. */
const NOW = () => Math.floor(Date.now() / 1000);

function event(image: string, created: number, id?: string) {
  return createTestEvent('image.created', { id: image }, { created, ...(id === undefined ? {} : { id }) }) as AnyEvent;
}

async function send(webhooks: Webhooks, sent: AnyEvent) {
  const { status, body } = await webhooks.handle({ method: 'POST', ...createSignedRequest(sent, { secret: SECRET }) });
  return { status, body: JSON.parse(body) as unknown };
}

describeWithRedis('the ordering guard and named handlers on RedisStore', () => {
  let server: RedisServer;
  let inspect: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    inspect = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    inspect?.disconnect();
    await server?.close();
  });

  for (const under of CLIENTS) {
    describe(`with ${under.name}`, () => {
      let connection: TestClient;
      beforeAll(async () => {
        connection = await under.connect(server.port);
      });
      afterAll(async () => {
        await connection?.close();
      });

      it('advance(): current on a new key, stale for an older version, current again for the same event, ties by event id', async () => {
        const prefix = uniquePrefix('order');
        const store = new RedisStore(connection.client, { prefix });
        expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('current');
        expect(await inspect.get(`${prefix}order:image:img_1`)).toBe('1000 evt_m');
        expect(await store.advance('image:img_1', 999, 'evt_z')).toBe('stale');
        // The same event again (a retry): current, the mark unchanged.
        expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('current');
        // Equal versions: the greater event id wins, compared byte by byte ('Z' < 'a' < 'b').
        expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('stale');
        expect(await store.advance('image:img_1', 1_000, 'evt_Z')).toBe('stale');
        expect(await store.advance('image:img_1', 1_000, 'evt_mm')).toBe('current');
        expect(await store.advance('image:img_1', 1_000, 'evt_m')).toBe('stale');
        expect(await store.advance('image:img_1', 1_001, 'evt_a')).toBe('current');
        expect(await inspect.get(`${prefix}order:image:img_1`)).toBe('1001 evt_a');
        // Another key is independent; the mark keeps completedTtlMs (48 h by default).
        expect(await store.advance('image:img_2', 5, 'evt_a')).toBe('current');
        const ttl = await inspect.pttl(`${prefix}order:image:img_1`);
        expect(ttl).toBeGreaterThan(47 * 60 * 60 * 1000);
        expect(ttl).toBeLessThanOrEqual(48 * 60 * 60 * 1000);
        // Marks and events never share a key.
        expect((await inspect.keys(`${prefix}*`)).sort()).toEqual([
          `${prefix}order:image:img_1`,
          `${prefix}order:image:img_2`,
        ]);
      });

      it('advance(): versions compare as numbers at full precision (fractions, 2^53, negatives, exponents)', async () => {
        const store = new RedisStore(connection.client, { prefix: uniquePrefix('order') });
        const pairs: [number, number][] = [
          [9, 10],
          [0.1 + 0.2, 0.30000000000000004 + Number.EPSILON],
          [0.3, 0.1 + 0.2],
          [2 ** 53, 2 ** 53 + 2],
          [-5, -4.5],
          [1e21, 1.0000000000000001e21 * 1.0000000001],
          [5e-324, 1e-323],
          [-1e-7, 0],
        ];
        for (const [index, [older, newer]] of pairs.entries()) {
          expect(older < newer).toBe(true);
          const key = `k${index}`;
          expect(await store.advance(key, newer, 'evt_a')).toBe('current');
          expect(await store.advance(key, older, 'evt_z')).toBe('stale');
          expect(await store.advance(key, newer, 'evt_a')).toBe('current');
        }
      });

      it('advance(): an expired mark lets an older event in again, after completedTtlMs', async () => {
        const prefix = uniquePrefix('order');
        const store = new RedisStore(connection.client, { prefix, completedTtlMs: 300 });
        expect(await store.advance('image:img_1', 2_000, 'evt_b')).toBe('current');
        expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('stale');
        const deadline = Date.now() + 15_000;
        while ((await inspect.exists(`${prefix}order:image:img_1`)) === 1) {
          if (Date.now() > deadline) throw new Error('the mark did not expire');
          await sleep(25);
        }
        expect(await store.advance('image:img_1', 1_000, 'evt_a')).toBe('current');
      });

      it('advance(): refuses what is not a key, a finite version or an event id, and sends nothing', async () => {
        const prefix = uniquePrefix('order');
        const store = new RedisStore(connection.client, { prefix });
        await expect(store.advance('', 1, 'evt_a')).rejects.toThrow(/^pixhook: RedisStore: advance\(\)/);
        await expect(store.advance(5 as never, 1, 'evt_a')).rejects.toThrow(TypeError);
        await expect(store.advance('k', Number.NaN, 'evt_a')).rejects.toThrow(/finite number version/);
        await expect(store.advance('k', Number.POSITIVE_INFINITY, 'evt_a')).rejects.toThrow(/finite/);
        await expect(store.advance('k', '5' as never, 'evt_a')).rejects.toThrow(/finite/);
        await expect(store.advance('k', 1, '')).rejects.toThrow(/event id/);
        expect(await inspect.keys(`${prefix}*`)).toEqual([]);
      });

      it('advance(): atomic under concurrent calls from several connections: the greatest ends as the mark', async () => {
        const prefix = uniquePrefix('order');
        const others = await Promise.all([under.connect(server.port), under.connect(server.port)]);
        try {
          const stores = [connection, ...others].map((c) => new RedisStore(c.client, { prefix }));
          for (let round = 0; round < 5; round++) {
            const key = `image:race_${round}`;
            const calls = Array.from({ length: 40 }, (_, i) => ({
              version: Math.floor(Math.random() * 8),
              id: `evt_${String.fromCharCode(97 + Math.floor(Math.random() * 26))}${i}`,
              store: i % stores.length,
            }));
            const answers = await Promise.all(
              calls.map((call) => (stores[call.store] as RedisStore).advance(key, call.version, call.id)),
            );
            const greatest = calls.reduce((best, call) => (atLeast(call, best) ? call : best));
            expect(answers[calls.indexOf(greatest)]).toBe('current');
            expect(await inspect.get(`${prefix}order:${key}`)).toBe(`${greatest.version} ${greatest.id}`);
            // A stale answer means a newer mark was there: a current one, strictly newer.
            const currents = calls.filter((_, i) => answers[i] === 'current');
            for (const [i, call] of calls.entries()) {
              if (answers[i] === 'stale') expect(currents.some((other) => !atLeast(call, other))).toBe(true);
            }
            // One connection's calls run in the order sent: the marks it set never go backwards.
            for (let s = 0; s < stores.length; s++) {
              const mine = calls.filter((call, i) => call.store === s && answers[i] === 'current');
              for (let i = 1; i < mine.length; i++) expect(atLeast(mine[i]!, mine[i - 1]!)).toBe(true);
            }
          }
        } finally {
          for (const other of others) await other.close();
        }
      });

      it('inline: a late older event is acknowledged, its handler skipped, STALE_EVENT told; a second instance agrees', async () => {
        const prefix = uniquePrefix('order');
        const second = await under.connect(server.port);
        try {
          const state = new Map<string, string>();
          const errors: WebhookVerificationError[] = [];
          const instance = (client: TestClient) => {
            const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(client.client, { prefix }) });
            webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => void state.set(String(e.data.object.id), e.id));
            webhooks.onError((error) => void errors.push(error));
            return webhooks;
          };
          const [a, b] = [instance(connection), instance(second)];
          const newer = event('img_1', 2_000);
          const older = event('img_1', 1_000);
          expect(await send(a, newer)).toEqual({ status: 200, body: { received: true } });
          // The other instance, sharing the Redis, gets the older one late.
          expect(await send(b, older)).toEqual({ status: 200, body: { received: true } });
          expect(state.get('img_1')).toBe(newer.id);
          expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
          expect(errors[0]?.message).toContain(`Event ${older.id} (image.created, version 1000)`);
          // The stale event was processed all the same: its redelivery is a duplicate.
          expect(await send(a, older)).toEqual({ status: 200, body: { received: true, duplicate: true } });
          expect(await inspect.get(`${prefix}order:image:img_1`)).toBe(`2000 ${newer.id}`);
          // Ties, across instances: the greater event id stays, whichever instance saw it.
          expect((await send(b, event('img_2', 500, 'evt_b'))).status).toBe(200);
          expect((await send(a, event('img_2', 500, 'evt_a'))).status).toBe(200);
          expect(state.get('img_2')).toBe('evt_b');
        } finally {
          await second.close();
        }
      });

      it('named handlers: a failing one is retried alone; each has its record under <event key>#<id>', async () => {
        const prefix = uniquePrefix('named');
        const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(connection.client, { prefix }) });
        webhooks.onError(() => {});
        const runs = { thumbnails: 0, billing: 0 };
        webhooks.on('image.created', { id: 'thumbnails' }, async () => {
          runs.thumbnails += 1;
        });
        webhooks.on('image.created', { id: 'billing' }, async () => {
          runs.billing += 1;
          if (runs.billing === 1) throw new Error('billing is down');
        });
        const sent = event('img_1', NOW());
        expect((await send(webhooks, sent)).status).toBe(500);
        expect(runs).toEqual({ thumbnails: 1, billing: 1 });
        expect(await inspect.get(`${prefix}${sent.id}#thumbnails`)).toBe('completed');
        expect(await inspect.exists(`${prefix}${sent.id}#billing`)).toBe(0);
        expect(await inspect.exists(`${prefix}${sent.id}`)).toBe(0);
        // The retry runs billing alone.
        expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true } });
        expect(runs).toEqual({ thumbnails: 1, billing: 2 });
        expect(await send(webhooks, sent)).toEqual({ status: 200, body: { received: true, duplicate: true } });
        expect(runs).toEqual({ thumbnails: 1, billing: 2 });
        expect((await inspect.keys(`${prefix}*`)).sort()).toEqual(
          [`${prefix}${sent.id}`, `${prefix}${sent.id}#billing`, `${prefix}${sent.id}#thumbnails`].sort(),
        );
        for (const key of await inspect.keys(`${prefix}*`)) expect(await inspect.get(key)).toBe('completed');
      });
    });
  }

  it('named handlers with a tenant: the records are <tenant>/<event id>#<id>', async () => {
    const connection = await CLIENTS[0]!.connect(server.port);
    try {
      const prefix = uniquePrefix('named');
      const webhooks = new Webhooks({ secret: () => SECRET, store: new RedisStore(connection.client, { prefix }) });
      webhooks.on('image.created', { id: 'thumbnails' }, () => {});
      const sent = event('img_1', NOW());
      const answer = await webhooks.handle({
        method: 'POST',
        ...createSignedRequest(sent, { secret: SECRET }),
        tenant: 'acme',
      });
      expect(answer.status).toBe(200);
      expect(await inspect.get(`${prefix}${eventKey(sent.id, 'acme')}#thumbnails`)).toBe('completed');
    } finally {
      await connection.close();
    }
  });

  it("marks per tenant: <prefix>order:<tenant, URI-encoded>/<key>; one tenant's newer event does not hold back another's", async () => {
    const connection = await CLIENTS[0]!.connect(server.port);
    try {
      const prefix = uniquePrefix('order');
      const webhooks = new Webhooks({ secret: () => SECRET, store: new RedisStore(connection.client, { prefix }) });
      const applied: string[] = [];
      webhooks.on('image.created', { ordering: BY_IMAGE }, (e, { tenant }) => void applied.push(`${tenant}:${e.id}`));
      const forTenant = async (tenant: string, sent: AnyEvent) =>
        (await webhooks.handle({ method: 'POST', ...createSignedRequest(sent, { secret: SECRET }), tenant })).status;
      expect(await forTenant('a b', event('img_1', 200, 'evt_new'))).toBe(200);
      expect(await forTenant('acme', event('img_1', 100, 'evt_old'))).toBe(200);
      expect(applied).toEqual(['a b:evt_new', 'acme:evt_old']);
      expect((await inspect.keys(`${prefix}order:*`)).sort()).toEqual([
        `${prefix}order:${eventKey('image:img_1', 'a b')}`,
        `${prefix}order:acme/image:img_1`,
      ]);
      expect(await inspect.get(`${prefix}order:a%20b/image:img_1`)).toBe('200 evt_new');
    } finally {
      await connection.close();
    }
  });

  it('a Redis that does not answer: advance() rejects within timeoutMs, and the delivery answers 503', async () => {
    const connection = await CLIENTS[0]!.connect(server.port);
    const prefix = uniquePrefix('order');
    const store = new RedisStore(connection.client, { prefix, timeoutMs: 300 });
    try {
      await expect(store.advance('x', 1, 'evt_a')).resolves.toBe('current');
      server.pause();
      try {
        await expect(store.advance('x', 2, 'evt_a')).rejects.toThrow(
          /^pixhook: RedisStore: Redis did not answer advance\("x"\) within 300 ms/,
        );
      } finally {
        server.resume();
      }
      const webhooks = new Webhooks({ secret: SECRET, store });
      const codes: string[] = [];
      webhooks.onError((error) => void codes.push(error.code));
      let runs = 0;
      let froze = false;
      // The event is claimed, then an earlier handler freezes Redis before the guarded one's mark.
      webhooks.on('image.created', () => {
        if (froze) return;
        froze = true;
        server.pause();
      });
      webhooks.on('image.created', { ordering: BY_IMAGE }, () => void runs++);
      const sent = event('img_1', NOW());
      const started = Date.now();
      let answer: Awaited<ReturnType<typeof send>>;
      try {
        answer = await send(webhooks, sent);
      } finally {
        server.resume();
      }
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(answer.status).toBe(503);
      expect(codes[0]).toBe('STORE_UNAVAILABLE');
      expect(runs).toBe(0);
      // Redis back: the retry runs the event once its claim, released, is free.
      const deadline = Date.now() + 15_000;
      while ((await send(webhooks, sent)).status !== 200) {
        if (Date.now() > deadline) throw new Error('the retry was never processed');
        await sleep(50);
      }
      expect(runs).toBe(1);
    } finally {
      await connection.close();
    }
  });
});
