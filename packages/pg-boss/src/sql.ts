/**
 * The few statements PgBossQueue runs on pg-boss's own tables (pg-boss 10's schema: `job`,
 * partitioned by queue name, and `archive`), for what pg-boss 10 has no API for: listing, counting,
 * retrying with every attempt anew and discarding its failed jobs, failing a job at once whatever
 * retries it has left, counting the queue's jobs by state; and for speed: writing a batch of
 * deliveries' jobs in one statement (as `send()` writes one, not re-adding a job of its archive),
 * fetching the next jobs by pg-boss's fetch index, and completing a batch of jobs (and fetching
 * as many) in one.
 * Everything else goes through pg-boss's API (`fail`, `createQueue`).
 *
 * The schema is written into the text unquoted, as pg-boss itself does (so it folds to lower case
 * the same way); it was checked against pg-boss's own rule (letters, digits, `_`). Every value
 * travels as a parameter: $1 is always the queue's name.
 */

const DEAD_COLUMNS = `id, data, retry_count AS "retryCount", created_on AS "createdOn", completed_on AS "completedOn", output`;

export function pgBossStatements(schema: string) {
  const job = `${schema}.job`;
  const archive = `${schema}.archive`;
  /** Failed jobs (dead letters) of the queue, in the job table and in pg-boss's archive. */
  const dead = (where = '') => `SELECT ${DEAD_COLUMNS} FROM ${job} WHERE name = $1 AND state = 'failed'${where}
  UNION ALL
  SELECT ${DEAD_COLUMNS} FROM ${archive} WHERE name = $1 AND state = 'failed'${where}`;
  return {
    /** Fails with 42P01 / 3F000 when pg-boss's tables are not in this schema. */
    probe: `SELECT policy FROM ${schema}.queue WHERE name = $1`,

    /**
     * A batch of deliveries' jobs in one statement (one round trip, one commit). $2 a JSON array of
     * `{ id, data }`, $3 retry limit, $4 retry delay (s), $5 retry backoff, $6 expiration (s), $7
     * the boss's retention (\`keepUntil\`: an interval, or null).
     *
     * Each job as pg-boss's `send()` inserts it (its `insertJob`: the queue's dead letter and
     * policy, \`keep_until\` from the queue's retention, else the boss's, else 14 days), `ON CONFLICT
     * DO NOTHING` on the queue and id, except the ids pg-boss's archive holds (a re-delivery of an
     * event done and archived adds nothing). An id twice in the
     * batch is inserted once. `queue`: false when the queue does not exist (nothing is inserted:
     * pg-boss's insert joins the queue table). No notification here: see `notify`.
     */
    enqueue: `WITH input AS (
  SELECT DISTINCT ON (id) id, data, ord FROM (
    SELECT (e->>'id')::uuid AS id, (e->'data')::jsonb AS data, ord
    FROM json_array_elements($2::json) WITH ORDINALITY AS t(e, ord)
  ) given ORDER BY id, ord
), q AS (
  SELECT name, policy, retention_minutes, dead_letter FROM ${schema}.queue WHERE name = $1
), archived AS (
  SELECT id FROM ${archive} WHERE name = $1 AND id IN (SELECT id FROM input)
), inserted AS (
  INSERT INTO ${job} (id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter,
    expire_in, keep_until, retry_limit, retry_delay, retry_backoff, policy)
  SELECT i.id, q.name, i.data, 0, now(), NULL, NULL, q.dead_letter, $6::int * interval '1s',
    now() + CAST(COALESCE((q.retention_minutes * 60)::text, $7::text, '14 days') AS interval),
    $3::int, CASE WHEN $5::bool THEN GREATEST($4::int, 1) ELSE $4::int END, $5::bool, q.policy
  FROM input i CROSS JOIN q
  WHERE i.id NOT IN (SELECT id FROM archived)
  ORDER BY i.ord
  ON CONFLICT DO NOTHING
  RETURNING id
)
SELECT EXISTS (SELECT 1 FROM q) AS queue, (SELECT count(*) FROM inserted)::int AS inserted`,

    /**
     * $1 the channel: tells the workers listening that jobs were queued. A statement of its own,
     * after the jobs' commit: a NOTIFY in the insert's transaction would hold Postgres' notification
     * lock through that commit's WAL flush, so concurrent batches would commit one flush after
     * another instead of sharing one; alone it writes no WAL and waits for no flush.
     */
    notify: `SELECT pg_notify($1, '')`,

    /**
     * $2 most jobs: takes the next jobs ready to run, as pg-boss's `fetch()` does (state `active`,
     * `started_on`, a retry counted when the job ran before), skipping those another worker holds,
     * in the order of pg-boss's fetch index (\`job_i5\`: queue, then \`start_after\`, for the jobs
     * not yet active). pg-boss's own fetch orders by priority and creation, which that index does not
     * hold, so it reads and sorts every waiting job of the queue on each fetch: its cost grew with the
     * backlog (~1.5 ms of Postgres CPU per job fetched one at a time behind 2,000 waiting). pixhook
     * gives every job priority 0 and keeps no order between jobs (a retry runs by its \`start_after\`).
     */
    fetch: `WITH next AS (
  SELECT id FROM ${job}
  WHERE name = $1 AND state < 'active' AND start_after < now()
  ORDER BY start_after
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE ${job} j SET state = 'active', started_on = now(),
  retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END
FROM next
WHERE j.name = $1 AND j.id = next.id
RETURNING j.id, j.data, j.retry_count AS "retryCount", j.retry_limit AS "retryLimit", j.created_on AS "createdOn", j.output`,

    /**
     * $2 uuid[], $3 most jobs: completes these active jobs (as pg-boss's `complete()` with no data:
     * state `completed`, `completed_on`, no output) and takes up to $3 next jobs as `fetch` does, in
     * one statement (one round trip, one commit for a worker's slots freed and filled again). Rows
     * with `done` true: the ids it completed (one not there any more, or not active, was failed by
     * maintenance meanwhile); the others: the jobs fetched.
     */
    completeAndFetch: `WITH done AS (
  UPDATE ${job} SET completed_on = now(), state = 'completed', output = NULL
  WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'active'
  RETURNING id
), next AS (
  SELECT id FROM ${job}
  WHERE name = $1 AND state < 'active' AND start_after < now()
  ORDER BY start_after
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), fetched AS (
  UPDATE ${job} j SET state = 'active', started_on = now(),
    retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END
  FROM next
  WHERE j.name = $1 AND j.id = next.id
  RETURNING j.id, j.data, j.retry_count, j.retry_limit, j.created_on, j.output
)
SELECT true AS done, id, NULL::jsonb AS data, NULL::int AS "retryCount", NULL::int AS "retryLimit",
  NULL::timestamptz AS "createdOn", NULL::jsonb AS output FROM done
UNION ALL
SELECT false, id, data, retry_count, retry_limit, created_on, output FROM fetched`,

    /**
     * $2 job id, $3 output (JSON text): fails an active job at once, whatever retries it has left, as
     * pg-boss's `fail()` fails one out of retries (state `failed`, `completed_on`, the output). Its
     * retry limit is left alone, so a retry of the dead letter has all its attempts. No row: the job
     * was not active any more (pg-boss's maintenance expired it meanwhile).
     */
    failNow: `UPDATE ${job} SET state = 'failed', completed_on = now(), output = $3::jsonb
WHERE name = $1 AND id = $2::uuid AND state = 'active'
RETURNING id`,

    /** $2 offset, $3 limit: dead letters, newest first. */
    list: `SELECT * FROM (${dead()}) dead ORDER BY "completedOn" DESC NULLS LAST, id DESC OFFSET $2 LIMIT $3`,

    count: `SELECT count(*)::int AS count FROM (${dead()}) dead`,

    /**
     * The queue's jobs by state, in one statement. Waiting and delayed are the jobs pg-boss's fetch
     * would and would not take now (`state < 'active'`: created or retry, by `start_after`); dead
     * letters are counted as `count` does (failed, in the job table and the archive).
     */
    counts: `SELECT
  count(*) FILTER (WHERE state < 'active' AND start_after < now())::int AS waiting,
  count(*) FILTER (WHERE state = 'active')::int AS active,
  count(*) FILTER (WHERE state < 'active' AND start_after >= now())::int AS delayed,
  (count(*) FILTER (WHERE state = 'failed')
    + (SELECT count(*) FROM ${archive} WHERE name = $1 AND state = 'failed'))::int AS "deadLetter"
FROM ${job} WHERE name = $1`,

    /** $2 uuid[]: those of these ids that are dead letters. */
    get: `SELECT * FROM (${dead(' AND id = ANY($2::uuid[])')}) dead ORDER BY "completedOn" DESC NULLS LAST`,

    /**
     * $2 uuid[] or null (every one): dead letters in the job table run again from attempt 1, now,
     * with a fresh retention (pg-boss archives a waiting job past its `keep_until` unrun).
     */
    retry: `UPDATE ${job} SET state = 'created', retry_count = 0, started_on = NULL, completed_on = NULL,
  start_after = now(), output = NULL, keep_until = now() + GREATEST(keep_until - created_on, interval '1 day')
WHERE name = $1 AND state = 'failed' AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[]))
RETURNING id`,

    /** The same for dead letters pg-boss has moved to its archive: back to the job table, in one statement. */
    retryArchived: `WITH moved AS (
  DELETE FROM ${archive} a
  WHERE a.name = $1 AND a.state = 'failed' AND ($2::uuid[] IS NULL OR a.id = ANY($2::uuid[]))
    AND NOT EXISTS (SELECT 1 FROM ${job} j WHERE j.name = a.name AND j.id = a.id)
  RETURNING a.*
)
INSERT INTO ${job} (id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
  start_after, singleton_key, expire_in, created_on, keep_until, dead_letter, policy)
SELECT id, name, priority, data, 'created', retry_limit, 0, retry_delay, retry_backoff,
  now(), singleton_key, expire_in, created_on, now() + GREATEST(keep_until - created_on, interval '1 day'), dead_letter, policy
FROM moved
RETURNING id`,

    /** $2 uuid[] or null (every one): deletes dead letters, in the job table and the archive. */
    discard: `WITH a AS (
  DELETE FROM ${job} WHERE name = $1 AND state = 'failed' AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[])) RETURNING 1
), b AS (
  DELETE FROM ${archive} WHERE name = $1 AND state = 'failed' AND ($2::uuid[] IS NULL OR id = ANY($2::uuid[])) RETURNING 1
)
SELECT (SELECT count(*) FROM a)::int + (SELECT count(*) FROM b)::int AS count`,
  };
}

export type PgBossStatements = ReturnType<typeof pgBossStatements>;
