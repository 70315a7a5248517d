/**
 * Every SQL statement pixhook runs, built once per store from the checked table name. Values always
 * travel as parameters; only the schema and table names are written into the text, quoted.
 */

/** A checked, quoted table name. */
export interface TableName {
  readonly schema: string;
  readonly table: string;
  /** `"schema"."table"`, ready for SQL text. */
  readonly qualified: string;
  /** The ordering guard's marks, `"schema"."<table>_marks"`, ready for SQL text. */
  readonly marks: string;
}

/** Postgres truncates identifiers to 63 bytes; a longer name would silently name another table. */
const MAX_IDENTIFIER_BYTES = 63;

/** `value` as a quoted SQL identifier, or a TypeError/RangeError saying why it cannot be one. */
export function identifier(owner: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`pixhook: ${owner}: ${name} must be a non-empty string.`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new TypeError(`pixhook: ${owner}: ${name} must not contain control characters.`);
  }
  if (Buffer.byteLength(value) > MAX_IDENTIFIER_BYTES) {
    throw new RangeError(`pixhook: ${owner}: ${name} is longer than Postgres' ${MAX_IDENTIFIER_BYTES}-byte limit.`);
  }
  return `"${value.replaceAll('"', '""')}"`;
}

export function tableName(owner: string, schema: unknown, table: unknown): TableName {
  const quotedSchema = identifier(owner, 'schema', schema);
  const quotedTable = identifier(owner, 'table', table);
  // The index's name is the table's with a suffix: it must fit too. The marks' table and index
  // (`_marks`, `_marks_exp`) have shorter suffixes: they fit whenever it does.
  identifier(owner, 'table', `${table as string}_expires_at`);
  return {
    schema: schema as string,
    table: table as string,
    qualified: `${quotedSchema}.${quotedTable}`,
    marks: `${quotedSchema}.${identifier(owner, 'table', `${table as string}_marks`)}`,
  };
}

/**
 * The migration: the events' table, one row per event, and an index for pruning; the ordering
 * guard's marks, one row per ordering key, and theirs. Safe to run again (every statement is
 * `IF NOT EXISTS`): an app migrated before the marks existed gets them by running it again.
 *
 * - `state`: `in-flight` (a `PostgresStore` claim held by `token`) or `completed`.
 * - `expires_at`: when the claim lapses, or when the completed event (or the mark) is forgotten; a
 *   row past it counts as absent, and `prune()` deletes it.
 * - `version`, `event_id` of a mark: the newest event seen for its key. `COLLATE "C"`: event ids
 *   compare byte by byte, as core's rule (JavaScript's order, for the ASCII ids the service sends).
 */
export function migrationSql(table: TableName): string {
  const index = `"${`${table.table}_expires_at`.replaceAll('"', '""')}"`;
  const marksIndex = `"${`${table.table}_marks_exp`.replaceAll('"', '""')}"`;
  return `-- pixhook: the table that records processed webhook events (@pixhook/postgres).
CREATE TABLE IF NOT EXISTS ${table.qualified} (
  event_id   text        PRIMARY KEY,
  state      text        NOT NULL CHECK (state IN ('in-flight', 'completed')),
  token      text,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ${index} ON ${table.qualified} (expires_at);
-- The ordering guard's marks (ordering: { key, version }): the newest event seen for each key.
CREATE TABLE IF NOT EXISTS ${table.marks} (
  key        text             PRIMARY KEY,
  version    double precision NOT NULL,
  event_id   text COLLATE "C" NOT NULL,
  expires_at timestamptz      NOT NULL
);
CREATE INDEX IF NOT EXISTS ${marksIndex} ON ${table.marks} (expires_at);
`;
}

/** Milliseconds from now, in SQL, from a parameter holding a number of milliseconds. */
const after = (param: string) => `now() + ${param}::bigint * interval '1 millisecond'`;

/**
 * `value` as an SQL string literal, when it can be one as it is: printable ASCII without a quote or a
 * backslash (an event id `evt_<suffix>` as the service sends them) cannot end the literal or escape
 * anything, in any client encoding and whatever `standard_conforming_strings` says. `undefined` for
 * any other text: it then travels as a parameter.
 */
export function plainLiteral(value: string): string | undefined {
  return /^[\x20-\x26\x28-\x5b\x5d-\x7e]*$/.test(value) ? `'${value}'` : undefined;
}

/**
 * Statements of `PostgresTransactions` sent together as one simple query (one round trip), each with
 * its own snapshot (READ COMMITTED takes one per statement, also within one query string). The simple
 * protocol has no parameters: the values are `plainLiteral`s (their callers send any other value
 * as parameters, one statement per round trip).
 */
