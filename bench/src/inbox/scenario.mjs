// The inbox (issue 27): what an archive costs per delivery, and how fast its list answers.
// 1. Cost: one framework's pixhook servers in three modes (inline with MemoryStore, queued on
//    BullMQ, transactional on Postgres), each without an archive and with PostgresArchive and/or
//    RedisArchive, in the same rounds (rotating and reversing order, as src/http/ does): req/s,
//    p99 and server CPU per request of each, and per round the ratio of each archived server to the
//    same mode without an archive.
// 2. List: PostgresArchive and RedisArchive seeded to 10^4, 10^5 and 10^6 events (list.mjs), the
//    time of a first page, a page deep down (a cursor half-way), and filtered pages, in ms.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { startPostgres } from '../http/postgres-server.mjs';
import { startRedis } from '../http/redis-server.mjs';
import { problemsOf } from '../http/scenario.mjs';
import { CORE } from '../pin.mjs';
import { ratios, roundOrder, spread } from '../stats.mjs';

const serverScript = fileURLToPath(new URL('../http/server.mjs', import.meta.url));
const loadScript = fileURLToPath(new URL('../http/load.mjs', import.meta.url));
const workerScript = fileURLToPath(new URL('../http/worker.mjs', import.meta.url));
const listScript = fileURLToPath(new URL('./list.mjs', import.meta.url));

/** The framework of the cost rows (one is enough: the archive's work is the same behind each adapter). */
export const INBOX_FRAMEWORK = 'fastify';
/** The queue worker of the queued servers: as in src/http/ (its concurrency, on the servers' core). */
const WORKER_CONCURRENCY = 16;
const DRAIN_TIMEOUT_MS = 60_000;
/** RedisArchive's default `maxEvents`: past it a background prune may drop the oldest of a server's events. */
const REDIS_MAX_EVENTS = 100_000;

