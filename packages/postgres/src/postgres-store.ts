import type { ClaimResult, IdempotencyStore } from '@pixhook/core';
import type { Pool } from 'pg';
import { assertPool, Database } from './database.js';
import { type PostgresStoreOptions, resolveOptions } from './options.js';

/**
 * An `IdempotencyStore` on Postgres, for several app instances behind one endpoint URL: each event's
 * handlers run once across all of them. One row per event in the table `migrate()` creates; every
 * step is one statement, bounded by `timeoutMs` (503 `STORE_UNAVAILABLE` past it).
 *
 * It records that handlers *ran*; for their writes to the same database to commit with that record
 * (exactly-once effects), use `PostgresTransactions` instead.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * await migrate(pool)
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, store: new PostgresStore(pool) })
 */
export class PostgresStore implements IdempotencyStore {
  readonly #db: Database;

  /**
   * @param pool - a node-postgres `Pool` (it is not ended by pixhook)
   * @param options - table, TTLs and `timeoutMs`; each documented with its default
   */
  constructor(pool: Pool, options?: PostgresStoreOptions) {
    assertPool('PostgresStore', pool);
    this.#db = new Database(pool, resolveOptions('PostgresStore', options));
  }

  /** How long a claim holds, in ms (core renews a slow handler's claim every third of it). */
  get inFlightTtlMs(): number {
    return this.#db.options.inFlightTtlMs;
  }

  async claim(eventId: string, token: string): Promise<ClaimResult> {
    const db = this.#db;
    db.maybePrune();
    // A claim that lands after the timeout would hold the event for inFlightTtlMs with nobody
    // running it: give it back once Postgres has answered (not before: the release would find nothing).
    const result = await db.query<{ result: string }>(
      db.sql.claim,
      [eventId, token, db.options.inFlightTtlMs],
      'claim',
      (late) => {
        if (late.rows[0]?.result === 'claimed') this.release(eventId, token).catch(() => {});
      },
    );
    const answer = result.rows[0]?.result;
    if (answer === 'claimed' || answer === 'completed') return answer;
    return 'in-flight';
  }

  async complete(eventId: string, token: string): Promise<void> {
    const db = this.#db;
    const { rows } = await db.query<{ done: number; state: string | null }>(
      db.sql.complete,
      [eventId, token, db.options.completedTtlMs],
      'complete',
    );
    const row = rows[0];
    if (row && (row.done > 0 || row.state === 'completed')) return;
    throw new Error(
      `pixhook: PostgresStore: event ${eventId} is claimed by another delivery now (this run's claim expired), so its completion was not recorded.`,
    );
  }

  async release(eventId: string, token: string): Promise<void> {
    await this.#db.query(this.#db.sql.release, [eventId, token], 'release');
  }

  async extend(eventId: string, token: string): Promise<boolean> {
    const db = this.#db;
    const result = await db.query(db.sql.extend, [eventId, token, db.options.inFlightTtlMs], 'extend');
    return (result.rowCount ?? 0) > 0;
  }

  /**
   * The ordering guard's compare-and-set (core calls it; you do not need to): when (`version`,
   * `eventId`) is at least as new as the mark kept for `key` (a greater version, or an equal one
   * with an event id that is not smaller), or there is none, keeps it as the mark for
   * `completedTtlMs` and resolves `'current'`; else changes nothing and resolves `'stale'`. One
   * statement on the marks' table `migrate()` creates (`<table>_marks`), atomic across instances.
   * Rejects when Postgres fails or does not answer within `timeoutMs`.
   * @example await store.advance('image:img_1', 1_700_000_000, 'evt_1') // 'current'
   */
  advance(key: string, version: number, eventId: string): Promise<'current' | 'stale'> {
    return this.#db.advance('PostgresStore', key, version, eventId);
  }

  /**
   * Deletes the rows of events (and ordering marks) past their TTL, and resolves with how many. Runs by itself every
   * `pruneIntervalMs`; call it from a cron job when that is `false`.
   */
  prune(): Promise<number> {
    return this.#db.prune();
  }

  /** What `console.log(store)` shows. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PostgresStore { table: ${this.#db.options.table.qualified} }`;
  }
}
