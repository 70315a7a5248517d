export { getArchiveMigrationSql, getMigrationSql, migrate, migrateArchive } from './migrate.js';
export type {
  ArchiveTableOptions,
  PostgresArchiveOptions,
  PostgresStoreOptions,
  PostgresTransactionsOptions,
  TableOptions,
} from './options.js';
export {
  type PgBossBackoffOptions,
  type PgBossDeadLetter,
  type PgBossLike,
  type PgBossListOptions,
  PgBossQueue,
  type PgBossQueueOptions,
  type PgBossWorker,
  type PgBossWorkerOptions,
  type ProcessingWebhooks,
  pgBossJobIdFor,
} from './pg-boss-moved.js';
export { PostgresArchive } from './postgres-archive.js';
export { PostgresStore } from './postgres-store.js';
export { PostgresTransactions } from './postgres-transactions.js';
