/** The archive on every adapter with a real Redis: what each adapter hands pixhook is archived exactly as sent. */

import { Webhooks } from '@pixhook/core';
import { RedisArchive } from '@pixhook/redis';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { expectKeptExactly, oddDelivery } from '@pixhook/test-helpers/archive';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describeWithRedis('RedisArchive on every adapter', () => {
  let server: RedisServer;
  let redis: Redis;
  let archive: RedisArchive;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis({ port: server.port, host: '127.0.0.1' });
    archive = new RedisArchive(redis, {
      prefix: `inbox-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      pruneIntervalMs: false,
    });
  });
  afterAll(async () => {
    await archive?.close();
    redis?.disconnect();
    await server?.close();
  });

  it('a frozen Redis loses no event: the handler runs, the answer is 200 in time, onError hears ARCHIVE_FAILED', async () => {
    const frozen = new RedisArchive(redis, {
      prefix: `frozen-${globalThis.crypto.randomUUID().slice(0, 8)}`,
      writeTimeoutMs: 300,
      pruneIntervalMs: false,
    });
    const webhooks = new Webhooks({ secret: SECRET, archive: frozen });
    const ran: string[] = [];
    const heard: string[] = [];
    webhooks.on('image.created', (event) => void ran.push(event.id));
    webhooks.onError((error) => void heard.push(error.code));
    const client = await (ADAPTERS[0] as (typeof ADAPTERS)[number]).create(webhooks);
    const sent = oddDelivery();
    server.pause();
    try {
      const answer = await client.send(sent.request);
      expect(answer.status).toBe(200);
      expect(ran).toEqual([sent.eventId]);
      expect(heard).toEqual(['ARCHIVE_FAILED']);
    } finally {
      server.resume();
      await client.close();
    }
    // The service's retry, once Redis is back, is a duplicate (the event ran once) and is archived.
    const again = await (ADAPTERS[0] as (typeof ADAPTERS)[number]).create(webhooks);
    try {
      expect((await again.send(sent.request)).json).toEqual({ received: true, duplicate: true });
      expect(ran).toHaveLength(1);
    } finally {
      await again.close();
    }
  });

  describe.each(ADAPTERS)('$name', (adapter) => {
    it('inline: archives the exact bytes and headers before answering', async () => {
      const webhooks = new Webhooks({ secret: SECRET, archive });
      webhooks.on('image.created', () => {});
      const client = await adapter.create(webhooks);
      try {
        const sent = oddDelivery();
        expect((await client.send(sent.request)).status).toBe(200);
        await expectKeptExactly(archive, sent, { outcome: 'processed', mode: 'inline', result: 'processed' });
      } finally {
        await client.close();
      }
    });
  });
});