export function transactionScripts(table: TableName, names?: PreparedNames) {
  const t = table.qualified;
  const sql = statements(table);
  return {
    /**
     * With `names`: prepares `lock`, `check` and `record` under them (SQL `PREPARE`, for this
     * session), sent before the first `begin` on each connection. Postgres then parses and plans
     * them once per connection, not per event.
     */
    prepare:
      names === undefined
        ? ''
        : `PREPARE ${names.lock}(text) AS ${sql.lock};PREPARE ${names.check}(text) AS ${sql.check};PREPARE ${names.record}(text, bigint) AS ${sql.record};`,
    /**
     * Opens the event's transaction: `BEGIN`, the lock without waiting (`lock`), and, unless
     * `check` is false (a replay), the event's live row. The check is a statement of its own, after
     * the lock's: its snapshot is taken once the lock is held, so it sees what a transaction that
     * held the lock before committed. (In the lock's own statement, the snapshot would be older than
     * the lock, and could miss a record committed in between.)
     */
    begin: (lockText: string, eventId: string, check: boolean) =>
      names === undefined
        ? `BEGIN;SELECT pg_try_advisory_xact_lock(hashtextextended(${lockText}, 0)) AS locked${
            check ? `;SELECT state FROM ${t} WHERE event_id = ${eventId} AND expires_at > now()` : ''
          }`
        : `BEGIN;EXECUTE ${names.lock}(${lockText})${check ? `;EXECUTE ${names.check}(${eventId})` : ''}`,
    /**
     * `record` and `COMMIT`: Postgres skips the COMMIT when the INSERT fails (the transaction stays
     * aborted, and the connection is closed). `prepared`: `record` is prepared on this connection.
     */
    commit: (eventId: string, completedTtlMs: number, prepared: boolean) =>
      names !== undefined && prepared
        ? `EXECUTE ${names.record}(${eventId}, ${Math.trunc(completedTtlMs)});COMMIT`
        : `INSERT INTO ${t} AS t (event_id, state, token, expires_at) VALUES (${eventId}, 'completed', NULL, now() + ${Math.trunc(completedTtlMs)}::bigint * interval '1 millisecond')
ON CONFLICT (event_id) DO UPDATE SET state = 'completed', token = NULL, expires_at = EXCLUDED.expires_at, updated_at = now();COMMIT`,
  } as const;
}

/** The names `transactionScripts` prepares its statements under (plain lower-case identifiers). */
export interface PreparedNames {
  readonly lock: string;
  readonly check: string;
  readonly record: string;
}

