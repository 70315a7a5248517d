/**
 * RedisStore and RedisArchive on a real Redis Cluster (3 masters, 3 replicas, started here) through
 * an ioredis `Cluster`: the store's keys spread over every master, the archive's keys all in one
 * slot (its `{prefix}` hash tag) so its scripts run on one node, and an Express app answering 200
 * then a 200 duplicate without running the handler twice.
 */
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisArchive, RedisStore } from '@pixhook/redis';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { describeWithRedisCluster, type RedisCluster, startRedisCluster } from '@pixhook/test-helpers/redis-cluster';
import { Cluster } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SECRET = 'whsec_redis_cluster_1a2b3c';
const newId = () => `evt_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
const newToken = () => globalThis.crypto.randomUUID();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

describeWithRedisCluster('on a Redis Cluster (ioredis Cluster)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  let client6: Cluster6;
  let masters: number[];

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster(cluster.startupNodes);
    client.on('error', () => {});
    await client.ping();
    client6 = new Cluster6(cluster.startupNodes);
    client6.on('error', () => {});
    await client6.ping();
    masters = (await cluster.topology()).filter((node) => node.role === 'master').map((node) => node.port);
    expect(masters).toHaveLength(3);
  });
  afterAll(async () => {
    client?.disconnect();
    client6?.disconnect();
    await cluster?.close();
  });

  /** Event ids whose keys (`prefix + id`) land on each master, `perMaster` of each. */
  async function idsOnEveryMaster(prefix: string, perMaster: number): Promise<Map<number, string[]>> {
    const byMaster = new Map<number, string[]>(masters.map((port) => [port, []]));
    while ([...byMaster.values()].some((ids) => ids.length < perMaster)) {
      const id = newId();
      const ids = byMaster.get(await cluster.masterOf(prefix + id))!;
      if (ids.length < perMaster) ids.push(id);
    }
    return byMaster;
  }

  describe('RedisStore', () => {
    it.each([
      ['ioredis@5', () => client],
      ['ioredis@6', () => client6 as unknown as Cluster],
    ])(
      '%s: claims, extends, completes and releases events whose keys are on each of the three masters',
      async (_, of) => {
        const prefix = `cluster-store-${globalThis.crypto.randomUUID().slice(0, 8)}:`;
        const store = new RedisStore(of(), { prefix, inFlightTtlMs: 60_000 });
        expect(store.clientKind).toBe('ioredis');
        const byMaster = await idsOnEveryMaster(prefix, 2);
        for (const [port, [completed, released]] of byMaster) {
          const [a, b] = [newToken(), newToken()];
          expect(await store.claim(completed!, a)).toBe('claimed');
          expect(await store.claim(completed!, b)).toBe('in-flight');
          expect(await store.extend(completed!, a)).toBe(true);
          expect(await store.extend(completed!, b)).toBe(false);
          await store.complete(completed!, a);
          expect(await store.claim(completed!, b)).toBe('completed');
          // The key is on that master, and nowhere else: asked directly, the master holds it.
          expect(await cluster.command(port, 'GET', prefix + completed)).toBe('completed');
          const ttl = Number(await cluster.command(port, 'PTTL', prefix + completed));
          expect(ttl).toBeGreaterThan(0);

          expect(await store.claim(released!, a)).toBe('claimed');
          await store.release(released!, b); // not b's claim: stays
          expect(await store.claim(released!, b)).toBe('in-flight');
          await store.release(released!, a);
          expect(await cluster.command(port, 'EXISTS', prefix + released)).toBe(0);
          expect(await store.claim(released!, b)).toBe('claimed');
        }
        expect(store.pendingCompletions).toBe(0);
        expect(store.pendingReleases).toBe(0);
      },
    );

    it('advances ordering marks on each master', async () => {
      const prefix = `cluster-order-${globalThis.crypto.randomUUID().slice(0, 8)}:`;
      const store = new RedisStore(client, { prefix });
      const keys = new Map<number, string>();
      while (keys.size < 3) {
        const key = `image:${globalThis.crypto.randomUUID().slice(0, 8)}`;
        const port = await cluster.masterOf(`${prefix}order:${key}`);
        if (!keys.has(port)) keys.set(port, key);
      }
      for (const [port, key] of keys) {
        expect(await store.advance(key, 2, 'evt_b')).toBe('current');
        expect(await store.advance(key, 1, 'evt_z')).toBe('stale');
        expect(await store.advance(key, 2, 'evt_a')).toBe('stale');
        expect(await store.advance(key, 2, 'evt_c')).toBe('current');
        expect(await cluster.command(port, 'GET', `${prefix}order:${key}`)).toBe('2 evt_c');
      }
    });

    it('an Express app answers 200, then a 200 duplicate without running the handler again, for events on every master', async () => {
      const prefix = `cluster-app-${globalThis.crypto.randomUUID().slice(0, 8)}:`;
      const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(client, { prefix }) });
      const runs: string[] = [];
      webhooks.on('image.created', (event) => void runs.push(event.id));
      const app: Client = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(webhooks);
      try {
        const byMaster = await idsOnEveryMaster(prefix, 3);
        const ids = [...byMaster.values()].flat();
        for (const id of ids) {
          const { headers, body } = createSignedRequest(createTestEvent('image.created', undefined, { id }), {
            secret: SECRET,
          });
          const first = await app.send({ method: 'POST', headers, body });
          expect([first.status, first.json]).toEqual([200, { received: true }]);
          const again = await app.send({ method: 'POST', headers, body });
          expect([again.status, again.json]).toEqual([200, { received: true, duplicate: true }]);
        }
        expect(runs).toEqual(ids);
      } finally {
        await app.close();
      }
    });
  });

  describe('RedisArchive', () => {
    it('keeps every key of its prefix in one slot, on one master', async () => {
      const prefix = `cluster-inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`;
      const archive = new RedisArchive(client, { prefix, pruneIntervalMs: false });
      const webhooks = new Webhooks({ secret: SECRET, archive });
      webhooks.on('image.created', () => {});
      const app = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(webhooks);
      try {
        const ids = Array.from({ length: 6 }, newId);
        for (const id of ids) {
          const { headers, body } = createSignedRequest(createTestEvent('image.created', undefined, { id }), {
            secret: SECRET,
          });
          expect((await app.send({ method: 'POST', headers, body })).status).toBe(200);
        }
        const home = await cluster.masterOf(`{${prefix}}:all`);
        const slot = await cluster.slotOf(`{${prefix}}:all`);
        const keys = (await cluster.command(home, 'CLUSTER', 'GETKEYSINSLOT', slot, 1_000)) as string[];
        expect(keys).toContain(`{${prefix}}:e:${ids[0]}`);
        // Every key the archive wrote is in that one slot.
        expect(keys.filter((key) => !key.startsWith(`{${prefix}}:`))).toEqual([]);
        expect(keys.length).toBeGreaterThanOrEqual(ids.length * 3);
      } finally {
        await app.close();
        await archive.close();
      }
    });

    it('records, lists (filters, pages, one delivery), gets, prunes and replays', async () => {
      const prefix = `cluster-inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`;
      const archive = new RedisArchive(client, { prefix, pruneIntervalMs: false, replayPollMs: 20 });
      const webhooks = new Webhooks({ secret: SECRET, archive });
      const runs: string[] = [];
      webhooks.on('image.created', (event) => void runs.push(event.id));
      webhooks.on('image.deleted', () => {
        throw new Error('deleted fails');
      });
      webhooks.onError(() => {});
      const app = await ADAPTERS.find((adapter) => adapter.name === 'express@5')!.create(webhooks);
      try {
        const created = Array.from({ length: 5 }, newId);
        const deleted = newId();
        for (const id of created) {
          const { headers, body } = createSignedRequest(createTestEvent('image.created', undefined, { id }), {
            secret: SECRET,
          });
          expect((await app.send({ method: 'POST', headers, body })).status).toBe(200);
        }
        const failing = createSignedRequest(createTestEvent('image.deleted', undefined, { id: deleted }), {
          secret: SECRET,
        });
        expect((await app.send({ method: 'POST', ...failing })).status).toBe(500);

        const all = await archive.list({ limit: 100 });
        expect(new Set(all.items.map((item) => item.eventId))).toEqual(new Set([...created, deleted]));
        const failed = await archive.list({ outcome: 'failed' });
        expect(failed.items.map((item) => item.eventId)).toEqual([deleted]);
        const ofType = await archive.list({ type: 'image.created', outcome: 'processed' });
        expect(ofType.items).toHaveLength(5);
        const page1 = await archive.list({ limit: 2 });
        const page2 = await archive.list({ limit: 2, cursor: page1.next });
        expect(page1.items).toHaveLength(2);
        expect(page2.items).toHaveLength(2);
        expect(page2.items.map((item) => item.eventId)).not.toContain(page1.items[0]!.eventId);
        expect((await archive.list({ eventId: created[0] })).items.map((item) => item.eventId)).toEqual([created[0]]);

        const event = await archive.get(created[0]!);
        expect(event?.deliveries).toBe(1);
        expect(event?.timeline).toHaveLength(1);

        // Replays requested (as the CLI does, on another archive of the prefix) reach the attached Webhooks.
        const reader = new RedisArchive(client, { prefix, pruneIntervalMs: false });
        expect(await reader.requestReplay([created[1]!, created[2]!, newId()])).toBe(2);
        await until(() => runs.filter((id) => id === created[1] || id === created[2]).length === 4, 'the replays');
        await until(
          async () => (await archive.get(created[2]!))?.timeline.some((entry) => entry.kind === 'replay') === true,
          'the replay in the timeline',
        );

        // Prune down to 3 events: the oldest go, with all their keys.
        const pruner = new RedisArchive(client, { prefix, pruneIntervalMs: false, maxEvents: 3 });
        expect(await pruner.prune()).toBe(3);
        expect((await archive.list({ limit: 100 })).items).toHaveLength(3);
        const home = await cluster.masterOf(`{${prefix}}:all`);
        expect(await cluster.command(home, 'HLEN', `{${prefix}}:idx`)).toBe(3);
      } finally {
        await app.close();
        await archive.close();
      }
    });
  });
});