const CI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * The modes and, for each, the archives measured against it. pg-boss is not here: the bench does
 * not depend on @pixhook/pg-boss (its queued rows are BullMQ's), so queued + PostgresArchive is not
 * measured.
 */
const MODES = [
  { mode: 'inline', label: 'inline (MemoryStore)', store: 'memory', archives: ['postgres', 'redis'] },
  { mode: 'queued', label: 'queued (BullMQ)', store: 'bullmq', archives: ['redis'] },
  {
    mode: 'transactional',
    label: 'transactional (PostgresTransactions)',
    store: 'transactions',
    archives: ['postgres'],
  },
];

export const ARCHIVE_NAMES = { postgres: 'PostgresArchive', redis: 'RedisArchive' };

function configs({ redis, postgres }) {
  const framework = INBOX_FRAMEWORK;
  const run = `${process.pid}-${Date.now().toString(36)}`;
  const list = [];
  for (const { mode, label, store, archives } of MODES) {
    const needs = (what) => (what === 'redis' ? redis.port : postgres.url);
    if (store === 'bullmq' && !redis.port) continue;
    if (store === 'transactions' && !postgres.url) continue;
    for (const archive of [undefined, ...archives]) {
      if (archive && !needs(archive)) continue;
      const id = `${framework}/${mode}${archive ? `+${archive}-archive` : ''}`;
      list.push({
        id,
        mode,
        modeLabel: label,
        archive,
        base: `${framework}/${mode}`,
        options: {
          framework,
          variant: 'pixhook',
          store,
          ...(redis.port ? { redisPort: redis.port } : {}),
          ...(postgres.url ? { postgresUrl: postgres.url } : {}),
          ...(store === 'bullmq' ? { queueName: `pixhook-bench-inbox-${mode}-${archive ?? 'none'}-${run}` } : {}),
          ...(store === 'transactions'
            ? {
                table: `pixhook_events_inbox_${archive ?? 'none'}`,
                businessTable: `bench_images_inbox_${archive ?? 'none'}`,
              }
            : {}),
          ...(archive
            ? {
                archive,
                archiveName: archive === 'postgres' ? `pixhook_inbox_${mode}` : `pixhook-bench-inbox:${mode}:${run}`,
              }
            : {}),
        },
      });
    }
  }
  return list;
}

/** Runs both parts; `cost` and `list` are the settings of each (src/main.mjs). */
export async function runInbox({ cost, list }) {
  const problems = [];
  const redis = await startRedis({ core: CORE.client });
  let postgres;
  try {
    postgres = await startPostgres({ core: CORE.client });
  } catch (error) {
    postgres = { skipped: `Postgres did not start: ${error?.message ?? error}` };
    problems.push(postgres.skipped);
  }
  if (postgres.missing) {
    process.stderr.write(`  inbox: ${postgres.skipped}\n`);
    if (CI) problems.push(`CI is set and Postgres is not installed: ${postgres.skipped}`);
  }
  if (redis.skipped) process.stderr.write(`  inbox: ${redis.skipped}\n`);
  try {
    const started = Date.now();
    const costResult = await runCost({ ...cost, redis, postgres, problems });
    costResult.elapsedSeconds = (Date.now() - started) / 1000;
    const listStarted = Date.now();
    const listResult = await runList({ ...list, redis, postgres, problems });
    listResult.elapsedSeconds = (Date.now() - listStarted) / 1000;
    return {
      framework: INBOX_FRAMEWORK,
      cost: costResult,
      list: listResult,
      problems,
      redis: redis.port ? { version: redis.version } : { skipped: redis.skipped },
      postgres: postgres.url
        ? { version: postgres.version, settings: postgres.settings }
        : { skipped: postgres.skipped },
    };
  } finally {
    await redis.stop?.();
    await postgres.stop?.();
  }
}

async function runCost({ rounds, seconds, warmSeconds, connections, redis, postgres, problems }) {
  const list = configs({ redis, postgres });
  const servers = new Map();
  const workers = new Map();
  const runs = Object.fromEntries(list.map((c) => [c.id, []]));
  const load = await startChild(loadScript, { core: CORE.client });
  /** 2xx answers per server over every run (warm-up included): the events its archive must hold. */
  const answered = Object.fromEntries(list.map((c) => [c.id, 0]));
  const archiveFailures = {};
  try {
    for (const config of list) {
      servers.set(
        config.id,
        await startChild(serverScript, { core: CORE.server, args: [JSON.stringify(config.options)] }),
      );
      if (config.options.store === 'bullmq') {
        const { redisPort, queueName, archive, archiveName } = config.options;
        const args = [JSON.stringify({ redisPort, queueName, concurrency: WORKER_CONCURRENCY, archive, archiveName })];
        workers.set(config.id, await startChild(workerScript, { core: CORE.server, args }));
      }
    }
    const fire = async (config, secs) => {
      const server = servers.get(config.id);
      const worker = workers.get(config.id);
      const workerBefore = await worker?.call({ cmd: 'reset' });
      const redisBefore = redis.cpu?.();
      const postgresBefore = postgres.cpu?.();
      const before = await server.call({ cmd: 'cpu' });
      const result = await load.call({
        cmd: 'run',
        port: server.ready.port,
        scheme: 'pixhook',
        seconds: secs,
        connections,
        maxRequests: Math.ceil(secs * 200_000),
      });
      const after = await server.call({ cmd: 'cpu' });
      const perRequest = (value) => value / Math.max(1, result.requests);
      result.cpuPerRequest = perRequest(after.cpu - before.cpu);
      if (after.queries !== undefined) result.queriesPerRequest = perRequest(after.queries - before.queries);
      problems.push(...problemsOf(config.id, result));
      answered[config.id] += result.ok;
      let ran = after.handled - before.handled;
      if (worker) {
        const until = workerBefore.started + result.ok;
        const drained = await worker.call({ cmd: 'drain', until, timeoutMs: DRAIN_TIMEOUT_MS });
        ran = drained.started - workerBefore.started;
        result.workerCpuPerJob = (drained.cpu - workerBefore.cpu) / Math.max(1, ran);
        result.drainMs = drained.drainMs;
      }
      // The stores' CPU per answered request, the worker's jobs included (they run before this).
      const redisAfter = redis.cpu?.();
      const postgresAfter = postgres.cpu?.();
      if (redisBefore !== undefined && redisAfter !== undefined)
        result.redisCpuPerRequest = perRequest(redisAfter - redisBefore);
      if (postgresBefore !== undefined && postgresAfter !== undefined)
        result.postgresCpuPerRequest = perRequest(postgresAfter - postgresBefore);
      if (ran < result.ok) problems.push(`${config.id}: ${result.ok} answers 2xx but handlers ran ${ran} times`);
      return result;
    };
    if (warmSeconds > 0) {
      process.stderr.write('  inbox: warm-up\n');
      for (const config of list) await fire(config, warmSeconds);
    }
    for (let round = 0; round < rounds; round++) {
      process.stderr.write(`  inbox: round ${round + 1}/${rounds}\n`);
      for (const config of roundOrder(list, round)) runs[config.id].push(await fire(config, seconds));
    }
    // Every archive write must have landed: a failed one changes no answer, so it would measure as free.
    for (const config of list.filter((c) => c.archive)) {
      const { archiveFailures: server } = await servers.get(config.id).call({ cmd: 'cpu' });
      const worker = workers.has(config.id) ? (await workers.get(config.id).call({ cmd: 'stats' })).archiveFailures : 0;
      archiveFailures[config.id] = (server ?? 0) + (worker ?? 0);
      if (archiveFailures[config.id] > 0)
        problems.push(`${config.id}: ${archiveFailures[config.id]} archive writes failed (ARCHIVE_FAILED)`);
      const kept = await archivedEvents(config, { redis, postgres });
      const expected =
        config.archive === 'redis' ? Math.min(answered[config.id], REDIS_MAX_EVENTS) : answered[config.id];
      if (kept < expected)
        problems.push(`${config.id}: ${answered[config.id]} deliveries answered 2xx, ${kept} events archived`);
    }
  } finally {
    for (const child of [...workers.values(), ...servers.values()]) {
      await child.call({ cmd: 'close' }).catch(() => {});
      await child.stop();
    }
    await load.stop();
  }
  return summariseCost(list, runs, { rounds, seconds, warmSeconds, connections, answered });
}

/** The events an archived server's archive holds, read from its table or sorted set. */
async function archivedEvents(config, { redis, postgres }) {
  const { archive, archiveName } = config.options;
  if (archive === 'redis') {
    const { Redis } = await import('ioredis');
    const client = new Redis({ host: '127.0.0.1', port: redis.port });
    try {
      return Number(await client.zcard(`{${archiveName}}:all`));
    } finally {
      client.disconnect();
    }
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*) AS n FROM "${archiveName}"`)).rows[0].n);
  } finally {
    await client.end();
  }
}

function summariseCost(list, runs, settings) {
  const of = (id, pick) => spread(runs[id].map(pick));
  const has = (id, key) => runs[id].length > 0 && runs[id].every((r) => r[key] !== undefined);
  const rows = list.map(({ id, mode, modeLabel, archive, base }) => ({
    id,
    mode,
    modeLabel,
    archive: archive ?? null,
    rps: of(id, (r) => r.rps),
    p50: of(id, (r) => r.p50),
    p99: of(id, (r) => r.p99),
    cpuPerRequest: of(id, (r) => r.cpuPerRequest),
    ...(has(id, 'queriesPerRequest') ? { queriesPerRequest: of(id, (r) => r.queriesPerRequest) } : {}),
    ...(has(id, 'redisCpuPerRequest') ? { redisCpuPerRequest: of(id, (r) => r.redisCpuPerRequest) } : {}),
    ...(has(id, 'postgresCpuPerRequest') ? { postgresCpuPerRequest: of(id, (r) => r.postgresCpuPerRequest) } : {}),
    ...(has(id, 'workerCpuPerJob') ? { workerCpuPerJob: of(id, (r) => r.workerCpuPerJob) } : {}),
    requests: runs[id].reduce((sum, r) => sum + r.requests, 0),
    archived: settings.answered[id],
    // Per round, against the same mode without an archive in the same round.
    ...(archive && runs[base]
      ? {
          vs: {
            base,
            rps: spread(
              ratios(
                runs[id].map((r) => r.rps),
                runs[base].map((r) => r.rps),
              ),
            ),
            p99: spread(
              ratios(
                runs[id].map((r) => r.p99),
                runs[base].map((r) => r.p99),
              ),
            ),
            cpu: spread(
              ratios(
                runs[id].map((r) => r.cpuPerRequest),
                runs[base].map((r) => r.cpuPerRequest),
              ),
            ),
          },
        }
      : {}),
  }));
  const { answered, ...rest } = settings;
  return { framework: INBOX_FRAMEWORK, ...rest, rows, runs };
}

/** Seeds each archive to each size in turn (list.mjs, pinned to the servers' core) and times its pages there. */
async function runList({ sizes, samples, redis, postgres, problems }) {
  const archives = [];
  if (postgres.url) archives.push('postgres');
  if (redis.port) archives.push('redis');
  const results = { sizes, samples, archives: {} };
  for (const kind of archives) {
    const child = await startChild(listScript, {
      core: CORE.server,
      args: [JSON.stringify({ kind, postgresUrl: postgres.url, redisPort: redis.port })],
    });
    const rows = [];
    try {
      for (const size of sizes) {
        process.stderr.write(`  inbox: ${ARCHIVE_NAMES[kind]}, ${size.toLocaleString('en-US')} events\n`);
        const seeded = await child.call({ cmd: 'seed', size });
        const timed = await child.call({ cmd: 'time', size, samples });
        problems.push(...timed.problems.map((p) => `${ARCHIVE_NAMES[kind]} at ${size} events: ${p}`));
        rows.push({ size, seedSeconds: seeded.seconds, memoryBytes: seeded.memoryBytes, ...timed.timings });
      }
    } catch (error) {
      problems.push(`${ARCHIVE_NAMES[kind]} list: ${error?.message ?? error}`);
    } finally {
      await child.call({ cmd: 'close' }).catch(() => {});
      await child.stop();
    }
    results.archives[kind] = rows;
  }
  return results;
}
