/**
 * Redis goes down in the middle of a stream of deliveries to three instances, then comes back.
 * Requests while it is down answer 503 and run no handler; the service's retries after it is back
 * are processed; in the end every event ran exactly once and none is missing.
 */
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import type { TestResponse } from '@pixhook/test-helpers/adapters';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/clients.js';
import { type Fleet, pool, SECRET, startFleet } from '../helpers/instances.js';

const UNIQUE_EVENTS = 400;
const DUPLICATES = 100;
const CONCURRENCY = 8;
/** Deliveries sent before Redis is killed, and before it is started again. */
const STOP_AT = 150;
const START_AT = 300;
// Longer than the outage: claims persisted before it still hold after it (see the README).
const IN_FLIGHT_TTL_MS = 60_000;
const TIMEOUT_MS = 500;
const DEADLINE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Delivery {
  eventId: string;
  deliveryId: string;
  request: { method: string; headers: Record<string, string>; body: string };
  answers: number[];
}

function stream(): Delivery[] {
  const events = Array.from({ length: UNIQUE_EVENTS }, () => createTestEvent('image.created'));
  const deliveries: Delivery[] = events.map((event) => {
    const { body, headers } = createSignedRequest(event, { secret: SECRET });
    return {
      eventId: event.id,
      deliveryId: headers['x-service-delivery'],
      request: { method: 'POST', headers, body },
      answers: [],
    };
  });
  // At-least-once: some events are delivered again later, as a separate delivery.
  for (let n = 0; n < DUPLICATES; n += 1) {
    const at = Math.floor(Math.random() * deliveries.length);
    const original = deliveries[Math.floor(Math.random() * at)] ?? deliveries[0]!;
    const event = JSON.parse(original.request.body);
    const { body, headers } = createSignedRequest(event, { secret: SECRET });
    deliveries.splice(at + 1, 0, {
      eventId: event.id,
      deliveryId: headers['x-service-delivery'],
      request: { method: 'POST', headers, body },
      answers: [],
    });
  }
  return deliveries;
}

describeWithRedis('Redis stopped in the middle of a stream of deliveries', () => {
  let server: RedisServer;
  let fleet: Fleet;

  beforeAll(async () => {
    // Persistent, as production should run it: a Redis that restarts empty forgets what was processed.
    server = await startRedisServer({ persistent: true });
    fleet = await startFleet(server.port, {
      prefix: uniquePrefix('outage'),
      inFlightTtlMs: IN_FLIGHT_TTL_MS,
      timeoutMs: TIMEOUT_MS,
      handler: () => sleep(Math.random() * 3),
    });
  });
  afterAll(async () => {
    await fleet?.close();
    await server?.close();
  });

  it('answers 503 without running handlers while it is down, then processes every event exactly once', async () => {
    const deliveries = stream();
    const slowest = { ms: 0 };
    const send = async (delivery: Delivery, instance: number) => {
      const started = performance.now();
      const answer: TestResponse = await fleet.instances[instance % fleet.instances.length]!.send(delivery.request);
      slowest.ms = Math.max(slowest.ms, performance.now() - started);
      delivery.answers.push(answer.status);
    };

    // Redis is down from when stop() resolves until start() is called.
    let down = false;
    const answeredWhileDown: Delivery[] = [];
    await pool(deliveries, CONCURRENCY, async (delivery, index) => {
      if (index === STOP_AT) {
        await server.stop('SIGKILL');
        down = true;
      }
      if (index === START_AT) {
        down = false;
        await server.start();
        // Every client reconnected and ran what it had queued (late claims and their releases).
        await Promise.all(fleet.connections.map((connection) => connection.ping()));
      }
      const sentWhileDown = down;
      await send(delivery, index);
      if (sentWhileDown && down) answeredWhileDown.push(delivery);
    });

    const statuses = deliveries.flatMap((delivery) => delivery.answers);
    expect(new Set(statuses.filter((status) => ![200, 409, 503].includes(status)))).toEqual(new Set());
    expect(answeredWhileDown.length).toBeGreaterThan(50);
    expect(answeredWhileDown.map((delivery) => delivery.answers[0])).toEqual(answeredWhileDown.map(() => 503));
    // No handler ran for any delivery that was answered 503.
    const ranFor = new Set(fleet.runs.map((run) => run.deliveryId));
    const refused = deliveries.filter((delivery) => delivery.answers.includes(503));
    expect(refused.filter((delivery) => ranFor.has(delivery.deliveryId))).toEqual([]);
    expect(slowest.ms).toBeLessThan(DEADLINE_MS);

    // The service retries every delivery that was not answered 2xx (409 included), until it is.
    for (let round = 0; round < 40; round += 1) {
      const pending = deliveries.filter((delivery) => delivery.answers.at(-1) !== 200);
      if (pending.length === 0) break;
      await sleep(250);
      await pool(pending, CONCURRENCY, (delivery, index) => send(delivery, index + round));
    }
    expect(deliveries.filter((delivery) => delivery.answers.at(-1) !== 200)).toEqual([]);

    const count = (status: number) => statuses.filter((value) => value === status).length;
    console.info(
      `[redis-outage] ${deliveries.length} deliveries: first answers 200=${count(200)} 409=${count(409)} 503=${count(503)}, ${answeredWhileDown.length} while Redis was down; ${deliveries.reduce((sum, delivery) => sum + delivery.answers.length, 0) - deliveries.length} retries`,
    );
    const runsPerEvent = new Map<string, number>();
    for (const run of fleet.runs) runsPerEvent.set(run.eventId, (runsPerEvent.get(run.eventId) ?? 0) + 1);
    const uniqueIds = new Set(deliveries.map((delivery) => delivery.eventId));
    expect(uniqueIds.size).toBe(UNIQUE_EVENTS);
    const wrong = [...uniqueIds].filter((id) => runsPerEvent.get(id) !== 1);
    const explain = (id: string) => ({
      id,
      runs: fleet.runs.filter((run) => run.eventId === id),
      deliveries: deliveries.filter((delivery) => delivery.eventId === id).map((d) => [d.deliveryId, d.answers]),
    });
    expect(wrong.map(explain)).toEqual([]);
    expect(fleet.runs).toHaveLength(UNIQUE_EVENTS);
  });
});
