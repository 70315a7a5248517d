export { BullMQQueue, type DeadLetter, type ListOptions, type QueueCounts } from './bullmq-queue.js';
export { jobIdFor } from './job-id.js';
export type { BackoffOptions, BullMQQueueOptions, WorkerOptions } from './options.js';
export type { ProcessingWebhooks, QueueWorker } from './worker.js';