/** The statements of a store on `table`. */
export function statements(table: TableName) {
  const t = table.qualified;
  return {
    /**
     * $1 event id, $2 token, $3 in-flight ms. Claims the event unless a live row holds it; answers
     * `claimed`, or the live row's state. No row at all: another claim inserted it after this
     * statement's snapshot was taken, so it is in flight.
     */
    claim: `WITH claimed AS (
  INSERT INTO ${t} AS t (event_id, state, token, expires_at) VALUES ($1, 'in-flight', $2, ${after('$3')})
  ON CONFLICT (event_id) DO UPDATE SET state = 'in-flight', token = EXCLUDED.token, expires_at = EXCLUDED.expires_at, updated_at = now()
  WHERE t.expires_at <= now()
  RETURNING 'claimed'::text AS result
)
SELECT result FROM claimed
UNION ALL
SELECT state FROM ${t} WHERE event_id = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
    /**
     * $1 event ids, $2 tokens (distinct ids, in the order their rows are locked), $3 in-flight ms:
     * `claim` for many events at once, one row per id, in order. Group commit: concurrent claims
     * share one round trip and one commit. The arrays are read through `(SELECT $n)`: Postgres then
     * plans for no particular length, and keeps one generic plan per connection instead of planning
     * each call again for its length (about half the statement's CPU for a few rows).
     */
    claimMany: `WITH input AS (
  SELECT i.event_id, i.token, i.n FROM unnest((SELECT $1::text[]), (SELECT $2::text[])) WITH ORDINALITY AS i(event_id, token, n)
), claimed AS (
  INSERT INTO ${t} AS t (event_id, state, token, expires_at)
  SELECT event_id, 'in-flight', token, ${after('$3')} FROM input ORDER BY n
  ON CONFLICT (event_id) DO UPDATE SET state = 'in-flight', token = EXCLUDED.token, expires_at = EXCLUDED.expires_at, updated_at = now()
  WHERE t.expires_at <= now()
  RETURNING t.event_id
)
SELECT CASE WHEN c.event_id IS NOT NULL THEN 'claimed'::text ELSE (SELECT state FROM ${t} WHERE event_id = i.event_id) END AS result
FROM input i LEFT JOIN claimed c ON c.event_id = i.event_id
ORDER BY i.n`,
    /**
     * $1 event id, $2 token, $3 completed ms. Records the completion when `token` holds the claim or
     * nobody live does; `done` 0 and `state` not `completed`: another claim holds the event.
     */
    complete: `WITH done AS (
  INSERT INTO ${t} AS t (event_id, state, token, expires_at) VALUES ($1, 'completed', NULL, ${after('$3')})
  ON CONFLICT (event_id) DO UPDATE SET state = 'completed', token = NULL, expires_at = EXCLUDED.expires_at, updated_at = now()
  WHERE t.expires_at <= now() OR (t.state = 'in-flight' AND t.token = $2)
  RETURNING 1
)
SELECT (SELECT count(*) FROM done)::int AS done, (SELECT state FROM ${t} WHERE event_id = $1 AND expires_at > now()) AS state`,
    /**
     * $1 event ids, $2 tokens (distinct ids, in the order their rows are locked), $3 completed ms:
     * `complete` for many events at once, one row per id, in order. The token travels in the
     * inserted row to be compared with the claim's (`EXCLUDED.token`); an event without a live row
     * gets a completed row that keeps it, which nothing reads (every statement on a token also
     * requires `state = 'in-flight'`).
     */
    completeMany: `WITH input AS (
  SELECT i.event_id, i.token, i.n FROM unnest((SELECT $1::text[]), (SELECT $2::text[])) WITH ORDINALITY AS i(event_id, token, n)
), done AS (
  INSERT INTO ${t} AS t (event_id, state, token, expires_at)
  SELECT event_id, 'completed', token, ${after('$3')} FROM input ORDER BY n
  ON CONFLICT (event_id) DO UPDATE SET state = 'completed', token = NULL, expires_at = EXCLUDED.expires_at, updated_at = now()
  WHERE t.expires_at <= now() OR (t.state = 'in-flight' AND t.token = EXCLUDED.token)
  RETURNING t.event_id
)
SELECT (d.event_id IS NOT NULL) AS done, (SELECT state FROM ${t} WHERE event_id = i.event_id AND expires_at > now()) AS state
FROM input i LEFT JOIN done d ON d.event_id = i.event_id
ORDER BY i.n`,
    /** $1 event id, $2 token: drops the claim if `token` still holds it. */
    release: `DELETE FROM ${t} WHERE event_id = $1 AND state = 'in-flight' AND token = $2`,
    /** $1 event id, $2 token, $3 in-flight ms: renews `token`'s live claim. */
    extend: `UPDATE ${t} SET expires_at = ${after('$3')}, updated_at = now()
WHERE event_id = $1 AND state = 'in-flight' AND token = $2 AND expires_at > now()`,
    /**
     * $1 the lock's text (table and event id): the transaction's lock on the event, taken without
     * waiting. Released by Postgres at commit or rollback, or when the connection drops.
     */
    lock: 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
    /** $1 a duration ('500ms'): how long `waitLock` may wait, for this transaction only. */
    lockTimeout: "SELECT set_config('lock_timeout', $1, true)",
    /**
     * $1 the lock's text: the same lock as `lock`, waiting for it (up to `lock_timeout`). Reading a
     * commit back: once the lock is free, the transaction that held it has ended.
     */
    waitLock: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
    /** $1 event id: the event's live row, if any (a separate statement, so it sees what committed before the lock). */
    check: `SELECT state FROM ${t} WHERE event_id = $1 AND expires_at > now()`,
    /** $1 event id, $2 completed ms: records the event as processed, inside the transaction. */
    record: `INSERT INTO ${t} AS t (event_id, state, token, expires_at) VALUES ($1, 'completed', NULL, ${after('$2')})
ON CONFLICT (event_id) DO UPDATE SET state = 'completed', token = NULL, expires_at = EXCLUDED.expires_at, updated_at = now()`,
    /**
     * $1 most rows: deletes expired rows, a bounded batch at a time. The outer condition is checked
     * again on each row, so one claimed again meanwhile stays.
     */
    prune: `DELETE FROM ${t} WHERE event_id IN (SELECT event_id FROM ${t} WHERE expires_at <= now() LIMIT $1) AND expires_at <= now()`,
    /**
     * $1 key, $2 version, $3 event id, $4 completed ms: the ordering guard's compare-and-set, one
     * statement. Keeps the event as the key's mark when there is none, it expired, or the event is
     * at least as new as it (core's rule: a greater version, or an equal one with an event id not
     * smaller), and returns a row; else changes nothing and returns none. Concurrent calls on one
     * key wait for each other's row lock (until commit, in a transaction) and see its result.
     */
    advance: `INSERT INTO ${table.marks} AS m (key, version, event_id, expires_at) VALUES ($1, $2, $3, ${after('$4')})
ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, event_id = EXCLUDED.event_id, expires_at = EXCLUDED.expires_at
WHERE m.expires_at <= now() OR (m.version, m.event_id) <= (EXCLUDED.version, EXCLUDED.event_id)
RETURNING 1 AS current`,
    /** $1 most rows: deletes expired marks, a bounded batch at a time, as `prune`. */
    pruneMarks: `DELETE FROM ${table.marks} WHERE key IN (SELECT key FROM ${table.marks} WHERE expires_at <= now() LIMIT $1) AND expires_at <= now()`,
  } as const;
}

export type Statements = ReturnType<typeof statements>;
