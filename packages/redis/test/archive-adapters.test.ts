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
