-- pixhook: the table that records processed webhook events (@pixhook/postgres).
CREATE TABLE IF NOT EXISTS "public"."pixhook_events" (
  event_id   text        PRIMARY KEY,
  state      text        NOT NULL CHECK (state IN ('in-flight', 'completed')),
  token      text,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS "pixhook_events_expires_at" ON "public"."pixhook_events" (expires_at);
-- The ordering guard's marks (ordering: { key, version }): the newest event seen for each key.
CREATE TABLE IF NOT EXISTS "public"."pixhook_events_marks" (
  key        text             PRIMARY KEY,
  version    double precision NOT NULL,
  event_id   text COLLATE "C" NOT NULL,
  expires_at timestamptz      NOT NULL
);
CREATE INDEX IF NOT EXISTS "pixhook_events_marks_exp" ON "public"."pixhook_events_marks" (expires_at);
