import { createHash, randomBytes } from 'node:crypto';
import {
  type BeginOptions,
  type BegunEvent,
  type CommitReadBack,
  describeType,
  type EventTransactions,
  type OpenEvent,
} from '@pixhook/core';
import type { Pool, PoolClient, QueryResult } from 'pg';
import { assertPool, type CheckedOut, Database, PostgresTimeoutError } from './database.js';
import { type PostgresTransactionsOptions, resolveOptions } from './options.js';
import { type PreparedNames, plainLiteral, statements, transactionScripts } from './sql.js';

/**
 * The statements each connection has prepared by SQL `PREPARE` (`transactionScripts().prepare`), by
 * its client: a connection the pool replaces is a new client, with none.
 */
const preparedOn = new WeakMap<object, Set<string>>();
/**
 * In every name this copy of the package prepares: two copies in one process (its ES module and
 * CommonJS builds) never prepare one name twice on a shared connection.
 */
const COPY = randomBytes(4).toString('hex');

const COMPLETED: BegunEvent<PoolClient> = { state: 'completed' };
const IN_FLIGHT: BegunEvent<PoolClient> = { state: 'in-flight' };

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Postgres answered the record and `COMMIT` with an error that rolled the transaction back: one the
 * record's INSERT raised (Postgres then skips the COMMIT), a deferred constraint (class 23) or a
 * serialization failure or deadlock (class 40) at COMMIT. Not: no answer, a connection error (08), an
 * administrator's termination or a cancel (57), a resource or system error (53, 58, XX): those may
 * have come after the commit.
 */
function refused(error: unknown): boolean {
  // A missing table's error is explained: its code is its cause's.
  const given = error as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof given?.code === 'string' ? given.code : given?.cause?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|53|57|58|XX)/.test(code);
}

