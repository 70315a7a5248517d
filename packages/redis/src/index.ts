export type { ClientKind, IoRedisClientLike, NodeRedisClientLike, RedisClientLike } from './client.js';
export { DEFAULT_TIMEOUT_MS, type RedisStoreOptions } from './options.js';
export { RedisStore } from './redis-store.js';
