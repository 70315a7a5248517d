export { getMigrationSql, migrate } from './migrate.js';
export type { PostgresStoreOptions, PostgresTransactionsOptions, TableOptions } from './options.js';
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
export { PostgresStore } from './postgres-store.js';
export { PostgresTransactions } from './postgres-transactions.js';
