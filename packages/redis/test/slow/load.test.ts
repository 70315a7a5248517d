/**
 * A bounded load run on loopback: 4,000 deliveries, a quarter of them duplicates, 64 at a time, to
 * three instances on one Redis. Handler runs must equal unique events.
 */
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/clients.js';
import { type Fleet, pool, SECRET, startFleet } from '../helpers/instances.js';

const UNIQUE_EVENTS = 3_000;
const DUPLICATES = 1_000;
const CONCURRENCY = 64;

interface Delivery {
  eventId: string;
  request: { method: string; headers: Record<string, string>; body: string };
  statuses: number[];
}

function deliveriesOf(event: ReturnType<typeof createTestEvent>): Delivery {
  const { body, headers } = createSignedRequest(event, { secret: SECRET });
  return { eventId: event.id, request: { method: 'POST', headers, body }, statuses: [] };
}

describeWithRedis('load: a few thousand deliveries, a quarter duplicates', () => {
  let server: RedisServer;
  let fleet: Fleet;

  beforeAll(async () => {
    server = await startRedisServer();
    fleet = await startFleet(server.port, { prefix: uniquePrefix('load') });
  });
  afterAll(async () => {
    await fleet?.close();
    await server?.close();
  });

  it('runs the handler once per unique event', async () => {
    const events = Array.from({ length: UNIQUE_EVENTS }, () => createTestEvent('image.created'));
    const deliveries = events.map(deliveriesOf);
    // Half the duplicates right behind their original (they meet it in flight), half much later.
    for (let n = 0; n < DUPLICATES; n += 1) {
      const at = Math.floor(Math.random() * deliveries.length);
      const original = n % 2 === 0 ? at : Math.floor(Math.random() * Math.max(1, at - CONCURRENCY * 4));
      const event = JSON.parse(deliveries[Math.min(original, deliveries.length - 1)]!.request.body);
      deliveries.splice(at + 1, 0, deliveriesOf(event));
    }
    expect(deliveries).toHaveLength(UNIQUE_EVENTS + DUPLICATES);

    const send = async (delivery: Delivery, index: number) => {
      const instance = fleet.instances[index % fleet.instances.length]!;
      delivery.statuses.push((await instance.send(delivery.request)).status);
    };
    await pool(deliveries, CONCURRENCY, send);
    const first = deliveries.map((delivery) => delivery.statuses[0]);
    expect(first.filter((status) => status !== 200 && status !== 409)).toEqual([]);

    // 409s are retried by the service until they are answered 200.
    for (let round = 0; round < 20; round += 1) {
      const pending = deliveries.filter((delivery) => delivery.statuses.at(-1) !== 200);
      if (pending.length === 0) break;
      await pool(pending, CONCURRENCY, send);
    }
    expect(deliveries.filter((delivery) => delivery.statuses.at(-1) !== 200)).toEqual([]);

    const ran = new Map<string, number>();
    for (const run of fleet.runs) ran.set(run.eventId, (ran.get(run.eventId) ?? 0) + 1);
    expect(fleet.runs).toHaveLength(UNIQUE_EVENTS);
    expect(ran.size).toBe(UNIQUE_EVENTS);
    expect(events.filter((event) => ran.get(event.id) !== 1)).toEqual([]);
    console.info(
      `[load] ${deliveries.length} deliveries, concurrency ${CONCURRENCY}: ${first.filter((s) => s === 409).length} answered 409 first, ${fleet.runs.length} handler runs`,
    );
  });
});
