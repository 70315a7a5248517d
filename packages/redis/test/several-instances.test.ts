/**
 * Several app instances behind one URL: every adapter (Express 4 and 5, Fastify, Koa 2 and 3) as its
 * own instance with its own client and RedisStore, all on one Redis, receiving the same signed events
 * at the same moment, many times over.
 */
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisStore } from '@pixhook/redis';
import { ADAPTERS, type Client, type TestResponse } from '@pixhook/test-helpers/adapters';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLIENTS, type TestClient, uniquePrefix } from './helpers/clients.js';

const SECRET = 'whsec_instances_2b3c4d5e';
const EVENTS = 60;
const COPIES_PER_INSTANCE = 3;
const EVENTS_AT_ONCE = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeWithRedis('several instances sharing one Redis', () => {
  let server: RedisServer;
  const connections: TestClient[] = [];
  const instances: { name: string; app: Client }[] = [];
  /** Handler runs per event id, over all instances. */
  const runs = new Map<string, string[]>();

  beforeAll(async () => {
    server = await startRedisServer();
    const prefix = uniquePrefix('instances');
    for (const [index, adapter] of ADAPTERS.entries()) {
      const client = CLIENTS[index % CLIENTS.length]!;
      const connection = await client.connect(server.port);
      connections.push(connection);
      const webhooks = new Webhooks({ secret: SECRET, store: new RedisStore(connection.client, { prefix }) });
      webhooks.onError(() => {});
      webhooks.on('image.created', async (event) => {
        runs.set(event.id, [...(runs.get(event.id) ?? []), adapter.name]);
        // Hold the claim a moment, as real work does, so that other deliveries meet it in flight.
        await sleep(Math.random() * 5);
      });
      instances.push({ name: `${adapter.name} + ${client.name}`, app: await adapter.create(webhooks) });
    }
  });

  afterAll(async () => {
    for (const { app } of instances) await app.close();
    for (const connection of connections) await connection.close();
    await server?.close();
  });

  it('runs each event exactly once; every other delivery answers 200 (processed) or 409 (in flight)', async () => {
    const events = Array.from({ length: EVENTS }, () => createTestEvent('image.created'));
    const answers = new Map<string, TestResponse[]>();

    for (let start = 0; start < events.length; start += EVENTS_AT_ONCE) {
      await Promise.all(
        events.slice(start, start + EVENTS_AT_ONCE).map(async (event) => {
          const { body, headers } = createSignedRequest(event, { secret: SECRET });
          const sends = instances.flatMap(({ app }) =>
            Array.from({ length: COPIES_PER_INSTANCE }, () => app.send({ method: 'POST', headers, body })),
          );
          answers.set(event.id, await Promise.all(sends));
        }),
      );
    }

    for (const event of events) {
      const statuses = answers.get(event.id)!.map((answer) => answer.status);
      expect(runs.get(event.id), event.id).toHaveLength(1);
      expect(
        statuses.filter((status) => status !== 200 && status !== 409),
        event.id,
      ).toEqual([]);
      const firsts = answers.get(event.id)!.filter((answer) => answer.text === '{"received":true}');
      expect(firsts, `one answer per event reports the run: ${event.id}`).toHaveLength(1);
    }
    expect(runs.size).toBe(EVENTS);
    // The deliveries really met while in flight: otherwise this would not test concurrency at all.
    const inFlight = [...answers.values()].flat().filter((answer) => answer.status === 409);
    expect(inFlight.length).toBeGreaterThan(0);

    // Later deliveries, to any instance, find every event completed.
    for (const event of events.slice(0, 10)) {
      const { body, headers } = createSignedRequest(event, { secret: SECRET });
      for (const { name, app } of instances) {
        const answer = await app.send({ method: 'POST', headers, body });
        expect([name, answer.status, answer.json]).toEqual([name, 200, { received: true, duplicate: true }]);
      }
    }
    expect([...runs.values()].every((list) => list.length === 1)).toBe(true);
  });
});
