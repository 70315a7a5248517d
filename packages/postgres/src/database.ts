import { createHash } from 'node:crypto';
import { describeType } from '@pixhook/core';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { ResolvedOptions } from './options.js';
import { type Statements, statements } from './sql.js';

/** What pixhook uses of a `pg` `Pool` (a `pg.Pool`, or one from another copy of `pg`). */
export type PoolLike = Pick<Pool, 'connect' | 'query'>;

export function assertPool(owner: string, pool: unknown): asserts pool is Pool {
  const candidate = pool as Partial<Pool> | null | undefined;
  if (typeof candidate?.connect !== 'function' || typeof candidate?.query !== 'function') {
    throw new TypeError(
      `pixhook: new ${owner}(pool) needs a node-postgres Pool (new pg.Pool({ connectionString })); got ${pool === null ? 'null' : typeof pool}.`,
    );
  }
}

/** Pools pixhook gave a fallback `error` listener, so each gets one only. */
const guardedPools = new WeakSet<object>();

/**
 * node-postgres emits `error` on the pool when an idle connection breaks (Postgres restarted, a
 * network cut); with no listener that event crashes the process. A pool nobody listens on gets one
 * that logs, at most once a minute: the pool has already dropped the broken connection.
 */
export function guardPool(pool: Pool): void {
  if (guardedPools.has(pool) || typeof pool.on !== 'function' || typeof pool.listenerCount !== 'function') return;
  guardedPools.add(pool);
  if (pool.listenerCount('error') > 0) return;
  let lastLogged = 0;
  pool.on('error', (error: Error) => {
    const now = Date.now();
    if (now - lastLogged < 60_000) return;
    lastLogged = now;
    console.error(
      `pixhook: @pixhook/postgres: an idle Postgres connection failed (${error.message}); the pool dropped it. Add pool.on('error', …) to handle these yourself.`,
    );
  });
}

/** The error of a step that did not answer within `timeoutMs`. */
export class PostgresTimeoutError extends Error {
  override readonly name = 'PostgresTimeoutError';
}

/**
 * Errors whose cause is the table or schema missing get a message that says what to do; `marks`:
 * the statement is on the ordering guard's marks, whose table came later than the events'.
 */
function explained(error: unknown, options: ResolvedOptions, marks = false): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (marks && code === '42P01') {
    return new Error(
      `pixhook: the ordering guard's table ${options.table.marks} does not exist: run migrate(pool) from @pixhook/postgres again (it adds the table beside ${options.table.qualified}), or apply its migration.sql.`,
      { cause: error },
    );
  }
  if (code === '42P01' || code === '3F000') {
    return new Error(
      `pixhook: the table ${options.table.qualified} does not exist: run migrate(pool) from @pixhook/postgres at startup, or apply its migration.sql.`,
      { cause: error },
    );
  }
  return error;
}

/** True for an error `explained` made of a missing table. */
function missingTable(error: unknown): boolean {
  return (error as { cause?: { code?: unknown } } | null)?.cause?.code === '42P01';
}

/**
 * A pool, the statements of one table, and the timeout of each step. Every step either answers
 * within `timeoutMs` or rejects with a `PostgresTimeoutError`.
 */
export class Database {
  readonly pool: Pool;
  readonly options: ResolvedOptions;
  readonly sql: Statements;
  /**
   * Each statement's name, under which node-postgres prepares it once per connection: Postgres
   * then skips parsing and planning it on every call, about half its CPU per event. Empty when
   * `preparedStatements` is off.
   */
  readonly #names = new Map<string, string>();
  #nextPrune = 0;

  constructor(pool: Pool, options: ResolvedOptions) {
    this.pool = pool;
    this.options = options;
    this.sql = statements(options.table);
    if (options.preparedStatements) {
      for (const text of Object.values(this.sql)) {
        // Named by the text's hash: two tables (or versions) never share a name on one connection.
        this.#names.set(text, `pixhook_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
      }
    }
    guardPool(pool);
    // The first delivery prunes what earlier runs left behind.
    this.#nextPrune = options.pruneIntervalMs === undefined ? Number.POSITIVE_INFINITY : 0;
  }

  /** Runs one statement on the pool (autocommit); `late` gets a result that came after the timeout. */
  query<R extends QueryResultRow>(
    text: string,
    values: readonly unknown[],
    what: string,
    late?: (result: QueryResult<R>) => void,
  ): Promise<QueryResult<R>> {
    return this.#bounded(this.pool.query<R>(this.#config(text, values)), what, late, this.#onMarks(text));
  }

  /**
   * Runs one statement on the pool, unbounded: for a `Batcher`, which bounds each of its callers and
   * explains the error to them (`explain`).
   */
  send<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    return this.pool.query<R>(this.#config(text, values));
  }

  /** `error` with a message that says what to do when its cause is the table missing. */
  explain(error: unknown): unknown {
    return explained(error, this.options);
  }

  /** Runs one statement on `client`; a client that did not answer in time is closed. */
  async queryOn<R extends QueryResultRow>(
    client: CheckedOut,
    text: string,
    values: readonly unknown[],
    what: string,
  ): Promise<QueryResult<R>> {
    try {
      return await this.#bounded(
        client.client.query<R>(this.#config(text, values)),
        what,
        undefined,
        this.#onMarks(text),
      );
    } catch (error) {
      if (error instanceof PostgresTimeoutError) client.destroy(error);
      throw error;
    }
  }

