/**
 * RedisArchive's list time at 10^4, 10^5 and 10^6 archived events, and record()'s, on a real
 * redis-server: seeded through the public API (record() calls pipelined by the client), then the
 * first page and a page deep in the list, unfiltered and filtered. Prints the figures; asserts only
 * what the pages hold (timings depend on the machine).
 */
import type { ArchivedDelivery } from '@pixhook/core';
import { RedisArchive } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis as IoRedis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLIENTS, type TestClient } from '../helpers/clients.js';

const SIZES = [10_000, 100_000, 1_000_000];
const TYPES = Array.from({ length: 10 }, (_, index) => `image.type${index}`);
const BASE = 1_700_000_000_000;
/** Record calls in flight at once while seeding. */
const IN_FLIGHT = 5_000;

const body = new TextEncoder().encode(
  JSON.stringify({ id: 'evt', type: 'image.created', data: { object: { id: 'img_1' } } }),
);

function entry(index: number): ArchivedDelivery {
  // One in 200 failed, of which the rare type only now and then: a sparse filter to page through.
  const result = index % 200 === 0 ? 'failed' : 'processed';
  return {
    kind: 'delivery',
    eventId: `evt_${String(index).padStart(8, '0')}`,
    eventType: index % 200 === 0 && index % 1_000 !== 0 ? 'image.rare' : TYPES[index % TYPES.length]!,
    created: 1_700_000_000,
    deliveryId: `dlv_${index}`,
    timestamp: 1_700_000_000,
    // Two events per ms: ties on lastAt, ordered by event id.
    at: BASE + Math.floor(index / 2),
    body,
    headers: { 'content-type': 'application/json', 'x-service-signature': 't=1700000000,v1=abc' },
    secretIndex: 0,
    mode: 'queued',
    status: 202,
    result,
    ms: 1,
    runs: [],
  };
}

/** Median of `runs` timings of `work`, in ms. */
async function median(runs: number, work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const ms = (value: number) => `${value.toFixed(2)} ms`;

describeWithRedis('RedisArchive list time at 10^4, 10^5 and 10^6 events', () => {
  let server: RedisServer;
  let connection: TestClient;
  let archive: RedisArchive;
  let admin: IoRedis;

  beforeAll(async () => {
    server = await startRedisServer();
    connection = await CLIENTS[0]!.connect(server.port);
    admin = new IoRedis(server.port, '127.0.0.1');
    archive = new RedisArchive(connection.client, {
      prefix: 'inbox-timing',
      maxEvents: 2_000_000,
      maxBytes: 8 * 1024 * 1024 * 1024,
      pruneIntervalMs: false,
      writeTimeoutMs: 120_000,
    });
  });
  afterAll(async () => {
    await archive?.close();
    admin?.disconnect();
    await connection?.close();
    await server?.close();
  });

  it('lists the first page and a deep page, with and without filters, at each size', async () => {
    let seeded = 0;
    const lines: string[] = [];
    for (const size of SIZES) {
      const started = performance.now();
      while (seeded < size) {
        const writes: Promise<void>[] = [];
        for (const end = Math.min(size, seeded + IN_FLIGHT); seeded < end; seeded += 1)
          writes.push(archive.record(entry(seeded)));
        await Promise.all(writes);
      }
      const seconds = (performance.now() - started) / 1_000;
      lines.push(
        `${size} events (seeded in ${seconds.toFixed(1)} s, ${Math.round(size / seconds)} records/s before this size's reads)`,
      );

      const first = await archive.list({ limit: 50 });
      expect(first.items).toHaveLength(50);
      expect(first.items[0]!.eventId).toBe(entry(size - 1).eventId);
      // A cursor halfway down: the page after the first event older than the middle.
      const middle = BASE + Math.floor(size / 4);
      const deepCursor = (await archive.list({ until: middle, limit: 1 })).next!;
      const deep = await archive.list({ cursor: deepCursor, limit: 50 });
      expect(deep.items).toHaveLength(50);
      expect(deep.items[0]!.lastAt).toBeLessThan(middle);

      const typeCursor = (await archive.list({ until: middle, limit: 1, type: TYPES[3] })).next!;
      const figures = {
        first: await median(7, () => archive.list({ limit: 50 })),
        deep: await median(7, () => archive.list({ cursor: deepCursor, limit: 50 })),
        typeFirst: await median(7, () => archive.list({ type: TYPES[3], limit: 50 })),
        typeDeep: await median(7, () => archive.list({ type: TYPES[3], cursor: typeCursor, limit: 50 })),
        outcome: await median(7, () => archive.list({ outcome: 'failed', limit: 50 })),
        sinceUntil: await median(7, () => archive.list({ since: middle - 1_000, until: middle, limit: 50 })),
        // Few of the narrower set match: the page examines up to 5,000 events and may stop there.
        sparse: await median(7, () => archive.list({ type: TYPES[0], outcome: 'failed', limit: 50 })),
        event: await median(7, () => archive.list({ eventId: entry(7).eventId })),
        delivery: await median(7, () => archive.list({ deliveryId: 'dlv_7' })),
        get: await median(7, () => archive.get(entry(7).eventId)),
      };
      const typePage = await archive.list({ type: TYPES[3], cursor: typeCursor, limit: 50 });
      expect(typePage.items.every((item) => item.eventType === TYPES[3])).toBe(true);
      const sparse = await archive.list({ type: TYPES[0], outcome: 'failed', limit: 50 });
      expect(sparse.items.every((item) => item.eventType === TYPES[0] && item.outcome === 'failed')).toBe(true);

      // record() one at a time, as a request would: a new event each.
      const times: number[] = [];
      for (let index = 0; index < 500; index += 1) {
        const one = entry(size + 10_000_000 + index);
        const at = performance.now();
        await archive.record({ ...one, at: BASE - 1_000_000 + index });
        times.push(performance.now() - at);
      }
      times.sort((a, b) => a - b);
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
      lines.push(
        `  Redis used_memory ${(used / 1024 / 1024).toFixed(0)} MiB (${Math.round(used / (size + 500 * (SIZES.indexOf(size) + 1)))} bytes per event)`,
        `  list first page ${ms(figures.first)}, deep page ${ms(figures.deep)}; type first ${ms(figures.typeFirst)}, deep ${ms(figures.typeDeep)}; ` +
          `outcome=failed ${ms(figures.outcome)}; since/until ${ms(figures.sinceUntil)}; type+outcome sparse ${ms(figures.sparse)} (${sparse.items.length} items, next: ${sparse.next !== undefined}); ` +
          `eventId ${ms(figures.event)}; deliveryId ${ms(figures.delivery)}; get ${ms(figures.get)}`,
        `  record() median ${ms(times[250]!)}, p99 ${ms(times[494]!)} (500 sequential)`,
      );
      seeded = size;
    }
    console.log(`RedisArchive on redis-server ${server.port}:\n${lines.join('\n')}`);
    // Seeding a million events takes about 3 minutes on 2 busy cores.
  }, 900_000);
});
