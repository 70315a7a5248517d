import type { BegunEvent, EventTransactions, OpenEvent } from '@pixhook/core';
import type { Pool, PoolClient } from 'pg';
import { assertPool, type CheckedOut, Database } from './database.js';
import { type PostgresTransactionsOptions, resolveOptions } from './options.js';

const COMPLETED: BegunEvent<PoolClient> = { state: 'completed' };
const IN_FLIGHT: BegunEvent<PoolClient> = { state: 'in-flight' };

/**
 * Transactional handlers on Postgres: exactly-once effects. Given as `new Webhooks({ transactions })`,
 * each event's handlers run inside one transaction on one pool connection, given to them as
 * `context.transaction` (a `PoolClient`), and the record that the event was processed is written in
 * that same transaction. Commit: 200. A handler throws: rollback, none of its writes kept, 500, and
 * the service's retry runs it again.
 *
 * How an event is held: `BEGIN`, then a transaction-level advisory lock on the event taken without
 * waiting (`pg_try_advisory_xact_lock`): a second delivery while the transaction is open gets 409
 * `IN_FLIGHT` at once. Postgres drops the lock at commit or rollback, or when the connection dies
 * with its instance, so a crash leaves nothing behind: the next retry runs the event.
 *
 * @example
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, transactions: new PostgresTransactions(pool) })
 * webhooks.on('image.created', async (event, { transaction }) => {
 *   await transaction.query('INSERT INTO images (id) VALUES ($1)', [event.data.object.id])
 * })
 */
export class PostgresTransactions implements EventTransactions<PoolClient> {
  readonly #db: Database;
  readonly #lockPrefix: string;

  /**
   * @param pool - a node-postgres `Pool`: each event in progress holds one of its connections
   *   while its handlers run, so size it for your concurrency (it is not ended by pixhook)
   * @param options - table, `completedTtlMs` and `timeoutMs`; each documented with its default
   */
  constructor(pool: Pool, options?: PostgresTransactionsOptions) {
    assertPool('PostgresTransactions', pool);
    this.#db = new Database(pool, resolveOptions('PostgresTransactions', options));
    this.#lockPrefix = `${this.#db.options.table.qualified}:`;
  }

  /**
   * Opens the event's transaction: a connection, `BEGIN`, the lock (without waiting) and the check
   * that the event was not processed yet. Core calls it; you do not need to.
   */
  async begin(eventId: string): Promise<BegunEvent<PoolClient>> {
    const db = this.#db;
    db.maybePrune();
    const connection = await db.connect();
    try {
      await db.queryOn(connection, 'BEGIN', [], 'BEGIN');
      const lock = await db.queryOn<{ locked: boolean }>(connection, db.sql.lock, [this.#lockPrefix + eventId], 'lock');
      const state = lock.rows[0]?.locked
        ? (await db.queryOn<{ state: string }>(connection, db.sql.check, [eventId], 'check')).rows[0]?.state
        : 'in-flight';
      if (state === undefined) return this.#open(connection, eventId);
      await this.#end(connection, 'ROLLBACK');
      // A live `in-flight` row is a PostgresStore claim on the same table: another delivery runs it.
      return state === 'completed' ? COMPLETED : IN_FLIGHT;
    } catch (error) {
      connection.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  }

  /**
   * Deletes the rows of events past `completedTtlMs`, and resolves with how many. Runs by itself
   * every `pruneIntervalMs`; call it from a cron job when that is `false`.
   */
  prune(): Promise<number> {
    return this.#db.prune();
  }

  /** What `console.log(transactions)` shows. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PostgresTransactions { table: ${this.#db.options.table.qualified} }`;
  }

  #open(connection: CheckedOut, eventId: string): OpenEvent<PoolClient> {
    const db = this.#db;
    let ended = false;
    const once = (step: string) => {
      if (ended) throw new Error(`pixhook: PostgresTransactions: ${step} after the transaction ended.`);
      ended = true;
    };
    return {
      state: 'claimed',
      transaction: connection.client,
      commit: async () => {
        once('commit()');
        try {
          await db.queryOn(connection, db.sql.record, [eventId, db.options.completedTtlMs], 'recording the event');
          const result = await db.queryOn(connection, 'COMMIT', [], 'COMMIT');
          // Postgres answers COMMIT of a transaction an error aborted with ROLLBACK, not an error.
          if (result.command !== 'COMMIT') {
            throw new Error(
              'pixhook: PostgresTransactions: the transaction was rolled back instead of committed: a statement in it failed (did a handler catch a failed query?).',
            );
          }
        } catch (error) {
          connection.destroy(error instanceof Error ? error : new Error(String(error)));
          throw error;
        }
        connection.release();
      },
      rollback: async () => {
        once('rollback()');
        await this.#end(connection, 'ROLLBACK');
      },
    };
  }

  /** Ends the transaction with `ROLLBACK` and gives the connection back (closes it if that failed). */
  async #end(connection: CheckedOut, statement: 'ROLLBACK'): Promise<void> {
    try {
      await this.#db.queryOn(connection, statement, [], statement);
    } catch (error) {
      connection.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    connection.release();
  }
}
