import { WebhookVerificationError } from '../protocol/errors.js';

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
  begin(eventId: string, options?: BeginOptions): Promise<BegunEvent<TTransaction>>;
}

/** What `EventTransactions.begin` is asked besides the event id. */
export interface BeginOptions {
  /**
   * A replay from the archive (`webhooks.replay()`): take the lock as usual, but open the
   * transaction even when the event was processed before, so its handlers run again and the commit
   * records it again. An implementation that does not know this option answers `'completed'` for a
   * processed event, and the replay says so.
   */
  readonly replay?: boolean;
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
   * All handlers succeeded: records the event as processed and commits. Resolves once committed
   * (core answers 200). Rejects when the commit failed, so the service retries (503
   * `STORE_UNAVAILABLE`): by default that means nothing the handlers wrote was kept; reject with an
   * error whose `commitOutcome` is `'unknown'` when the commit's answer was lost (a timeout, a dropped
   * connection) and whether it was kept could not be found out. When the answer was lost but the
   * event's record was read back on another connection, resolve with a `CommitReadBack`: core
   * answers 200 and tells `onError` what was lost.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an implementation that returns nothing (`async () => {}`) must fit.
  commit(): Promise<void | CommitReadBack>;
  /** A handler failed: rolls back, so none of its writes are kept and the next delivery runs it again. */
  rollback(): Promise<void>;
  /**
   * Optional; needed by the ordering guard in transactional mode: `IdempotencyStore.advance`, in
   * this transaction, so the mark moves only if it commits (and holds its row until then).
   */
  advance?(key: string, version: number, eventId: string): Promise<'current' | 'stale'>;
}

/**
 * What `OpenEvent.commit()` resolves with when the commit's own answer was lost but the event's
 * record was read back on another connection: the transaction was committed.
 */
export interface CommitReadBack {
  /** Why the commit's answer was lost (the timeout or the connection's error). */
  readonly answerLost: unknown;
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

/**
 * The 503 for a commit that failed after the handlers succeeded: nothing kept, or (the commit's
 * answer lost and not read back: a `cause` whose `commitOutcome` is `'unknown'`) unknown.
 */
export function commitFailed(id: string, cause: unknown): WebhookVerificationError {
  const unknown = (cause as { commitOutcome?: unknown } | null)?.commitOutcome === 'unknown';
  return new WebhookVerificationError(
    'STORE_UNAVAILABLE',
    unknown
      ? `The handlers for event ${id} succeeded but the answer to their commit was lost and could not be read back, so whether their writes were kept is unknown; the service will retry it, and the retry finds out: a duplicate if the commit was kept, a new run if not.`
      : `The handlers for event ${id} succeeded but their transaction could not be committed, so none of their writes were kept; the service will retry it.`,
    { cause },
  );
}

/** Told to `onError` (the answer is 200) when the commit's answer was lost but its record was read back. */
export function commitReadBack(id: string, answer: unknown): WebhookVerificationError | undefined {
  if (typeof answer !== 'object' || answer === null || !('answerLost' in answer)) return undefined;
  return new WebhookVerificationError(
    'STORE_UNAVAILABLE',
    `The answer to the commit of event ${id} was lost, but the event's record was read back on another connection: the transaction was committed and the event is processed.`,
    { cause: (answer as CommitReadBack).answerLost },
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
