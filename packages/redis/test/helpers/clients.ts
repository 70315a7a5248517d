/** Every Redis client library and major version `RedisStore` is tested with. */

import type { RedisClientLike } from '@pixhook/redis';
import { Redis as IoRedis5 } from 'ioredis';
import { Redis as IoRedis6 } from 'ioredis6';
import { createClient as createClient5 } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { createClient as createClient6 } from 'redis6';

/** A connected client and how to close it. */
export interface TestClient {
  client: RedisClientLike;
  /** Resolves once the client is connected and every command it queued before has run. */
  ping(): Promise<unknown>;
  close(): Promise<void>;
}

export interface ClientUnderTest {
  name: string;
  kind: 'ioredis' | 'node-redis';
  connect(port: number): Promise<TestClient>;
}

type NodeRedisFactory = typeof createClient4 | typeof createClient5 | typeof createClient6;

function ioredis(name: string, Redis: typeof IoRedis5): ClientUnderTest {
  return {
    name,
    kind: 'ioredis',
    connect: async (port) => {
      const client = new Redis(port, '127.0.0.1');
      // Errors while Redis is down reach the store's commands; the event alone would be unhandled.
      client.on('error', () => {});
      await client.ping();
      return {
        client,
        ping: () => client.ping(),
        close: async () => {
          client.disconnect();
        },
      };
    },
  };
}

function nodeRedis(name: string, createClient: NodeRedisFactory): ClientUnderTest {
  return {
    name,
    kind: 'node-redis',
    connect: async (port) => {
      const client = (createClient as typeof createClient5)({
        socket: { host: '127.0.0.1', port, reconnectStrategy: () => 50 },
      });
      client.on('error', () => {});
      await client.connect();
      const closable = client as unknown as { destroy?: () => void; disconnect?: () => Promise<void> };
      return {
        client: client as unknown as RedisClientLike,
        ping: () => client.ping(),
        close: async () => {
          if (typeof closable.destroy === 'function') closable.destroy();
          else await closable.disconnect?.().catch(() => {});
        },
      };
    },
  };
}

export const CLIENTS: ClientUnderTest[] = [
  ioredis('ioredis@5', IoRedis5),
  ioredis('ioredis@6', IoRedis6 as unknown as typeof IoRedis5),
  nodeRedis('redis@4', createClient4),
  nodeRedis('redis@5', createClient5),
  nodeRedis('redis@6', createClient6),
];

/** A prefix no other test uses, so tests sharing one server never see each other's keys. */
export function uniquePrefix(label = 'test'): string {
  return `pixhook-test:${label}:${globalThis.crypto.randomUUID().slice(0, 8)}:`;
}
