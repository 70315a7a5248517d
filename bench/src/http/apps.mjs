// One HTTP server per (framework, variant), each with its webhook route at /webhooks:
// - bare: a route that reads nothing and answers 200 (the framework's ceiling);
// - baseline: the framework's raw-body parser and the hand-written verification;
// - pixhook: the pixhook adapter, mounted as its README says (store: memory, redis, postgres, or none;
//   transactional handlers on Postgres, store: 'transactions'; or queued mode on BullMQ, store:
//   'bullmq', or on pg-boss, store: 'pg-boss', whose handler runs in a worker process);
// - octokit: @octokit/webhooks' createNodeMiddleware (Express only), with GitHub's signatures.
// The NestJS servers (nest-express, nest-fastify: Nest on each of its HTTP platforms) have two:
// - bare: a Nest controller route that reads nothing and answers 200 (Nest's own ceiling);
// - pixhook: PixhookModule.forRoot({ secret, path, store: new MemoryStore() }) and one @OnWebhook()
//   provider method, as its README mounts it (apps/nest.mjs).
// Each server process imports only its own framework (apps/<framework>.mjs), as a real app does:
// code that is loaded but unused elsewhere changes how V8 compiles what the server runs (loading
// all three frameworks made Node's own stream and tick code several µs slower per request).
import http from 'node:http';
import { SECRET } from '../payloads.mjs';
import { handledCount } from './baseline.mjs';

/**
 * The pixhook `Webhooks` for a server: one handler for the event type every body carries, so the
 * store is used on every delivery. `handler` replaces the default counter (the memory scenario,
 * the queue worker). With `store: 'bullmq'` it is queued mode instead: a `BullMQQueue` named
 * `queueName` on the bench's redis-server, whose `queue` is returned too (for `startWorker`); the
 * server answers 202 once the job is written, and the worker process (worker.mjs) runs the handler.
 * With `store: 'postgres'` it is a `PostgresStore` on a pool of `POOL_MAX` connections to
 * `postgresUrl`, and with `store: 'transactions'` transactional mode (`PostgresTransactions`), whose
 * handler also writes one row through `context.transaction` (see `postgres`). With `archive`
 * ('postgres' or 'redis'), the same mode with an archive whose table or prefix is `archiveName`
 * (see `archive`); `archiveFailures()` counts its writes that failed.
 */