  /**
   * A connection from the pool, with an `error` listener for as long as it is out (node-postgres
   * crashes the process on a connection error nobody listens for). One that arrives after the
   * timeout is given back at once.
   */
  connect(): Promise<CheckedOut> {
    const connecting = this.pool.connect();
    return this.#bounded(connecting, 'a connection from the pool', (late: PoolClient) => late.release()).then(
      (client) => new CheckedOut(client),
    );
  }

  /** Deletes expired rows in the background, at most once per `pruneIntervalMs`. */
  maybePrune(): void {
    const now = Date.now();
    if (now < this.#nextPrune) return;
    this.#nextPrune = now + (this.options.pruneIntervalMs ?? 0);
    // A failure is harmless (expired rows count as absent) and the next interval tries again.
    this.prune().catch(() => {});
  }

  /**
   * The ordering guard's compare-and-set (`IdempotencyStore.advance`, `OpenEvent.advance`), one
   * statement: on the pool (autocommit), or on `connection`, in its open transaction (the mark then
   * commits or rolls back with it, and holds its row lock until then). Rejects, changing nothing,
   * for arguments that are not a key, a finite version and an event id.
   */
  async advance(
    owner: string,
    key: string,
    version: number,
    eventId: string,
    connection?: CheckedOut,
  ): Promise<'current' | 'stale'> {
    if (typeof key !== 'string' || key === '') {
      throw new TypeError(`pixhook: ${owner}: advance() takes a non-empty string key, got ${describeType(key)}.`);
    }
    if (typeof version !== 'number' || !Number.isFinite(version)) {
      throw new TypeError(`pixhook: ${owner}: advance() takes a finite number version, got ${describeType(version)}.`);
    }
    if (typeof eventId !== 'string' || eventId === '') {
      throw new TypeError(
        `pixhook: ${owner}: advance() takes a non-empty string event id, got ${describeType(eventId)}.`,
      );
    }
    // node-postgres sends a number as String(version): the shortest text that reads back as the
    // same double, so Postgres compares the very number core did.
    const values = [key, version, eventId, this.options.completedTtlMs];
    const what = 'advancing an ordering mark';
    const result = connection
      ? await this.queryOn(connection, this.sql.advance, values, what)
      : await this.query(this.sql.advance, values, what);
    return (result.rowCount ?? 0) > 0 ? 'current' : 'stale';
  }

  /**
   * Deletes every expired row, events then ordering marks, 10,000 at a time; resolves with how
   * many. A database migrated before the marks existed has no marks' table: nothing to prune there.
   */
  async prune(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await this.query(this.sql.prune, [10_000], 'deleting expired events');
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < 10_000) break;
    }
    for (;;) {
      let result: QueryResult;
      try {
        result = await this.query(this.sql.pruneMarks, [10_000], 'deleting expired ordering marks');
      } catch (error) {
        if (missingTable(error)) return deleted;
        throw error;
      }
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < 10_000) return deleted;
    }
  }

  /** True when `text` is a statement on the ordering guard's marks. */
  #onMarks(text: string): boolean {
    return text === this.sql.advance || text === this.sql.pruneMarks;
  }

  /** The query, named (prepared once per connection) when it is one of the store's statements. */
  #config(text: string, values: readonly unknown[]): QueryConfig {
    const name = this.#names.get(text);
    return name === undefined ? { text, values: values as unknown[] } : { name, text, values: values as unknown[] };
  }

  /** `pending`, or a `PostgresTimeoutError` after `timeoutMs`; `late` gets a value that came too late. */
  #bounded<T>(pending: Promise<T>, what: string, late?: (value: T) => void, marks = false): Promise<T> {
    return bounded(pending, this.options.timeoutMs, 'timeoutMs', what, {
      late,
      explain: (error) => explained(error, this.options, marks),
    });
  }
}

/**
 * `pending`, or a `PostgresTimeoutError` after `timeoutMs` (the option's name is `option`, for the
 * message): `late` gets a value that came too late, `onTimeout` runs when the time is up, and
 * `explain` rewrites an error that came in time (a missing table: say which migration to run).
 */
export function bounded<T>(
  pending: Promise<T>,
  timeoutMs: number,
  option: string,
  what: string,
  hooks: { late?: (value: T) => void; onTimeout?: () => void; explain: (error: unknown) => unknown },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      hooks.onTimeout?.();
      reject(new PostgresTimeoutError(`pixhook: Postgres did not answer within ${option} (${timeoutMs} ms): ${what}.`));
    }, timeoutMs);
    pending.then(
      (value) => {
        clearTimeout(timer);
        if (timedOut) hooks.late?.(value);
        else resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (!timedOut) reject(hooks.explain(error));
      },
    );
  });
}

/** A connection checked out of the pool, released exactly once. */
export class CheckedOut {
  readonly client: PoolClient;
  #released = false;
  #broken: Error | undefined;
  readonly #onError = (error: Error) => {
    this.#broken ??= error;
  };

  constructor(client: PoolClient) {
    this.client = client;
    client.on('error', this.#onError);
  }

  /** Back to the pool, or closed when it failed (then Postgres rolls back what was open on it). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    // A broken connection is closed by the pool and may still emit errors: keep listening to it.
    if (this.#broken === undefined) this.client.removeListener('error', this.#onError);
    try {
      this.client.release(this.#broken);
    } catch {
      // A handler released the connection itself: the pool has it back already.
    }
  }

  /** Closes the connection (Postgres rolls back its open transaction) instead of reusing it. */
  destroy(error: Error): void {
    this.#broken ??= error;
    this.release();
  }
}
