/** What an editor must accept: a client of either library, any supported major, without a cast. */

import { type RedisClientLike, RedisStore, type RedisStoreOptions } from '@pixhook/redis';
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { createClient } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { createClient as createClient6 } from 'redis6';
import { describe, expectTypeOf, it } from 'vitest';

describe('RedisStore types', () => {
  it('takes ioredis 5 and 6 clients', () => {
    expectTypeOf(new Redis()).toExtend<RedisClientLike>();
    expectTypeOf(new Redis6()).toExtend<RedisClientLike>();
    expectTypeOf(RedisStore).toBeConstructibleWith(new Redis(6379), { prefix: 'pixhook:' });
  });

  it('takes node-redis 4, 5 and 6 clients', () => {
    expectTypeOf(createClient()).toExtend<RedisClientLike>();
    expectTypeOf(createClient4()).toExtend<RedisClientLike>();
    expectTypeOf(createClient6()).toExtend<RedisClientLike>();
  });

  it('refuses what is not a client, and options of the wrong type', () => {
    expectTypeOf<string>().not.toExtend<RedisClientLike>();
    expectTypeOf<{ get(key: string): Promise<string> }>().not.toExtend<RedisClientLike>();
    expectTypeOf<{ timeoutMs: string }>().not.toExtend<RedisStoreOptions>();
  });
});