export async function createWebhooks({
  store = 'memory',
  redisPort,
  queueName,
  handler,
  archive: archiveKind,
  archiveName,
  ...pgOptions
} = {}) {
  const { MemoryStore, Webhooks } = await import('@pixhook/core');
  let idempotency = store === 'none' ? false : new MemoryStore();
  let queue;
  let transactions;
  let queries;
  let redisCommands;
  let pool;
  let close = async () => {};
  let handled = 0;
  const count = () => {
    handled++;
  };
  if (store === 'redis') {
    const [{ RedisStore }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
    const client = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
    await client.connect();
    idempotency = new RedisStore(client, { prefix: `bench:${process.pid}:` });
    redisCommands = countRedisCommands(Redis);
    close = () => client.quit();
  }
  if (store === 'bullmq') {
    const [{ BullMQQueue }, { Redis }] = await Promise.all([import('@pixhook/bullmq'), import('ioredis')]);
    redisCommands = countRedisCommands(Redis);
    queue = new BullMQQueue({ connection: { host: '127.0.0.1', port: redisPort }, name: queueName });
    // Connect before the first request, as a server that has been up a while would be.
    await queue.bullQueue.waitUntilReady();
    close = () => queue.close();
  }
  if (store === 'pg-boss') {
    const db = await pgBoss({ ...pgOptions, queueName });
    queue = db.queue;
    queries = db.queries;
    close = db.close;
  }
  if (store === 'postgres' || store === 'transactions') {
    const db = await postgres({ ...pgOptions, transactional: store === 'transactions', count });
    if (db.store) idempotency = db.store;
    transactions = db.transactions;
    handler ??= db.handler;
    queries = db.queries;
    pool = db.pool;
    close = db.close;
  }
  // The inbox scenario's servers: the same mode with an archive (inbox/scenario.mjs).
  const archived = archiveKind
    ? await archive({ kind: archiveKind, name: archiveName, redisPort, postgresUrl: pgOptions.postgresUrl, pool })
    : undefined;
  const webhooks = new Webhooks({
    ...(queue
      ? { secret: SECRET, queue }
      : transactions
        ? { secret: SECRET, transactions }
        : { secret: SECRET, store: idempotency }),
    ...(archived ? { archive: archived.archive } : {}),
  });
  webhooks.on('image.created', handler ?? count);
  // An archive write that fails changes no answer (core tells onError ARCHIVE_FAILED): counted, so
  // that a broken archive fails the run instead of measuring as free.
  let archiveFailures = 0;
  if (archived) {
    webhooks.onError((error) => {
      if (error.code === 'ARCHIVE_FAILED') archiveFailures++;
    });
  }
  const closeAll = async () => {
    await archived?.close();
    await close();
  };
  return {
    webhooks,
    queue,
    close: closeAll,
    handled: () => handled,
    queries: queries ?? archived?.queries,
    redisCommands,
    archiveFailures: () => archiveFailures,
  };
}

/**
 * Counts every `Client#query` of this process (pixhook's and the handlers'; one round trip each),
 * wrapping node-postgres' prototype once per process.
 */
let queryCount;
function countQueries(pg) {
  if (queryCount === undefined) {
    queryCount = 0;
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function countedQuery(...args) {
      queryCount++;
      return query.apply(this, args);
    };
  }
  return () => queryCount;
}

/**
 * Counts every command this process sends to Redis through ioredis (BullMQ's and `RedisStore`'s, the
 * same ioredis here): each is a round trip of its own unless the client pipelines it, which neither
 * does for these. Wraps `Redis.prototype.sendCommand` once per process.
 */
let redisCommandCount;
function countRedisCommands(Redis) {
  if (redisCommandCount === undefined) {
    redisCommandCount = 0;
    const send = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function countedCommand(...args) {
      redisCommandCount++;
      return send.apply(this, args);
    };
  }
  return () => redisCommandCount;
}

/** A pool of `POOL_MAX` connections to `postgresUrl`, all opened before the first request and never closed while idle. */
async function openPool(pg, postgresUrl) {
  const pool = new pg.Pool({ connectionString: postgresUrl, max: POOL_MAX, idleTimeoutMillis: 0 });
  const clients = await Promise.all(Array.from({ length: POOL_MAX }, () => pool.connect()));
  for (const client of clients) client.release();
  return pool;
}

/**
 * The archive of an inbox-scenario server, with its defaults (retention, caps, background pruning,
 * replay polling) but its own table or prefix (`name`): `postgres`, a `PostgresArchive` on the
 * server's own pool when it has one (transactional mode: the entry commits in the event's
 * transaction), else on a pool of its own (`migrateArchive` first); `redis`, a `RedisArchive` on an
 * ioredis client of its own to the bench's redis-server.
 */
async function archive({ kind, name, redisPort, postgresUrl, pool }) {
  if (kind === 'redis') {
    const [{ RedisArchive }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
    const client = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
    await client.connect();
    const redisArchive = new RedisArchive(client, { prefix: name });
    return {
      archive: redisArchive,
      close: async () => {
        await redisArchive.close();
        await client.quit();
      },
    };
  }
  if (kind !== 'postgres') throw new Error(`unknown archive ${kind}`);
  const [{ PostgresArchive, migrateArchive }, { default: pg }] = await Promise.all([
    import('@pixhook/postgres'),
    import('pg'),
  ]);
  const queries = countQueries(pg);
  const own = pool ? undefined : await openPool(pg, postgresUrl);
  const archivePool = pool ?? own;
  await migrateArchive(archivePool, { table: name });
  const postgresArchive = new PostgresArchive(archivePool, { table: name });
  return {
    archive: postgresArchive,
    queries,
    close: async () => {
      await postgresArchive.close();
      await own?.end();
    },
  };
}

/**
 * Queued mode on pg-boss: a `PgBoss` of its own (a pool of `POOL_MAX` connections, pg-boss's
 * defaults otherwise: maintenance on, as in a real app) on the bench's Postgres, started before the
 * first request, and a `PgBossQueue` named `queueName`.
 */
async function pgBoss({ postgresUrl, queueName }) {
  const [{ default: PgBoss }, { PgBossQueue }, { default: pg }] = await Promise.all([
    import('pg-boss'),
    import('@pixhook/pg-boss'),
    import('pg'),
  ]);
  const queries = countQueries(pg);
  const boss = new PgBoss({ connectionString: postgresUrl, max: POOL_MAX });
  boss.on('error', (error) => process.stderr.write(`  pg-boss: ${error?.message ?? error}\n`));
  await boss.start();
  const queue = new PgBossQueue(boss, { name: queueName });
  // The queue made and its statements ready before the first request.
  await queue.counts();
  return {
    queue,
    queries,
    close: async () => {
      await queue.close();
      await boss.stop({ graceful: false, wait: true });
    },
  };
}

/** Connections of each Postgres server's pool (node-postgres' default is 10). */
export const POOL_MAX = 20;

/**
 * A Postgres server's pool, table and handler. The pool holds `POOL_MAX` connections, all opened
 * before the first request and never closed while idle (`idleTimeoutMillis: 0`), as in a server
 * under steady traffic; each server has its own table (`migrate(pool, { table })`). Transactional:
 * the handler inserts one row (event id, image id) into a business table of its own through
 * `context.transaction`, then counts; the PostgresStore handler only counts, as the MemoryStore and
 * RedisStore ones do. `queries()` is the statements sent so far: every `Client#query` of this
 * process, pixhook's and the handler's (one round trip each).
 */
async function postgres({ postgresUrl, table, businessTable, transactional, count }) {
  const [{ PostgresStore, PostgresTransactions, migrate }, { default: pg }] = await Promise.all([
    import('@pixhook/postgres'),
    import('pg'),
  ]);
  const queries = countQueries(pg);
  const pool = await openPool(pg, postgresUrl);
  await migrate(pool, { table });
  const db = { pool, queries, close: () => pool.end() };
  if (!transactional) return { ...db, store: new PostgresStore(pool, { table }) };
  const business = `"${businessTable}"`;
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${business} (event_id text PRIMARY KEY, image_id text NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`,
  );
  const insert = `INSERT INTO ${business} (event_id, image_id) VALUES ($1, $2)`;
  return {
    ...db,
    transactions: new PostgresTransactions(pool, { table }),
    handler: async (event, { transaction }) => {
      await transaction.query(insert, [event.id, event.data.object.id]);
      count();
    },
  };
}

/** Which variants each framework has. */
export const VARIANTS = {
  express: ['bare', 'baseline', 'pixhook', 'octokit'],
  fastify: ['bare', 'baseline', 'pixhook'],
  koa: ['bare', 'baseline', 'pixhook'],
};

/** The NestJS servers, each with the framework its platform runs on (whose rows it is measured beside). */
export const NEST_PLATFORMS = { 'nest-express': 'express', 'nest-fastify': 'fastify' };

/** The variants of every NestJS server. */
export const NEST_VARIANTS = ['bare', 'pixhook'];

/**
 * Starts one server on 127.0.0.1 (a free port). Returns `{ port, close }`.
 * @param {{ framework: string, variant: string, store?: string, redisPort?: number, queueName?: string, postgresUrl?: string, table?: string, businessTable?: string, handler?: Function }} options
 */
export async function startServer({ framework, variant, otel, ...storeOptions }) {
  // Before the framework and pixhook's adapter are loaded, as an app's instrumentation file is.
  const stopOpenTelemetry = otel ? await (await import('./otel.mjs')).setUpOpenTelemetry(otel) : async () => {};
  const started = await startApp({ framework, variant, ...storeOptions });
  return {
    ...started,
    close: async () => {
      await started.close();
      await stopOpenTelemetry();
    },
  };
}

async function startApp({ framework, variant, ...storeOptions }) {
  if (NEST_PLATFORMS[framework]) {
    // PixhookModule builds its own Webhooks (and MemoryStore) from its options.
    const { start } = await import(`./apps/${framework}.mjs`);
    const { server, close, handled } = await start(variant);
    return { port: server.address().port, close, handled: handled ?? handledCount };
  }
  const pixhook = variant === 'pixhook' ? await createWebhooks(storeOptions) : undefined;
  // Events the handlers ran: every 2xx answer of a verifying server must have run one.
  const handled = pixhook ? pixhook.handled : handledCount;
  if (framework === 'fastify') {
    const { start } = await import('./apps/fastify.mjs');
    const { server, close } = await start(variant, pixhook?.webhooks);
    const closeAll = async () => {
      await close();
      await pixhook?.close();
    };
    return {
      port: server.address().port,
      close: closeAll,
      handled,
      queries: pixhook?.queries,
      redisCommands: pixhook?.redisCommands,
      archiveFailures: pixhook?.archiveFailures,
    };
  }
  if (framework !== 'express' && framework !== 'koa') throw new Error(`unknown framework ${framework}`);
  const { listener } = await import(`./apps/${framework}.mjs`);
  const server = http.createServer(listener(variant, pixhook?.webhooks));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pixhook?.close();
  };
  return {
    port: server.address().port,
    close,
    handled,
    queries: pixhook?.queries,
    redisCommands: pixhook?.redisCommands,
    archiveFailures: pixhook?.archiveFailures,
  };
}