/** The error of a transaction Postgres rolled back because a statement in it had failed. */
function rolledBack(cause: unknown): Error {
  return new Error(
    'pixhook: PostgresTransactions: the transaction was rolled back instead of committed: a statement in it failed (did a handler catch a failed query?).',
    cause === undefined ? undefined : { cause },
  );
}

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
 * A `COMMIT` whose answer is lost (it timed out, or its connection dropped) may still have
 * committed: the event's record is read back on another connection, once the event's lock is free.
 * There: 200, and `onError` is told the answer was lost. Absent: 503, nothing kept. The read-back
 * fails too (Postgres frozen or away): 503, and `onError` says the outcome is unknown; the retry
 * finds out (a duplicate if it was kept). Effects stay exactly-once either way.
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
  readonly #scripts: ReturnType<typeof transactionScripts>;
  readonly #prepared: PreparedNames | undefined;

  /**
   * @param pool - a node-postgres `Pool`: each event in progress holds one of its connections
   *   while its handlers run, so size it for your concurrency (it is not ended by pixhook)
   * @param options - table, `completedTtlMs` and `timeoutMs`; each documented with its default
   */
  constructor(pool: Pool, options?: PostgresTransactionsOptions) {
    assertPool('PostgresTransactions', pool);
    this.#db = new Database(pool, resolveOptions('PostgresTransactions', options));
    this.#lockPrefix = `${this.#db.options.table.qualified}:`;
    const { table, preparedStatements } = this.#db.options;
    if (preparedStatements) {
      // Named by the statements' text (and so the table): two tables never share a name.
      const { lock, check, record } = statements(table);
      const hash = createHash('sha256').update(`${lock};${check};${record}`).digest('hex');
      const name = (step: string) => `pixhook_${step}_${hash.slice(0, 16)}_${COPY}`;
      this.#prepared = { lock: name('lock'), check: name('check'), record: name('record') };
    }
    this.#scripts = transactionScripts(table, this.#prepared);
  }

  /**
   * Opens the event's transaction: a connection, `BEGIN`, the lock (without waiting) and the check
   * that the event was not processed yet. Core calls it; you do not need to. With `replay: true`
   * (a replay from the archive) the check is skipped on purpose: the handlers run again, and the
   * commit records the event again. Another transaction holding the event still answers `in-flight`.
   */
  async begin(eventId: string, options?: BeginOptions): Promise<BegunEvent<PoolClient>> {
    const replay = options?.replay ?? false;
    if (typeof replay !== 'boolean') {
      throw new TypeError(
        `pixhook: PostgresTransactions.begin(): replay must be true or false, got ${describeType(replay)}.`,
      );
    }
    const db = this.#db;
    db.maybePrune();
    const connection = await db.connect();
    try {
      const state = await this.#lockAndCheck(connection, eventId, replay);
      if (state === undefined) return this.#open(connection, eventId);
      await this.#end(connection, 'ROLLBACK');
      // A live `in-flight` row is a PostgresStore claim on the same table: another delivery runs it.
      return state === 'completed' ? COMPLETED : IN_FLIGHT;
    } catch (error) {
      connection.destroy(asError(error));
      throw error;
    }
  }

  /**
   * Deletes the rows of events (and ordering marks) past `completedTtlMs`, and resolves with how many. Runs by itself
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
        let committed: QueryResult | undefined;
        const literal = plainLiteral(eventId);
        if (literal === undefined) {
          // An id that travels as a parameter: the record, then COMMIT, a round trip each.
          try {
            await db.queryOn(connection, db.sql.record, [eventId, db.options.completedTtlMs], 'recording the event');
          } catch (error) {
            // COMMIT was never sent: closing the connection rolls the transaction back.
            connection.destroy(asError(error));
            throw error;
          }
        }
        try {
          if (literal === undefined) {
            committed = await db.queryOn(connection, 'COMMIT', [], 'COMMIT');
          } else {
            // One round trip: the record, then COMMIT (which Postgres skips when the record fails).
            const answers = (await db.queryOn(
              connection,
              this.#scripts.commit(literal, db.options.completedTtlMs, this.#isPrepared(connection.client)),
              [],
              'recording the event and COMMIT',
            )) as unknown as QueryResult[];
            committed = answers[1];
          }
        } catch (error) {
          connection.destroy(asError(error));
          // A statement failed because a handler left the transaction aborted: nothing was committed.
          if ((error as { code?: unknown } | null)?.code === '25P02') throw rolledBack(error);
          // Postgres answered with an error of the record or of COMMIT (a deferred constraint, a
          // serialization failure): rolled back.
          if (refused(error)) throw error;
          // No answer (a timeout, the connection dropped): the commit may have happened. Find out.
          return this.#readBack(eventId, error);
        }
        // Postgres answers COMMIT of a transaction an error aborted with ROLLBACK, not an error.
        if (committed?.command !== 'COMMIT') {
          const error = rolledBack(undefined);
          connection.destroy(error);
          throw error;
        }
        connection.release();
      },
      rollback: async () => {
        once('rollback()');
        await this.#end(connection, 'ROLLBACK');
      },
      // The ordering guard's mark, in this transaction: it moves only if the event commits.
      advance: async (key, version, eventId) => {
        if (ended) throw new Error('pixhook: PostgresTransactions: advance() after the transaction ended.');
        return db.advance('PostgresTransactions', key, version, eventId, connection);
      },
    };
  }

  /**
   * `BEGIN`, the event's lock (without waiting) and, unless `replay`, the check: `in-flight` when
   * another transaction holds the lock, else the event's live state (`undefined`: none). One round
   * trip when the values can be literals (`plainLiteral`); else a round trip per statement, with
   * parameters. Either way the check is a statement of its own after the lock's, so its snapshot
   * (READ COMMITTED: one per statement) is taken once the lock is held and sees the record of a
   * transaction that held the lock before.
   */
  async #lockAndCheck(connection: CheckedOut, eventId: string, replay: boolean): Promise<string | undefined> {
    const db = this.#db;
    const lockText = this.#lockPrefix + eventId;
    const lockLiteral = plainLiteral(lockText);
    const idLiteral = plainLiteral(eventId);
    if (lockLiteral !== undefined && idLiteral !== undefined) {
      const client = connection.client;
      const prepare = this.#prepared === undefined || this.#isPrepared(client) ? '' : this.#scripts.prepare;
      const answers = (await db.queryOn(
        connection,
        prepare + this.#scripts.begin(lockLiteral, idLiteral, !replay),
        [],
        'BEGIN, the lock and the check',
      )) as unknown as QueryResult[];
      if (prepare !== '' && this.#prepared !== undefined) {
        const names = preparedOn.get(client) ?? new Set<string>();
        names.add(this.#prepared.record);
        preparedOn.set(client, names);
      }
      // The PREPAREs' answers come first.
      const at = prepare === '' ? 0 : 3;
      if ((answers[at + 1]?.rows[0] as { locked?: boolean } | undefined)?.locked !== true) return 'in-flight';
      return (answers[at + 2]?.rows[0] as { state?: string } | undefined)?.state;
    }
    await db.queryOn(connection, 'BEGIN', [], 'BEGIN');
    const lock = await db.queryOn<{ locked: boolean }>(connection, db.sql.lock, [lockText], 'lock');
    if (lock.rows[0]?.locked !== true) return 'in-flight';
    if (replay) return undefined;
    return (await db.queryOn<{ state: string }>(connection, db.sql.check, [eventId], 'check')).rows[0]?.state;
  }

  /** True when `client`'s connection has this table's statements prepared (SQL `PREPARE`). */
  #isPrepared(client: object): boolean {
    return this.#prepared !== undefined && (preparedOn.get(client)?.has(this.#prepared.record) ?? false);
  }

  /**
   * The commit of `eventId` was sent but its answer was lost (`lost`): reads the event's record back
   * on another connection, within `timeoutMs`. It first takes the event's lock (waiting up to
   * `timeoutMs`): once the lost transaction has ended, committed or rolled back, the lock is free and
   * the record says which. Resolves `{ answerLost }` when the record is there (committed); rejects
   * with `commitOutcome: 'not-kept'` when it is not, or `'unknown'` when the read-back failed too.
   */
  async #readBack(eventId: string, lost: unknown): Promise<CommitReadBack> {
    const db = this.#db;
    const { timeoutMs } = db.options;
    let state: string | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const reading = (async () => {
        const connection = await db.connect();
        try {
          await db.queryOn(connection, 'BEGIN', [], 'BEGIN');
          await db.queryOn(connection, db.sql.lockTimeout, [`${timeoutMs}ms`], 'lock_timeout');
          await db.queryOn(connection, db.sql.waitLock, [this.#lockPrefix + eventId], 'waiting for the lock');
          const check = await db.queryOn<{ state: string }>(connection, db.sql.check, [eventId], 'check');
          await db.queryOn(connection, 'ROLLBACK', [], 'ROLLBACK');
          connection.release();
          return check.rows[0]?.state;
        } catch (error) {
          connection.destroy(asError(error));
          throw error;
        }
      })();
      // Past the deadline it fails or ends by itself (each step has its own timeout): nobody waits.
      reading.catch(() => {});
      state = await Promise.race([
        reading,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new PostgresTimeoutError(
                  `pixhook: Postgres did not answer within timeoutMs (${timeoutMs} ms): reading the event back.`,
                ),
              ),
            timeoutMs,
          );
        }),
      ]);
    } catch (readBackError) {
      throw Object.assign(
        new Error(
          `pixhook: PostgresTransactions: the answer to COMMIT was lost (${messageOf(lost)}) and reading the event back on another connection failed too (${messageOf(readBackError)}): whether the transaction committed is unknown; the retry finds out.`,
          { cause: lost },
        ),
        { commitOutcome: 'unknown' as const, readBackError },
      );
    } finally {
      clearTimeout(timer);
    }
    if (state === 'completed') return { answerLost: lost };
    throw Object.assign(
      new Error(
        `pixhook: PostgresTransactions: the answer to COMMIT was lost (${messageOf(lost)}), and the event's record is absent on another connection: the transaction was not committed.`,
        { cause: lost },
      ),
      { commitOutcome: 'not-kept' as const },
    );
  }

  /** Ends the transaction with `ROLLBACK` and gives the connection back (closes it if that failed). */
  async #end(connection: CheckedOut, statement: 'ROLLBACK'): Promise<void> {
    try {
      await this.#db.queryOn(connection, statement, [], statement);
    } catch (error) {
      connection.destroy(asError(error));
      throw error;
    }
    connection.release();
  }
}
