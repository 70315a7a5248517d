import { WebhookVerificationError } from './errors.js';

/**
 * Transactional mode, the seam between pixhook and a database (`@pixhook/postgres`'
 * `PostgresTransactions`): with `new Webhooks({ transactions })`, each event's handlers run inside
 * one database transaction, given to them as `context.transaction`, and the record that the event
 * was processed is committed in that same transaction. The handlers' writes and the record commit
 * together or not at all: exactly-once effects in that database.
 *
 * @typeParam TTransaction - what handlers get as `context.transaction` (a `pg` `PoolClient`, say)
 * @example
 * const transactions: EventTransactions<MyTx> = {
 *   async begin(eventId) {
 *     const tx = await db.begin()
 *     if (!(await tx.tryLock(eventId))) { await tx.rollback(); return { state: 'in-flight' } }
 *     if (await tx.isProcessed(eventId)) { await tx.rollback(); return { state: 'completed' } }
 *     return { state: 'claimed', transaction: tx,
 *       commit: async () => { await tx.markProcessed(eventId); await tx.commit() },
 *       rollback: () => tx.rollback() }
 *   },
 * }
 */
export interface EventTransactions<TTransaction = unknown> {
  /**
   * Opens a transaction for `eventId` and claims the event in it, without waiting on another
   * transaction that holds it: `'in-flight'` then (answered 409). `'completed'` when the event was
   * already processed (answered 200, handlers not run). Must close any transaction it opened before
   * answering those two. Rejecting answers 503 `STORE_UNAVAILABLE`.
   */
  begin(eventId: string): Promise<BegunEvent<TTransaction>>;
}

/** What `EventTransactions.begin` answers. */
export type BegunEvent<TTransaction> =
  | { readonly state: 'completed' }
  | { readonly state: 'in-flight' }
  | OpenEvent<TTransaction>;

/** An open transaction holding one event, for its handlers. */
export interface OpenEvent<TTransaction> {
  readonly state: 'claimed';
  /** What the handlers get as `context.transaction`. */
  readonly transaction: TTransaction;
  /**
   * All handlers succeeded: records the event as processed and commits. Rejects when the commit
   * failed; then nothing the handlers wrote was kept and core answers 503 `STORE_UNAVAILABLE`, so
   * the service retries.
   */
  commit(): Promise<void>;
  /** A handler failed: rolls back, so none of its writes are kept and the next delivery runs it again. */
  rollback(): Promise<void>;
}

/** True when `value` has a `begin` method (an `EventTransactions`). */
export function isEventTransactions(value: unknown): value is EventTransactions {
  return typeof value === 'object' && value !== null && typeof (value as EventTransactions).begin === 'function';
}

/** The 503 for a transaction that could not be opened. */
export function beginFailed(cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'STORE_UNAVAILABLE',
    'The database transaction for this event could not be opened, so the event was not processed; the service will retry it.',
    { cause },
  );
}

/** The 503 for a commit that failed after the handlers succeeded. */
export function commitFailed(id: string, cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'STORE_UNAVAILABLE',
    `The handlers for event ${id} succeeded but their transaction could not be committed, so none of their writes were kept; the service will retry it.`,
    { cause },
  );
}

/** Told to `onError` when a rollback failed (the transaction is abandoned either way). */
export function rollbackFailed(id: string, cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'STORE_UNAVAILABLE',
    `The transaction for event ${id} could not be rolled back after a handler failed; nothing of it was committed.`,
    { cause },
  );
}

/** What `begin` answered, checked: anything but the three answers (or an open event without commit/rollback) is a failure. */
export function checkBegun(value: unknown): BegunEvent<unknown> {
  if (typeof value === 'object' && value !== null) {
    const begun = value as { state?: unknown; commit?: unknown; rollback?: unknown };
    if (begun.state === 'completed' || begun.state === 'in-flight') return { state: begun.state };
    if (begun.state === 'claimed' && typeof begun.commit === 'function' && typeof begun.rollback === 'function') {
      return value as OpenEvent<unknown>;
    }
  }
  throw new TypeError(
    'pixhook: transactions.begin() answered something other than { state: completed | in-flight } or an open event with commit() and rollback().',
  );
}
