-- pixhook: the inbox, an archive of verified webhook deliveries (@pixhook/postgres, PostgresArchive).
CREATE TABLE IF NOT EXISTS "public"."pixhook_inbox" (
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
CREATE INDEX IF NOT EXISTS "pixhook_inbox_last_at" ON "public"."pixhook_inbox" (last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_type" ON "public"."pixhook_inbox" (event_type, last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_outcome" ON "public"."pixhook_inbox" (outcome, last_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_type_outcome" ON "public"."pixhook_inbox" (event_type, outcome, last_at DESC, event_id DESC);
CREATE TABLE IF NOT EXISTS "public"."pixhook_inbox_timeline" (
  id          bigserial PRIMARY KEY,
  event_id    text      NOT NULL REFERENCES "public"."pixhook_inbox" (event_id) ON DELETE CASCADE,
  at          bigint    NOT NULL,
  delivery_id text,
  entry       json      NOT NULL
);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_timeline_event" ON "public"."pixhook_inbox_timeline" (event_id, id);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_timeline_delivery" ON "public"."pixhook_inbox_timeline" (delivery_id) WHERE delivery_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS "public"."pixhook_inbox_replays" (
  id           bigserial PRIMARY KEY,
  event_id     text      NOT NULL REFERENCES "public"."pixhook_inbox" (event_id) ON DELETE CASCADE,
  requested_at bigint    NOT NULL
);
CREATE INDEX IF NOT EXISTS "pixhook_inbox_replays_event" ON "public"."pixhook_inbox_replays" (event_id);
