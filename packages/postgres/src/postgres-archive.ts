import { createHash } from 'node:crypto';
import {
  type ArchiveEntry,
  checkInboxQuery,
  describeType,
  INBOX_OUTCOMES,
  type InboxEvent,
  type InboxOutcome,
  type InboxPage,
  type InboxQuery,
  type InboxReader,
  type InboxSummary,
  type InboxTimelineEntry,
  inboxCursor,
  outcomeAfter,
  type WebhookArchive,
} from '@pixhook/core';
import type { Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { type ArchiveStatements, archiveStatements, type ListShape, listSql } from './archive-sql.js';
import { assertPool, bounded, CheckedOut, guardPool } from './database.js';
import { type PostgresArchiveOptions, type ResolvedArchiveOptions, resolveArchiveOptions } from './options.js';

/** Longest wait for a read (`list`, `get`, `requestReplay`, a replay poll) or a statement of pruning, in ms. */
const READ_TIMEOUT_MS = 30_000;
/** Rows deleted per statement while pruning: no statement holds its locks for long. */
const PRUNE_BATCH = 5_000;
/** Replay requests taken per poll. */
const REPLAYS_PER_POLL = 20;
const SAVEPOINT = 'SAVEPOINT pixhook_archive';
const RELEASE = 'RELEASE SAVEPOINT pixhook_archive';
const ROLLBACK_TO = 'ROLLBACK TO SAVEPOINT pixhook_archive';

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** What `record()` may write through: a node-postgres client (the event's `PoolClient`). */
interface Queryable {
  query<R extends QueryResultRow>(config: QueryConfig): Promise<QueryResult<R>>;
}

interface SummaryRow {
  event_id: string;
  event_type: string;
  created: number | null;
  first_at: string;
  last_at: string;
  outcome: InboxOutcome;
  deliveries: number;
  bytes: number;
  mode: InboxSummary['mode'];
}

interface EventRow extends SummaryRow {
  body: Buffer | null;
  headers: Record<string, string> | null;
  timeline: InboxTimelineEntry[];
}

function summary(row: SummaryRow): InboxSummary {
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    created: row.created ?? undefined,
    firstAt: Number(row.first_at),
    lastAt: Number(row.last_at),
    outcome: row.outcome,
    deliveries: row.deliveries,
    bytes: row.bytes,
    mode: row.mode,
  };
}

/**
 * What an entry does to its event's listed outcome, from core's `outcomeAfter`: the outcome of a
 * new event, and the outcome it sets on an existing one (undefined: it keeps its own).
 */
function outcomes(entry: ArchiveEntry): { created: InboxOutcome; set: InboxOutcome | null } {
  // Given an outcome before, the rule always gives one.
  const after = INBOX_OUTCOMES.map((before) => outcomeAfter(before, entry) as InboxOutcome);
  const keeps = after.every((outcome, index) => outcome === INBOX_OUTCOMES[index]);
  return { created: outcomeAfter(undefined, entry) as InboxOutcome, set: keeps ? null : (after[0] as InboxOutcome) };
}

/** Why `entry` cannot be recorded, or undefined. */
function entryProblem(entry: unknown): string | undefined {
  const candidate = entry as Partial<Record<keyof ArchiveEntry | 'body' | 'headers', unknown>> | null;
  if (typeof candidate !== 'object' || candidate === null)
    return `an entry must be an object, got ${describeType(entry)}`;
  if (candidate.kind !== 'delivery' && candidate.kind !== 'job' && candidate.kind !== 'replay') {
    return 'an entry needs kind "delivery", "job" or "replay"';
  }
  if (typeof candidate.eventId !== 'string' || candidate.eventId === '') return 'an entry needs an eventId';
  if (typeof candidate.eventType !== 'string') return 'an entry needs an eventType';
  if (typeof candidate.at !== 'number' || !Number.isFinite(candidate.at)) return 'an entry needs at (ms)';
  if (candidate.kind === 'delivery' && !(candidate.body instanceof Uint8Array)) return 'a delivery needs its body';
  return undefined;
}

/** The query's filters as a statement's shape and its parameters (in `listSql`'s order); a `TypeError` for a bad one. */
function checkedQuery(query: InboxQuery | undefined): { shape: ListShape; values: unknown[]; limit: number } {
  const q = checkInboxQuery(query ?? undefined, 'PostgresArchive.list()');
  const values: unknown[] = [];
  const given = (value: unknown): boolean => value !== undefined && values.push(value) > 0;
  const shape: ListShape = {
    type: given(q.type),
    outcome: given(q.outcome),
    since: given(q.since),
    until: given(q.until),
    eventId: given(q.eventId),
    deliveryId: given(q.deliveryId),
    cursor: q.after !== undefined && values.push(q.after.lastAt, q.after.eventId) > 0,
  };
  return { shape, values, limit: q.limit };
}

/**
 * The inbox on Postgres: every verified delivery's bytes and headers, and what became of its event
 * (handler runs, queue attempts, replays), kept for `retentionMs` and under `maxBytes`. Give it as
 * `new Webhooks({ archive })`; the CLI (`pixhook inbox`) and the dashboard read it.
 *
 * Tables: `pixhook_inbox`, `pixhook_inbox_timeline`, `pixhook_inbox_replays` (`migrateArchive()`).
 * `record()` is one statement (in transactional mode inside the event's transaction, under a
 * savepoint, so a failed write never fails the event); `list()` pages on an index, newest first,
 * and stays fast at millions of events.
 *
 * @example
 * await migrateArchive(pool)
 * const webhooks = new Webhooks({ secret: process.env.SIGNING_SECRET, archive: new PostgresArchive(pool) })
 */
export class PostgresArchive implements WebhookArchive, InboxReader {
  readonly #pool: Pool;
  readonly #options: ResolvedArchiveOptions;
  readonly #sql: ArchiveStatements;
  readonly #lists = new Map<string, string>();
  /** Statement names (prepared once per connection), by text; empty when `preparedStatements` is off. */
  readonly #names = new Map<string, string>();
  readonly #replayers: Array<(eventId: string) => Promise<unknown>> = [];
  #pollTimer: ReturnType<typeof setInterval> | undefined;
  #polling = false;
  #pruning: Promise<number> | undefined;
  #nextPrune = 0;
  #closed = false;

  /**
   * @param pool - a node-postgres `Pool` (it is not ended by pixhook)
   * @param options - the tables, retention, size cap and timings; each documented with its default
   */
  constructor(pool: Pool, options?: PostgresArchiveOptions) {
    assertPool('PostgresArchive', pool);
    this.#pool = pool;
    this.#options = resolveArchiveOptions(options);
    this.#sql = archiveStatements(this.#options.names);
    guardPool(pool);
    // The first record() prunes what earlier runs left behind.
    this.#nextPrune = this.#options.pruneIntervalMs === undefined ? Number.POSITIVE_INFINITY : 0;
  }

  /** Longest wait for `record()`, in ms: core answers anyway past it. */
  get writeTimeoutMs(): number {
    return this.#options.writeTimeoutMs;
  }

  /**
   * Writes one entry (core calls it). With `transaction` (a `pg` client in the event's open
   * transaction), it writes through it under `SAVEPOINT pixhook_archive`: it commits with the event,
   * and a failure is rolled back to the savepoint, so the event's transaction still commits.
   * Anything else as `transaction` is ignored (the entry is written through the pool).
   */
  async record(entry: ArchiveEntry, transaction?: unknown): Promise<void> {
    const problem = entryProblem(entry);
    if (problem !== undefined) throw new TypeError(`pixhook: PostgresArchive.record(): ${problem}.`);
    this.#maybePrune();
    const config = this.#config(this.#sql.record, this.#recordValues(entry));
    const { writeTimeoutMs } = this.#options;
    const what = `recording an archive entry (${entry.kind})`;
    const client = transaction as Partial<Queryable> | null | undefined;
    if (typeof client?.query !== 'function') {
      await bounded(this.#pool.query(config), writeTimeoutMs, 'writeTimeoutMs', what, { explain: this.#explain });
      return;
    }
    await this.#recordIn(client as Queryable, config, what);
  }

  /**
   * SAVEPOINT, the statement and RELEASE, or ROLLBACK TO SAVEPOINT when it failed. On a timeout,
   * ROLLBACK TO SAVEPOINT is queued on the client at once (it undoes the statement whether it fails
   * or lands later, and the statement is not sent if SAVEPOINT was still pending): the client runs it
   * before any COMMIT core sends after the timeout, so the archive never leaves the event's
   * transaction aborted.
   */
  async #recordIn(client: Queryable, config: QueryConfig, what: string): Promise<void> {
    let ended = false;
    const end = (statement: string): Promise<unknown> => {
      if (ended) return Promise.resolve();
      ended = true;
      return client.query({ text: statement });
    };
    const steps = (async () => {
      await client.query({ text: SAVEPOINT });
      if (ended) return;
      try {
        await client.query(config);
      } catch (error) {
        await end(ROLLBACK_TO).catch(() => {});
        throw error;
      }
      await end(RELEASE);
    })();
    await bounded(steps, this.#options.writeTimeoutMs, 'writeTimeoutMs', what, {
      onTimeout: () => void end(ROLLBACK_TO).catch(() => {}),
      explain: this.#explain,
    });
  }

  #recordValues(entry: ArchiveEntry): unknown[] {
    const { created, set } = outcomes(entry);
    const at = Math.floor(entry.at);
    if (entry.kind === 'delivery') {
      const { body, ...rest } = entry;
      const json = JSON.stringify(rest);
      const headers = JSON.stringify(entry.headers);
      const entryBytes = Buffer.byteLength(json);
      const kept = body.byteLength + Buffer.byteLength(headers) + entryBytes;
      const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      return [
        entry.eventId,
        entry.eventType,
        Number.isFinite(entry.created) ? entry.created : null,
        at,
        created,
        1,
        body.byteLength,
        kept,
        entry.mode,
        bytes,
        headers,
        set,
        entry.deliveryId,
        json,
        entryBytes,
      ];
    }
    const json = JSON.stringify(entry);
    const entryBytes = Buffer.byteLength(json);
    // A step before any delivery (a worker that finished before the delivery's own write): the
    // event's row waits for the delivery's body, headers and mode.
    const mode = entry.kind === 'job' ? 'queued' : 'inline';
    return [
      entry.eventId,
      entry.eventType,
      null,
      at,
      created,
      0,
      0,
      entryBytes,
      mode,
      null,
      null,
      set,
      null,
      json,
      entryBytes,
    ];
  }

  /** One page of events, newest first (by their last entry); `next` continues it. */
  async list(query?: InboxQuery): Promise<InboxPage> {
    const { shape, values, limit } = checkedQuery(query);
    const key = JSON.stringify(shape);
    let text = this.#lists.get(key);
    if (text === undefined) {
      text = listSql(this.#options.names, shape);
      this.#lists.set(key, text);
    }
    // One more than the page: whether there is a next one, without counting.
    const { rows } = await this.#read<SummaryRow>(text, [...values, limit + 1], 'listing the inbox');
    const items = rows.slice(0, limit).map(summary);
    const last = items[items.length - 1];
    return {
      items,
      next: rows.length > limit && last !== undefined ? inboxCursor(last.lastAt, last.eventId) : undefined,
    };
  }

  /** One event in full: its first delivery's bytes and headers, and its timeline, oldest first. */
  async get(eventId: string): Promise<InboxEvent | undefined> {
    if (typeof eventId !== 'string' || eventId === '') {
      throw new TypeError(
        `pixhook: PostgresArchive.get(): eventId must be a non-empty string, got ${describeType(eventId)}.`,
      );
    }
    const { rows } = await this.#read<EventRow>(this.#sql.get, [eventId], 'reading an event');
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      ...summary(row),
      body: row.body === null ? new Uint8Array(0) : new Uint8Array(row.body),
      headers: row.headers ?? {},
      timeline: row.timeline,
    };
  }

  /** Stores a replay request per archived event among `eventIds`; resolves with how many. */
  async requestReplay(eventIds: readonly string[]): Promise<number> {
    if (!Array.isArray(eventIds) || eventIds.some((id) => typeof id !== 'string')) {
      throw new TypeError('pixhook: PostgresArchive.requestReplay(): eventIds must be an array of strings.');
    }
    if (eventIds.length === 0) return 0;
    const result = await this.#read(this.#sql.requestReplay, [eventIds, Date.now()], 'requesting replays');
    return Number(result.rowCount);
  }

  /**
   * Hands replay requests to `replay` (core calls it from `new Webhooks({ archive })`): every
   * `replayPollMs`, takes up to 20 (each by one process) and replays them one after another. The
   * most recently attached `replay` gets them. Returns the function that detaches it.
   */
  attach(replay: (eventId: string) => Promise<unknown>): () => void {
    if (typeof replay !== 'function') {
      throw new TypeError(`pixhook: PostgresArchive.attach(): replay must be a function, got ${describeType(replay)}.`);
    }
    this.#replayers.push(replay);
    if (this.#pollTimer === undefined && !this.#closed) {
      this.#pollTimer = setInterval(() => void this.#poll(), this.#options.replayPollMs);
      this.#pollTimer.unref();
    }
    return () => {
      const index = this.#replayers.lastIndexOf(replay);
      if (index >= 0) this.#replayers.splice(index, 1);
      if (this.#replayers.length === 0) this.#stopPolling();
    };
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const { rows } = await this.#read<{ id: string; event_id: string }>(
        this.#sql.takeReplays,
        [REPLAYS_PER_POLL],
        'taking replay requests',
      );
      rows.sort((a, b) => Number(a.id) - Number(b.id));
      for (const row of rows) {
        const replay = this.#replayers[this.#replayers.length - 1];
        // Core reports a replay's failure itself.
        await replay?.(row.event_id).catch(() => {});
      }
    } catch (error) {
      this.#report(error);
    } finally {
      this.#polling = false;
    }
  }

  /**
   * Deletes the events past `retentionMs`, then the oldest while more than `maxBytes` are kept, 5,000
   * per statement; resolves with how many. One process at a time (an advisory lock): while another
   * prunes, this resolves 0. Runs by itself in the background of `record()` every `pruneIntervalMs`.
   */
  prune(): Promise<number> {
    this.#pruning ??= this.#pruneOnce().finally(() => {
      this.#pruning = undefined;
    });
    return this.#pruning;
  }

  #maybePrune(): void {
    const now = Date.now();
    if (now < this.#nextPrune || this.#closed) return;
    this.#nextPrune = now + (this.#options.pruneIntervalMs as number);
    this.prune().catch((error: unknown) => this.#report(error));
  }

  async #pruneOnce(): Promise<number> {
    const sql = this.#sql;
    const lock = `pixhook:archive-prune:${this.#options.names.events}`;
    const connection = new CheckedOut(
      await bounded(this.#pool.connect(), this.#options.writeTimeoutMs, 'writeTimeoutMs', 'a connection to prune', {
        late: (client) => client.release(),
        explain: this.#explain,
      }),
    );
    const run = <R extends QueryResultRow>(text: string, values: unknown[], what: string) =>
      bounded(connection.client.query<R>(this.#config(text, values)), READ_TIMEOUT_MS, 'its limit', what, {
        explain: this.#explain,
      });
    try {
      const lockRows = (await run<{ locked: boolean }>(sql.pruneLock, [lock], 'the prune lock')).rows;
      if (!(lockRows[0] as { locked: boolean }).locked) {
        connection.release();
        return 0;
      }
      let deleted = 0;
      for (;;) {
        const result = await run(sql.pruneExpired, [Date.now() - this.#options.retentionMs, PRUNE_BATCH], 'pruning');
        deleted += Number(result.rowCount);
        if (Number(result.rowCount) < PRUNE_BATCH) break;
      }
      const sum = await run<{ total: number }>(sql.keptTotal, [], 'summing the kept bytes');
      let excess = (sum.rows[0] as { total: number }).total - this.#options.maxBytes;
      while (excess > 0) {
        const { rows } = await run<{ kept: number }>(sql.pruneOldest, [excess, PRUNE_BATCH], 'pruning the oldest');
        deleted += rows.length;
        for (const row of rows) excess -= row.kept;
        // Fewer than a batch: the bytes were freed (or another client deleted what was left).
        if (rows.length < PRUNE_BATCH) break;
      }
      await run(sql.pruneUnlock, [lock], 'the prune lock');
      connection.release();
      return deleted;
    } catch (error) {
      // Unlocked now, so the next prune can run at once (a closed connection's lock lasts until
      // Postgres notices); a connection that cannot even do that is closed, which drops the lock.
      await run(sql.pruneUnlock, [lock], 'the prune lock').then(
        () => connection.release(),
        (unlockError: unknown) => connection.destroy(asError(unlockError)),
      );
      throw error;
    }
  }

  /** Stops polling for replays and pruning in the background. It does not end the pool. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#replayers.length = 0;
    this.#stopPolling();
    await this.#pruning?.catch(() => {});
  }

  /** What `console.log(archive)` shows. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PostgresArchive { table: ${this.#options.names.events} }`;
  }

  #stopPolling(): void {
    clearInterval(this.#pollTimer);
    this.#pollTimer = undefined;
  }

  #report(error: unknown): void {
    try {
      this.#options.onError?.(asError(error));
    } catch {
      // A listener that throws must not become an unhandled rejection.
    }
  }

  #read<R extends QueryResultRow>(text: string, values: unknown[], what: string): Promise<QueryResult<R>> {
    return bounded(this.#pool.query<R>(this.#config(text, values)), READ_TIMEOUT_MS, 'its limit', what, {
      explain: this.#explain,
    });
  }

  /** The query, named (prepared once per connection) unless `preparedStatements` is off. */
  #config(text: string, values: unknown[]): QueryConfig {
    if (!this.#options.preparedStatements) return { text, values };
    let name = this.#names.get(text);
    if (name === undefined) {
      // Named by the text's hash: two tables (or versions) never share a name on one connection.
      name = `pixhook_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.#names.set(text, name);
    }
    return { name, text, values };
  }

  /** A missing table or schema: say to run migrateArchive(). */
  readonly #explain = (error: unknown): unknown => {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === '42P01' || code === '3F000') {
      return new Error(
        `pixhook: the inbox's tables (${this.#options.names.events}) do not exist: run migrateArchive(pool) from @pixhook/postgres at startup, or apply its archive-migration.sql.`,
        { cause: error },
      );
    }
    return error;
  };
}
