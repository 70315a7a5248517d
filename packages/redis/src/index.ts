export {
  DEFAULT_ARCHIVE_MAX_BYTES,
  DEFAULT_ARCHIVE_MAX_EVENTS,
  DEFAULT_ARCHIVE_PREFIX,
  DEFAULT_ARCHIVE_RETENTION_MS,
  type RedisArchiveOptions,
} from './archive-options.js';
export type { ClientKind, IoRedisClientLike, NodeRedisClientLike, RedisClientLike } from './client.js';
export { DEFAULT_TIMEOUT_MS, type RedisStoreOptions } from './options.js';
export { RedisArchive } from './redis-archive.js';
export { RedisStore } from './redis-store.js';
