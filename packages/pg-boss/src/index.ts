export { pgBossJobIdFor } from './job-id.js';
export type { PgBossBackoffOptions, PgBossQueueOptions, PgBossWorkerOptions } from './options.js';
export { type PgBossDeadLetter, type PgBossListOptions, PgBossQueue, type QueueCounts } from './pg-boss-queue.js';
export type { PgBossLike, PgBossWorker, ProcessingWebhooks } from './types.js';
