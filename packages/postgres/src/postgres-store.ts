import type { ClaimResult, IdempotencyStore } from '@pixhook/core';
import type { Pool } from 'pg';
import { Batcher } from './batch.js';
import { assertPool, Database } from './database.js';
import { type PostgresStoreOptions, resolveOptions } from './options.js';

/** One call of a step: the event and the claim's token. */
interface Step {
  readonly eventId: string;
  readonly token: string;
}

/** A completion's answer: recorded by it, and the event's live state after it. */
interface Completion {
  readonly done: boolean | number;
  readonly state: string | null;
}

/**
 * Statements of one kind in flight at once: beyond, calls wait for one to return and go together.
 * Two keep Postgres busy (one runs while the other's answer travels) and the batches large.
 */
const MAX_IN_FLIGHT = 2;

const claimResult = (answer: string | undefined): ClaimResult =>
  answer === 'claimed' || answer === 'completed' ? answer : 'in-flight';

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
  readonly #claims: Batcher<Step, ClaimResult> | undefined;
  readonly #completions: Batcher<Step, Completion> | undefined;

  /**
   * @param pool - a node-postgres `Pool` (it is not ended by pixhook)
   * @param options - table, TTLs and `timeoutMs`; each documented with its default
   */
  constructor(pool: Pool, options?: PostgresStoreOptions) {
    assertPool('PostgresStore', pool);
    const db = new Database(pool, resolveOptions('PostgresStore', options));
    this.#db = db;
    const { batchSize, timeoutMs } = db.options;
    if (batchSize > 1) {
      const shared = {
        key: (step: Step) => step.eventId,
        explain: (error: unknown) => db.explain(error),
        maxSize: batchSize,
        maxInFlight: MAX_IN_FLIGHT,
        timeoutMs,
      };
      this.#claims = new Batcher<Step, ClaimResult>({
        ...shared,
        what: 'claim',
        run: (steps) => this.#claimMany(steps),
        // Right after a claim, the event is held (in flight) or it was already completed.
        duplicate: (first) => (first === 'claimed' ? 'in-flight' : first),
      });
      // A second completion of one event waits for the next statement: it sees the first's.
      this.#completions = new Batcher<Step, Completion>({
        ...shared,
        what: 'complete',
        run: (steps) => this.#completeMany(steps),
      });
    }
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
    if (this.#claims !== undefined) {
      return this.#claims.submit({ eventId, token }, (late) => {
        if (late === 'claimed') this.release(eventId, token).catch(() => {});
      });
    }
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
    let row: Completion | undefined;
    if (this.#completions !== undefined) {
      row = await this.#completions.submit({ eventId, token });
    } else {
      const { rows } = await db.query<Completion>(
        db.sql.complete,
        [eventId, token, db.options.completedTtlMs],
        'complete',
      );
      row = rows[0];
    }
    if (row && (row.done || row.state === 'completed')) return;
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

  /** One statement for the claims of `steps` (one, alone, by the single-event statement). */
  async #claimMany(steps: readonly Step[]): Promise<ClaimResult[]> {
    const db = this.#db;
    const { rows } =
      steps.length === 1
        ? await db.send<{ result: string }>(db.sql.claim, [
            steps[0]?.eventId,
            steps[0]?.token,
            db.options.inFlightTtlMs,
          ])
        : await db.send<{ result: string }>(db.sql.claimMany, [
            steps.map((step) => step.eventId),
            steps.map((step) => step.token),
            db.options.inFlightTtlMs,
          ]);
    // No row visible (another claim inserted it after this statement's snapshot): in flight.
    if (steps.length === 1) return [claimResult(rows[0]?.result)];
    return steps.map((_, index) => claimResult(rows[index]?.result));
  }

  /** One statement for the completions of `steps` (one, alone, by the single-event statement). */
  async #completeMany(steps: readonly Step[]): Promise<Completion[]> {
    const db = this.#db;
    if (steps.length === 1) {
      const { rows } = await db.send<{ done: number; state: string | null }>(db.sql.complete, [
        steps[0]?.eventId,
        steps[0]?.token,
        db.options.completedTtlMs,
      ]);
      return [{ done: (rows[0]?.done ?? 0) > 0, state: rows[0]?.state ?? null }];
    }
    const { rows } = await db.send<Completion>(db.sql.completeMany, [
      steps.map((step) => step.eventId),
      steps.map((step) => step.token),
      db.options.completedTtlMs,
    ]);
    return steps.map((_, index) => ({ done: rows[index]?.done === true, state: rows[index]?.state ?? null }));
  }

  /** What `console.log(store)` shows. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PostgresStore { table: ${this.#db.options.table.qualified} }`;
  }
}
