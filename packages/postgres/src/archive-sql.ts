/**
 * The archive's SQL (`PostgresArchive`, `migrateArchive`): three tables named after one, built once
 * per archive from the checked names. Values always travel as parameters; only the schema and table
 * names are written into the text, quoted.
 */
import { identifier } from './sql.js';

/** The checked, quoted names of an archive's tables and indexes. */
export interface ArchiveNames {
  readonly schema: string;
  readonly table: string;
  /** `"schema"."table"`: one row per event. */
  readonly events: string;
  /** `"schema"."table_timeline"`: one row per entry. */
  readonly timeline: string;
  /** `"schema"."table_replays"`: replay requests not taken yet. */
  readonly replays: string;
  /** Unqualified, quoted index names. */
  readonly index: (suffix: string) => string;
}

/** The longest name derived from the table's: it must fit Postgres' 63 bytes too. */
const LONGEST_SUFFIX = '_timeline_delivery';

export function archiveNames(owner: string, schema: unknown, table: unknown): ArchiveNames {
  const quotedSchema = identifier(owner, 'schema', schema);
  const quotedTable = identifier(owner, 'table', table);
  identifier(owner, 'table', `${table as string}${LONGEST_SUFFIX}`);
  const name = table as string;
  const quoted = (suffix: string) => identifier(owner, 'table', `${name}${suffix}`);
  return {
    schema: schema as string,
    table: name,
    events: `${quotedSchema}.${quotedTable}`,
    timeline: `${quotedSchema}.${quoted('_timeline')}`,
    replays: `${quotedSchema}.${quoted('_replays')}`,
    index: quoted,
  };
}

/**
 * The migration: the events (one row per event: its first delivery's body and headers, its listed
 * outcome), their timeline (one row per entry, deleted with the event) and the replay requests.
 * Safe to run again (every statement is `IF NOT EXISTS`).
 *
 * - `first_at`, `last_at`: ms since the epoch; the list is ordered on (`last_at`, `event_id`), newest first.
 * - `bytes`: the body's size; `kept`: what the event keeps in bytes (body, headers and timeline
 *   entries), summed against `maxBytes`.
 * - `headers`, `entry`: `json`, not `jsonb`: kept as written (a `\u0000` in untrusted text is allowed).
 */
export function archiveMigrationSql(names: ArchiveNames): string {
  const { events, timeline, replays, index } = names;
  return `-- pixhook: the inbox, an archive of verified webhook deliveries (@pixhook/postgres, PostgresArchive).
CREATE TABLE IF NOT EXISTS ${events} (
  event_id   text             PRIMARY KEY,
  event_type text             NOT NULL,
  created    double precision,
  first_at   bigint           NOT NULL,
  last_at    bigint           NOT NULL,
  outcome    text             NOT NULL CHECK (outcome IN ('processed', 'failed', 'queued', 'dead-letter')),
  deliveries integer          NOT NULL,
  bytes      integer          NOT NULL,
  kept       bigint           NOT NULL,
  mode       text             NOT NULL,
  body       bytea,
  headers    json
);
CREATE INDEX IF NOT EXISTS ${index('_last_at')} ON ${events} (last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS ${index('_type')} ON ${events} (event_type, last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS ${index('_outcome')} ON ${events} (outcome, last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS ${index('_type_outcome')} ON ${events} (event_type, outcome, last_at DESC, event_id DESC);
CREATE TABLE IF NOT EXISTS ${timeline} (
  id          bigserial PRIMARY KEY,
  event_id    text      NOT NULL REFERENCES ${events} (event_id) ON DELETE CASCADE,
  at          bigint    NOT NULL,
  delivery_id text,
  entry       json      NOT NULL
);
CREATE INDEX IF NOT EXISTS ${index('_timeline_event')} ON ${timeline} (event_id, id);
CREATE INDEX IF NOT EXISTS ${index('_timeline_delivery')} ON ${timeline} (delivery_id) WHERE delivery_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS ${replays} (
  id           bigserial PRIMARY KEY,
  event_id     text      NOT NULL REFERENCES ${events} (event_id) ON DELETE CASCADE,
  requested_at bigint    NOT NULL
);
CREATE INDEX IF NOT EXISTS ${index('_replays_event')} ON ${replays} (event_id);
`;
}

/** The columns of a listed event. */
const SUMMARY = 'event_id, event_type, created, first_at, last_at, outcome, deliveries, bytes, mode';

