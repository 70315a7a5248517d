/** The shared store behaviour table, run by RedisStore with every supported client library. */

import { RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { describeStoreSuite } from '@pixhook/test-helpers/store-suite';
import { afterAll, beforeAll, describe } from 'vitest';
import { CLIENTS, type TestClient, uniquePrefix } from './helpers/clients.js';

describeWithRedis('RedisStore against a real redis-server', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  for (const { name, connect } of CLIENTS) {
    let connection: TestClient;
    beforeAll(async () => {
      connection = await connect(server.port);
    });
    afterAll(async () => {
      await connection?.close();
    });
    describeStoreSuite(
      `RedisStore with ${name}`,
      (options) => new RedisStore(connection.client, { ...options, prefix: uniquePrefix(name) }),
      // Each test has its own event ids and store; most of the table waits for TTLs to lapse, so
      // the tests run side by side instead of one sleep after another.
      describe.concurrent,
    );
  }
});
