import type { ErrorContext, QueuedDelivery, QueuedRun, WebhookQueue, WebhookVerificationError } from '@pixhook/core';

/**
 * What PgBossQueue uses of a `PgBoss` instance (pg-boss 10.x): a `new PgBoss(…)` fits it. Written
 * out here rather than imported from pg-boss, so that these types need no pg-boss installed (an
 * optional peer: `@pixhook/postgres`, which re-exports this queue until its next minor, must load
 * and type-check without it).
 */
export interface PgBossLike {
  send(name: string, data: object, options: PgBossSendOptions): Promise<string | null>;
  fetch(name: string, options: { batchSize: number; includeMetadata: true }): Promise<PgBossFetchedJob[]>;
  complete(name: string, id: string): Promise<unknown>;
  fail(name: string, id: string, data: object): Promise<unknown>;
  createQueue(name: string, options: PgBossQueueSettings): Promise<void>;
  getQueue(name: string): Promise<{ policy?: string | undefined } | null>;
  /** pg-boss's database; its `executeSql` resolves undefined while the boss is not started. */
  getDb(): { executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] } | undefined> };
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'stopped', listener: () => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'stopped', listener: () => void): unknown;
  listenerCount(event: 'error'): number;
}

/** The `send()` options PgBossQueue gives each job. */
export interface PgBossSendOptions {
  id: string;
  retryLimit: number;
  retryDelay: number;
  retryBackoff: boolean;
  expireInSeconds: number;
}

/** The settings of the queue PgBossQueue creates. */
export interface PgBossQueueSettings {
  name: string;
  retryLimit: number;
  retryDelay: number;
  retryBackoff: boolean;
  expireInSeconds: number;
}

/** A job as `fetch(name, { includeMetadata: true })` returns it (the fields PgBossQueue reads). */
export interface PgBossFetchedJob {
  id: string;
  data: unknown;
  retryCount: number;
  retryLimit: number;
  createdOn: Date;
  output: unknown;
}

/**
 * What a worker needs from a `Webhooks`: `process()` runs the handlers of a queued delivery (given
 * the queue, an event's job writes one job per named handler), `reportError()` tells `onError`.
 * Structural, so a `Webhooks` from another copy of `@pixhook/core` fits too, whatever its event
 * map, request type and transactions.
 */
export interface ProcessingWebhooks {
  process(delivery: QueuedDelivery, job: QueuedRun, options?: { queue?: Pick<WebhookQueue, 'enqueue'> }): Promise<void>;
  reportError(error: WebhookVerificationError, context: ErrorContext<undefined>): void;
}

/** A running worker: `close()` it on shutdown, before stopping the boss. */
export interface PgBossWorker {
  /** Handlers (jobs) running on this worker now. */
  readonly running: number;
  /**
   * Stops taking jobs and waits for the running ones, up to `shutdownTimeoutMs`; then lets go of
   * the rest (fails them, so pg-boss runs them again elsewhere after their backoff). Resolves
   * `true` when every running job finished. Safe to call more than once.
   */
  close(): Promise<boolean>;
}
