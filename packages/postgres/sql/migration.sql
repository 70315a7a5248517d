-- pixhook: the table that records processed webhook events (@pixhook/postgres).
CREATE TABLE IF NOT EXISTS "public"."pixhook_events" (
  event_id   text        PRIMARY KEY,
  state      text        NOT NULL CHECK (state IN ('in-flight', 'completed')),
  token      text,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS "pixhook_events_expires_at" ON "public"."pixhook_events" (expires_at);
