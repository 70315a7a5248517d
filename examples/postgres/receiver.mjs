// Exactly-once effects with Postgres: each event's handlers run in one transaction, and the record
// that the event was processed commits in that same transaction. A handler that throws rolls back
// everything it wrote; a redelivery of a committed event answers 200 without running it.
//   SIGNING_SECRET=whsec_… DATABASE_URL=postgres://… node examples/postgres/receiver.mjs
import { Webhooks } from '@pixhook/core';
import { webhookMiddleware } from '@pixhook/express';
import { migrate, PostgresTransactions } from '@pixhook/postgres';
import express from 'express';
import pg from 'pg';

if (!process.env.SIGNING_SECRET) {
  console.error('Set SIGNING_SECRET to the endpoint signing secret (dashboard → Keys → Webhooks).');
  process.exit(1);
}

// One connection per event in progress, held while its handlers run: size the pool for that.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
pool.on('error', (error) => console.warn('idle Postgres connection failed:', error.message));

await migrate(pool); // creates pixhook_events if missing; or apply node_modules/@pixhook/postgres/sql/migration.sql yourself
await pool.query('CREATE TABLE IF NOT EXISTS images (id text PRIMARY KEY, url text NOT NULL)');

const webhooks = new Webhooks({
  secret: process.env.SIGNING_SECRET,
  transactions: new PostgresTransactions(pool), // { table, schema, timeoutMs: 2_000, completedTtlMs: 48 h }
});

webhooks.on('image.created', async (event, { transaction }) => {
  const image = event.data.object;
  // `transaction` is the event's pg PoolClient: write through it, never through `pool`.
  await transaction.query('INSERT INTO images (id, url) VALUES ($1, $2)', [image.id, image.url ?? '']);
  console.log(`stored image ${image.id} for ${event.id}`);
});
webhooks.on('image.deleted', async (event, { transaction }) => {
  await transaction.query('DELETE FROM images WHERE id = $1', [event.data.object.id]);
});
// HANDLER_FAILED's cause is your handler's own error; STORE_UNAVAILABLE's, Postgres's.
webhooks.onError((error, { deliveryId }) =>
  console.warn(error.code, deliveryId ?? '', error.message, error.cause ?? ''),
);

const app = express();
app.post('/webhooks', webhookMiddleware(webhooks)); // 200 once committed; 500 after a rollback
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () =>
    server.close(async () => {
      await pool.end();
      process.exit(0);
    }),
  );
}