/** The fixed statements of an archive on `names`. */
export function archiveStatements(names: ArchiveNames) {
  const { events: e, timeline: t, replays: r } = names;
  return {
    /**
     * One entry, in one statement: the event's row (inserted, or updated: `last_at`, the outcome,
     * the deliveries, `first_at` (its earliest delivery), and the body and headers when it had
     * none yet), then its timeline row.
     * $1 event id, $2 type, $3 created, $4 at (ms), $5 outcome when new, $6 deliveries (0 or 1),
     * $7 body size, $8 bytes kept by the event's first row, $9 mode, $10 body, $11 headers,
     * $12 outcome to set on an existing event (NULL: keep), $13 delivery id, $14 the entry (json),
     * $15 the entry's size.
     */
    record: `WITH event AS (
  INSERT INTO ${e} AS e (event_id, event_type, created, first_at, last_at, outcome, deliveries, bytes, kept, mode, body, headers)
  VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (event_id) DO UPDATE SET
    last_at = GREATEST(e.last_at, EXCLUDED.last_at),
    outcome = COALESCE($12, e.outcome),
    deliveries = e.deliveries + EXCLUDED.deliveries,
    kept = e.kept + CASE WHEN e.body IS NULL AND EXCLUDED.body IS NOT NULL THEN EXCLUDED.kept ELSE $15 END,
    first_at = CASE WHEN EXCLUDED.body IS NULL THEN e.first_at WHEN e.body IS NULL THEN EXCLUDED.first_at
      ELSE LEAST(e.first_at, EXCLUDED.first_at) END,
    created = CASE WHEN e.body IS NULL AND EXCLUDED.body IS NOT NULL THEN EXCLUDED.created ELSE e.created END,
    mode = CASE WHEN e.body IS NULL AND EXCLUDED.body IS NOT NULL THEN EXCLUDED.mode ELSE e.mode END,
    bytes = CASE WHEN e.body IS NULL AND EXCLUDED.body IS NOT NULL THEN EXCLUDED.bytes ELSE e.bytes END,
    headers = CASE WHEN e.body IS NULL AND EXCLUDED.body IS NOT NULL THEN EXCLUDED.headers ELSE e.headers END,
    body = COALESCE(e.body, EXCLUDED.body)
  RETURNING event_id
)
INSERT INTO ${t} (event_id, at, delivery_id, entry) SELECT event_id, $4, $13, $14 FROM event`,
    /** $1 event id: the event and its timeline, oldest first (on `at`, then as written: a job may end before its delivery is archived). */
    get: `SELECT ${SUMMARY}, body, headers,
  (SELECT coalesce(json_agg(t.entry ORDER BY t.at, t.id), '[]') FROM ${t} t WHERE t.event_id = e.event_id) AS timeline
FROM ${e} e WHERE event_id = $1`,
    /** $1 event ids, $2 now (ms): one request per archived event among them, in their order. */
    requestReplay: `INSERT INTO ${r} (event_id, requested_at)
SELECT e.event_id, $2 FROM ${e} e
JOIN (SELECT id, min(n) AS n FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n) GROUP BY id) u ON u.id = e.event_id
ORDER BY u.n`,
    /** $1 most requests: takes them (each one by one process), oldest first. */
    takeReplays: `DELETE FROM ${r} WHERE id IN (SELECT id FROM ${r} ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1)
RETURNING id, event_id`,
    /** $1 the lock's text: pruning, one process at a time (a session lock, on the pruning connection). */
    pruneLock: 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
    pruneUnlock: 'SELECT pg_advisory_unlock(hashtextextended($1, 0))',
    /** $1 cutoff (ms), $2 most rows: deletes events last seen before the cutoff, a bounded batch at a time. */
    pruneExpired: `DELETE FROM ${e} WHERE event_id IN (SELECT event_id FROM ${e} WHERE last_at < $1 ORDER BY last_at LIMIT $2) AND last_at < $1`,
    /** The bytes kept by every event. */
    keptTotal: `SELECT coalesce(sum(kept), 0)::float8 AS total FROM ${e}`,
    /**
     * $1 bytes to free, $2 most rows: deletes the oldest events (by `last_at`) until their kept
     * bytes reach $1, within a batch of $2; answers each one's kept bytes.
     */
    pruneOldest: `WITH oldest AS (
  SELECT event_id, kept, sum(kept) OVER (ORDER BY last_at, event_id) AS running
  FROM (SELECT event_id, kept, last_at FROM ${e} ORDER BY last_at, event_id LIMIT $2) o
)
DELETE FROM ${e} WHERE event_id IN (SELECT event_id FROM oldest WHERE running - kept < $1) RETURNING kept::float8 AS kept`,
  } as const;
}

export type ArchiveStatements = ReturnType<typeof archiveStatements>;

/** Which filters a list query has: each combination is its own statement (and plan). */
export interface ListShape {
  type: boolean;
  outcome: boolean;
  since: boolean;
  until: boolean;
  eventId: boolean;
  deliveryId: boolean;
  cursor: boolean;
}

/**
 * A page of the list: the filters given, newest first, keyset paging on (`last_at`, `event_id`)
 * (never OFFSET). Parameters in the order of `ListShape`'s fields that are set (the cursor is two:
 * last_at, event_id), then the limit.
 */
export function listSql(names: ArchiveNames, shape: ListShape): string {
  const where: string[] = [];
  let n = 0;
  const next = () => `$${++n}`;
  if (shape.type) where.push(`event_type = ${next()}`);
  if (shape.outcome) where.push(`outcome = ${next()}`);
  if (shape.since) where.push(`last_at >= ${next()}`);
  if (shape.until) where.push(`last_at < ${next()}`);
  if (shape.eventId) where.push(`event_id = ${next()}`);
  if (shape.deliveryId)
    where.push(`event_id IN (SELECT event_id FROM ${names.timeline} WHERE delivery_id = ${next()})`);
  if (shape.cursor) where.push(`(last_at, event_id) < (${next()}, ${next()})`);
  return `SELECT ${SUMMARY} FROM ${names.events}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}
ORDER BY last_at DESC, event_id DESC LIMIT ${next()}`;
}
