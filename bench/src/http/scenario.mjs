// HTTP end to end: every server in its own process on the server core, autocannon in another on
// the client core; every round runs each server once, in an order that rotates and reverses between rounds, so that ratios compare
// runs made seconds apart.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { CORE } from '../pin.mjs';
import { ratios, roundOrder, spread } from '../stats.mjs';
import { NEST_PLATFORMS, NEST_VARIANTS, POOL_MAX, VARIANTS } from './apps.mjs';
import { startPostgres } from './postgres-server.mjs';
import { clockTicks, processCpu } from './proc.mjs';
import { startRedis } from './redis-server.mjs';

const serverScript = fileURLToPath(new URL('./server.mjs', import.meta.url));
const loadScript = fileURLToPath(new URL('./load.mjs', import.meta.url));
const workerScript = fileURLToPath(new URL('./worker.mjs', import.meta.url));

/**
 * Targets of the issue: each adapter, with its default MemoryStore, at least as cheap as the
 * hand-written baseline of its framework (capacity ratio from server CPU per request ≥ 1×) with
 * req/s and p99 latency no worse; Express at least Octokit's middleware; Redis ≥ 0.8× Memory.
 */
export const HTTP_TARGETS = { minVsBaseline: 1, minVsOctokit: 1, minRedisVsMemory: 0.8 };

/**
 * Targets of queued mode (issue: queued processing): the answer's p99 at most 5 ms at 32
 * connections, and req/s at least 0.8× inline processing with RedisStore in the same framework.
 */
export const QUEUED_TARGETS = { maxP99Ms: 5, minVsRedis: 0.8 };

/**
 * Targets of issue 29 beside the engines': PostgresStore and transactional mode against MemoryStore
 * (req/s, every framework), and the stretch: a durable acknowledgement (queued on either engine, or
 * transactional) at 0.8× the req/s of inline MemoryStore.
 */
export const DURABLE_TARGETS = { minStoreVsMemory: 0.5, minTransactionsVsMemory: 0.4, minDurableVsMemory: 0.8 };

/**
 * Targets of queued mode on pg-boss (issue 29): req/s at least 0.8× inline processing with
 * PostgresStore in the same framework (flat out, 32 connections; each part's CPU per delivery shown),
 * and at the fixed rate the answer's p99 at most 5 ms and its handler started within 100 ms of the
 * answer (p99) while the worker keeps up.
 */
export const PG_BOSS_TARGETS = { minVsPostgres: 0.8, maxFixedP99Ms: 5, maxLagP99Ms: 100 };

/** The stores whose servers are queued, each with a worker process (worker.mjs). */
const QUEUED_STORES = ['bullmq', 'pg-boss'];

/**
 * The fixed-rate measurement: the queued frameworks' MemoryStore, RedisStore and queued (BullMQ)
 * servers again, after the saturated rounds, with deliveries sent at a fixed pace (load.mjs `paced`:
 * one every 1 ÷ rate s, at most `connections` at once) instead of as fast as they are answered. At
 * saturation every answer waits behind the 31 others in flight (32 ÷ req/s on average, Little's
 * law); at a rate well under every server's capacity, the time of an answer is the time it takes.
 * The rate is the settings' `fixed.rate` (1,000 req/s: the queued Express server, the slowest,
 * answers ~2,000 req/s flat out here, with its worker on the same core).
 */
const FIXED_STORES = [undefined, 'redis', 'bullmq', 'postgres', 'pg-boss'];

/** The median of the per-round p99 latencies, in ms. */
const p99Of = (runs) => spread(runs.map((r) => r.p99)).median;

/** The framework the Redis-versus-memory comparison runs in. */
const REDIS_FRAMEWORK = 'express';

/**
 * The frameworks with a queued (BullMQ) server, each next to an inline RedisStore server (and its
 * MemoryStore one). Its worker runs in a process of its own, with this concurrency, pinned to the
 * servers' core: the application's work (answering and running handlers) gets one core whether it
 * runs inline or queued, and redis-server shares the other with the load generator in both modes.
 */
export const QUEUED_FRAMEWORKS = ['express', 'fastify', 'koa'];
const WORKER_CONCURRENCY = 16;
const WORKER_CORE = CORE.server;

/** Longest wait after a round for the worker to start the handlers of every job answered in it. */
const DRAIN_TIMEOUT_MS = 60_000;

/** The frameworks that have a Redis server: the Redis-versus-memory one and the queued ones. */
const redisFrameworks = () => [...new Set([REDIS_FRAMEWORK, ...QUEUED_FRAMEWORKS])];

/**
 * The frameworks with two Postgres servers next to their MemoryStore and RedisStore ones: a
 * `PostgresStore` one and a transactional one (`PostgresTransactions`), on a throwaway Postgres
 * pinned with the load generator and redis-server (the servers' core runs the application alone).
 */
export const POSTGRES_FRAMEWORKS = ['express', 'fastify', 'koa'];

/**
 * The frameworks measured with @pixhook/opentelemetry beside plain pixhook (MemoryStore): loaded
 * without an SDK (core's channels have subscribers; spans are no-ops), and with the SDK recording
 * every span and metric (otel.mjs). Target: the SDK's server CPU per request at most 1.15× plain
 * pixhook's on Fastify; loaded without an SDK, within the run-to-run range.
 */
export const OTEL_FRAMEWORKS = ['express', 'fastify'];
const OTEL_SETUPS = ['loaded', 'sdk', 'sdk-only'];
export const OTEL_TARGETS = { maxSdkCpuRatio: 1.15 };

/** Whether this run is CI's, where a missing Postgres fails the run instead of skipping its rows. */
const CI = process.env.CI === 'true' || process.env.CI === '1';

function configs(redis, postgres) {
  const list = [];
  for (const [framework, variants] of Object.entries(VARIANTS)) {
    for (const variant of variants) {
      list.push({
        id: `${framework}/${variant}`,
        framework,
        variant,
        scheme: variant === 'octokit' ? 'octokit' : 'pixhook',
      });
    }
    // De-duplication is pixhook's own extra work: without it, the adapter does what the baseline does.
    list.push({ id: `${framework}/pixhook-nostore`, framework, variant: 'pixhook', store: 'none', scheme: 'pixhook' });
    // With @pixhook/opentelemetry registered, without an SDK and with one recording everything.
    if (OTEL_FRAMEWORKS.includes(framework)) {
      for (const otel of OTEL_SETUPS) {
        list.push({ id: `${framework}/pixhook+otel-${otel}`, framework, variant: 'pixhook', otel, scheme: 'pixhook' });
      }
    }
    // Nest on this framework, next to it: its own bare route and PixhookModule (MemoryStore).
    for (const [nest, platform] of Object.entries(NEST_PLATFORMS)) {
      if (platform !== framework) continue;
      for (const variant of NEST_VARIANTS) {
        list.push({ id: `${nest}/${variant}`, framework: nest, variant, scheme: 'pixhook' });
      }
    }
  }
  if (redis.port) {
    for (const framework of redisFrameworks()) {
      list.push({
        id: `${framework}/pixhook+redis`,
        framework,
        variant: 'pixhook',
        store: 'redis',
        redisPort: redis.port,
        scheme: 'pixhook',
      });
    }
    for (const framework of QUEUED_FRAMEWORKS) {
      list.push({
        id: `${framework}/pixhook+bullmq`,
        framework,
        variant: 'pixhook',
        store: 'bullmq',
        redisPort: redis.port,
        // A queue of its own per server and run: no job of another run is ever in it.
        queueName: `pixhook-bench-${framework}-${process.pid}-${Date.now().toString(36)}`,
        scheme: 'pixhook',
      });
    }
  }
  if (postgres.url) {
    for (const framework of POSTGRES_FRAMEWORKS) {
      for (const store of ['postgres', 'transactions']) {
        list.push({
          id: `${framework}/pixhook+${store}`,
          framework,
          variant: 'pixhook',
          store,
          postgresUrl: postgres.url,
          // A table of pixhook's per server, and for the transactional handler a business table.
          table: `pixhook_events_${framework}_${store}`,
          ...(store === 'transactions' ? { businessTable: `bench_images_${framework}` } : {}),
          scheme: 'pixhook',
        });
      }
      if (!QUEUED_FRAMEWORKS.includes(framework)) continue;
      // Queued on pg-boss, on the same Postgres, with a worker process as for BullMQ.
      list.push({
        id: `${framework}/pixhook+pg-boss`,
        framework,
        variant: 'pixhook',
        store: 'pg-boss',
        postgresUrl: postgres.url,
        queueName: `pixhook-bench-${framework}-${process.pid}-${Date.now().toString(36)}`,
        scheme: 'pixhook',
      });
    }
  }
  return list;
}

/** Problems that make a run count as broken: any error, timeout or non-2xx answer, or no answer at all. */
export function problemsOf(id, r) {
  const problems = [];
  if (r.requests === 0 || r.ok === 0) problems.push(`${id}: no request answered`);
  if (r.non2xx > 0) problems.push(`${id}: ${r.non2xx} non-2xx answers`);
  if (r.errors > 0) problems.push(`${id}: ${r.errors} connection errors`);
  if (r.timeouts > 0) problems.push(`${id}: ${r.timeouts} timeouts`);
  return problems;
}

export async function runHttp({ rounds, seconds, warmSeconds, connections, frameworks, fixed }) {
  const wanted = (c) => !frameworks || frameworks.includes(c.framework);
  const redis =
    !frameworks || redisFrameworks().some((f) => frameworks.includes(f))
      ? await startRedis({ core: CORE.client })
      : { skipped: 'not selected' };
  const problems = [];
  let postgres = { skipped: 'not selected' };
  if (!frameworks || POSTGRES_FRAMEWORKS.some((f) => frameworks.includes(f))) {
    try {
      postgres = await startPostgres({ core: CORE.client });
    } catch (error) {
      // Installed but broken: the run fails, and its other rows are still measured.
      postgres = { skipped: `Postgres did not start: ${error?.message ?? error}` };
      problems.push(postgres.skipped);
    }
    if (postgres.missing) {
      process.stderr.write(`  http: ${postgres.skipped}\n`);
      // CI must measure every row: a missing Postgres there is a broken run, not a skipped one.
      if (CI) problems.push(`CI is set and Postgres is not installed: ${postgres.skipped}`);
    }
  }
  const list = configs(redis, postgres).filter(wanted);
  // The servers measured at a fixed rate too: pixhook inline (MemoryStore, RedisStore, PostgresStore:
  // a durable answer's floor, one WAL flush, beside pg-boss's) and queued (BullMQ, pg-boss), in the queued frameworks (those of `fixed.frameworks` where it is given), with
  // a redis-server. Only the plain MemoryStore server: not those with OpenTelemetry (also
  // MemoryStore, they were listed as four more "inline, MemoryStore" rows).
  const fixedList = list.filter(
    (c) =>
      fixed &&
      redis.port &&
      c.variant === 'pixhook' &&
      !c.otel &&
      FIXED_STORES.includes(c.store) &&
      QUEUED_FRAMEWORKS.includes(c.framework) &&
      (!fixed.frameworks || fixed.frameworks.includes(c.framework)),
  );
  const fixedRuns = Object.fromEntries(fixedList.map((c) => [c.id, []]));
  const servers = new Map();
  // The queue workers of the queued servers, by server id.
  const workers = new Map();
  const load = await startChild(loadScript, { core: CORE.client });
  const ticks = clockTicks();
  const runs = Object.fromEntries(list.map((c) => [c.id, []]));
  try {
    for (const config of list) {
      const { id, scheme, ...options } = config;
      servers.set(id, await startChild(serverScript, { core: CORE.server, args: [JSON.stringify(options)] }));
      if (QUEUED_STORES.includes(config.store)) {
        const { store, redisPort, postgresUrl, queueName } = config;
        const args = [JSON.stringify({ store, redisPort, postgresUrl, queueName, concurrency: WORKER_CONCURRENCY })];
        workers.set(id, await startChild(workerScript, { core: WORKER_CORE, args }));
      }
    }
    // One run of a server: flat out (autocannon), or at a fixed `rate` (deliveries per second).
    const fire = async (config, secs, rate) => {
      const server = servers.get(config.id);
      const worker = workers.get(config.id);
      const { port } = server.ready;
      const label = rate ? `${config.id} at ${rate} req/s` : config.id;
      const workerBefore = await worker?.call({ cmd: 'reset' });
      const redisBefore = config.redisPort ? redis.cpu() : undefined;
      const redisCommandsBefore = config.redisPort ? await redis.commands() : undefined;
      const postgresBefore = config.postgresUrl ? postgres.cpu() : undefined;
      const loadBefore = processCpu(load.pid, ticks);
      const before = await server.call({ cmd: 'cpu' });
      const result = await load.call(
        rate
          ? { cmd: 'paced', port, scheme: config.scheme, seconds: secs, connections, rate }
          : {
              cmd: 'run',
              port,
              scheme: config.scheme,
              seconds: secs,
              connections,
              // A bound on the count as well as the time: far above what one core serves in `secs`.
              maxRequests: Math.ceil(secs * 200_000),
            },
      );
      // Handlers started by the end of the round, before the server is asked anything.
      const workerAtEnd = await worker?.call({ cmd: 'stats' });
      const after = await server.call({ cmd: 'cpu' });
      const perRequest = (value) => value / Math.max(1, result.requests);
      // Server CPU per answered request: its cost, independent of the load generator's ceiling.
      result.cpuPerRequest = perRequest(after.cpu - before.cpu);
      // The load generator's own CPU per request (it shares its core with redis-server and Postgres).
      const loadAfter = processCpu(load.pid, ticks);
      if (loadBefore !== undefined && loadAfter !== undefined)
        result.loadCpuPerRequest = perRequest(loadAfter - loadBefore);
      if (postgresBefore !== undefined) {
        // The cluster's CPU (every backend, background process and autovacuum worker) per answered
        // request, and the statements (round trips) the server sent per answered request.
        const postgresAfter = postgres.cpu();
        if (postgresAfter !== undefined) result.postgresCpuPerRequest = perRequest(postgresAfter - postgresBefore);
        result.queriesPerRequest = perRequest(after.queries - before.queries);
      }
      problems.push(...problemsOf(label, result));
      let ran = after.handled - before.handled;
      let workerDone;
      if (worker) {
        // Every 2xx answer queued one job (each delivery has a new event id): wait until the worker
        // has started all of them, so that no backlog runs into the next server's round.
        const until = workerBefore.started + result.ok;
        result.backlog = Math.max(0, until - workerAtEnd.started);
        const drained = await worker.call({ cmd: 'drain', until, timeoutMs: DRAIN_TIMEOUT_MS });
        workerDone = drained;
        ran = drained.started - workerBefore.started;
        result.lag = drained.lag;
        result.drainMs = drained.drainMs;
        result.workerCpuPerJob = (drained.cpu - workerBefore.cpu) / Math.max(1, ran);
        if (drained.queries !== undefined) {
          // The worker's statements per job, and the cluster's CPU again, now with the rest of the jobs run.
          result.workerQueriesPerJob = (drained.queries - workerBefore.queries) / Math.max(1, ran);
          const postgresDrained = postgres.cpu?.();
          if (postgresBefore !== undefined && postgresDrained !== undefined) {
            result.postgresCpuPerJob = (postgresDrained - postgresBefore) / Math.max(1, ran);
          }
        }
      }
      if (redisBefore !== undefined) {
        // redis-server's CPU per answered request (for a queued server, its jobs' runs included).
        result.redisCpuPerRequest = (redis.cpu() - redisBefore) / Math.max(1, result.requests);
      }
      if (redisCommandsBefore !== undefined) {
        // Round trips to Redis: the commands the server sent per answered request, and the worker's
        // per job; what redis-server ran per request (scripts, and the commands inside them and out),
        // for a queued server its jobs' runs included.
        const redisCommandsAfter = await redis.commands();
        result.redisCommands = {
          server: perRequest(after.redisCommands - before.redisCommands),
          worker: worker ? (workerDone.redisCommands - workerBefore.redisCommands) / Math.max(1, ran) : undefined,
          scripts: perRequest(redisCommandsAfter.scripts - redisCommandsBefore.scripts),
          inside: perRequest(redisCommandsAfter.inside - redisCommandsBefore.inside),
        };
      }
      if (config.variant !== 'bare' && ran < result.ok) {
        const when = worker ? ` (${DRAIN_TIMEOUT_MS / 1000} s after the round)` : '';
        problems.push(`${label}: ${result.ok} answers 2xx but handlers ran ${ran} times${when}`);
      }
      return result;
    };
    if (warmSeconds > 0) {
      process.stderr.write('  http: warm-up\n');
      for (const config of list) await fire(config, warmSeconds);
    }
    for (let round = 0; round < rounds; round++) {
      process.stderr.write(`  http: round ${round + 1}/${rounds}\n`);
      for (const config of roundOrder(list, round)) runs[config.id].push(await fire(config, seconds));
    }
    if (fixedList.length > 0) {
      if (fixed.warmSeconds > 0) {
        process.stderr.write(`  http: at ${fixed.rate} req/s, warm-up\n`);
        for (const config of fixedList) await fire(config, fixed.warmSeconds, fixed.rate);
      }
      for (let round = 0; round < fixed.rounds; round++) {
        process.stderr.write(`  http: at ${fixed.rate} req/s, round ${round + 1}/${fixed.rounds}\n`);
        for (const config of roundOrder(fixedList, round)) {
          fixedRuns[config.id].push(await fire(config, fixed.seconds, fixed.rate));
        }
      }
    }
  } finally {
    for (const child of [...workers.values(), ...servers.values()]) {
      await child.call({ cmd: 'close' }).catch(() => {});
      await child.stop();
    }
    await load.stop();
    await redis.stop?.();
    await postgres.stop?.();
  }
  const summary = summarise(list, runs, problems, redis, connections, postgres);
  if (fixedList.length > 0) summary.fixed = summariseFixed(fixedList, fixedRuns, fixed, connections);
  return summary;
}

/**
 * The fixed-rate runs: per server, the req/s reached, p50 and p99 of the answer (in fractions of a
 * millisecond), the most deliveries in flight at once, server CPU per request and, queued, the
 * worker's figures; and per queued framework its targets at this rate (the answer's p99, and for
 * pg-boss the handler's start after the answer).
 */
function summariseFixed(list, runs, { rate, rounds, seconds }, connections) {
  const of = (id, pick) => spread(runs[id].map(pick));
  const rows = list.map(({ id, framework, store }) => ({
    id,
    framework,
    store: store ?? 'memory',
    rps: of(id, (r) => r.rps),
    p50: of(id, (r) => r.p50),
    p99: of(id, (r) => r.p99),
    maxInFlight: of(id, (r) => r.maxInFlight),
    maxLateMs: of(id, (r) => r.maxLateMs),
    cpuPerRequest: of(id, (r) => r.cpuPerRequest),
    requests: runs[id].reduce((sum, r) => sum + r.requests, 0),
    ...(QUEUED_STORES.includes(store) ? { queued: queuedFigures(runs[id]) } : {}),
    ...postgresFigures(runs[id]),
  }));
  const byId = new Map(rows.map((r) => [r.id, r]));
  // Each engine's target at this rate: the answer's p99 (issue 29: at saturation it is about
  // connections ÷ req/s, so it is reported there, not targeted).
  const thresholds = [];
  for (const framework of QUEUED_FRAMEWORKS) {
    const queued = byId.get(`${framework}/pixhook+bullmq`);
    if (!queued) continue;
    thresholds.push({
      label: `${framework}: queued (BullMQ): p99 of the answer at a fixed ${rate.toLocaleString('en-US')} req/s (${connections} connections at most; inline with RedisStore: ${byId.get(`${framework}/pixhook+redis`)?.p99?.median?.toFixed(2) ?? '—'} ms)`,
      value: queued.p99,
      unit: 'ms',
      max: QUEUED_TARGETS.maxP99Ms,
      holds: queued.p99.median <= QUEUED_TARGETS.maxP99Ms,
    });
  }
  // pg-boss's targets at this rate: the answer's p99, and its handler's start after the answer (p99).
  for (const framework of QUEUED_FRAMEWORKS) {
    const queued = byId.get(`${framework}/pixhook+pg-boss`);
    if (!queued) continue;
    const at = `at a fixed ${rate.toLocaleString('en-US')} req/s`;
    thresholds.push(
      {
        label: `${framework}: queued (pg-boss): p99 of the answer ${at}`,
        value: queued.p99,
        unit: 'ms',
        max: PG_BOSS_TARGETS.maxFixedP99Ms,
        holds: queued.p99.median <= PG_BOSS_TARGETS.maxFixedP99Ms,
      },
      {
        label: `${framework}: queued (pg-boss): answer → handler start, p99, ${at} (jobs waiting at round end: ${queued.queued.backlog.median})`,
        value: queued.queued.lagP99,
        unit: 'ms',
        max: PG_BOSS_TARGETS.maxLagP99Ms,
        holds: queued.queued.lagP99.median <= PG_BOSS_TARGETS.maxLagP99Ms,
      },
    );
  }
  return { rate, rounds, seconds, connections, rows, thresholds, runs };
}

/**
 * A queued server's p99 flat out, as information: at saturation every answer waits behind the others
 * in flight, about `connections` ÷ req/s on average (Little's law), whatever the work of its own.
 */
function saturatedP99(framework, engine, runs, connections) {
  const rps = spread(runs.map((r) => r.rps)).median;
  return {
    label: `${framework}: queued (${engine}): p99 of the answer flat out at ${connections} connections (${connections} ÷ req/s = ${((connections / rps) * 1000).toFixed(1)} ms on average)`,
    value: spread(runs.map((r) => r.p99)),
    unit: 'ms',
  };
}

function summarise(list, runs, problems, redis, connections, postgres) {
  const rps = (id) => runs[id].map((r) => r.rps);
  const p99s = (id) => runs[id].map((r) => r.p99);
  // Requests one core could serve, from server CPU per request: baseline CPU ÷ adapter CPU.
  const capacity = (a, b) => spread(ratios(cpu(b), cpu(a)));
  const cpu = (id) => runs[id].map((r) => r.cpuPerRequest);
  const rows = list.map(({ id, framework, variant, store, otel }) => ({
    id,
    framework,
    variant: otel
      ? `pixhook, OpenTelemetry ${{ sdk: 'SDK recording', 'sdk-only': 'SDK without pixhook instrumentation', loaded: 'loaded, no SDK' }[otel]}`
      : ({
          redis: 'pixhook, RedisStore',
          none: 'pixhook, store: false',
          bullmq: 'pixhook, queued (BullMQ)',
          'pg-boss': 'pixhook, queued (pg-boss)',
          postgres: 'pixhook, PostgresStore',
          transactions: 'pixhook, transactional (PostgresTransactions)',
        }[store] ?? variant),
    rps: spread(rps(id)),
    p50: spread(runs[id].map((r) => r.p50)),
    p99: spread(runs[id].map((r) => r.p99)),
    requests: runs[id].reduce((sum, r) => sum + r.requests, 0),
    errors: runs[id].reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    non2xx: runs[id].reduce((sum, r) => sum + r.non2xx, 0),
    cpuPerRequest: spread(runs[id].map((r) => r.cpuPerRequest)),
    vsBare: spread(ratios(rps(id), rps(`${framework}/bare`))),
    // p99 against the same framework's bare route in the same round (whole milliseconds each).
    p99VsBare: spread(ratios(p99s(id), p99s(`${framework}/bare`))),
    // A NestJS server against the same variant on the plain framework its platform runs on.
    ...(NEST_PLATFORMS[framework] && runs[`${NEST_PLATFORMS[framework]}/${variant}`]
      ? {
          plain: {
            id: `${NEST_PLATFORMS[framework]}/${variant}`,
            rps: spread(ratios(rps(id), rps(`${NEST_PLATFORMS[framework]}/${variant}`))),
            capacity: capacity(id, `${NEST_PLATFORMS[framework]}/${variant}`),
          },
        }
      : {}),
    // redis-server's CPU per request, where the server uses it and /proc tells it.
    ...(runs[id].every((r) => r.redisCpuPerRequest !== undefined)
      ? { redisCpuPerRequest: spread(runs[id].map((r) => r.redisCpuPerRequest)) }
      : {}),
    // Round trips to Redis and what redis-server ran, per request (see `fire`).
    ...(runs[id].every((r) => r.redisCommands !== undefined)
      ? {
          redisCommands: Object.fromEntries(
            ['server', 'worker', 'scripts', 'inside']
              .filter((part) => runs[id].every((r) => r.redisCommands[part] !== undefined))
              .map((part) => [part, spread(runs[id].map((r) => r.redisCommands[part]))]),
          ),
        }
      : {}),
    ...(QUEUED_STORES.includes(store) ? { queued: queuedFigures(runs[id]) } : {}),
    ...(runs[id].every((r) => r.loadCpuPerRequest !== undefined)
      ? { loadCpuPerRequest: spread(runs[id].map((r) => r.loadCpuPerRequest)) }
      : {}),
    ...postgresFigures(runs[id]),
    // Per round, req/s against the same framework's MemoryStore server in the same round.
    ...(store && store !== 'none' && runs[`${framework}/pixhook`]
      ? { vsMemory: spread(ratios(rps(id), rps(`${framework}/pixhook`))) }
      : {}),
  }));
  /**
   * A target comparison: capacity (server CPU per request) and req/s at least `target` times the
   * other's, and a p99 latency no higher than the other's (autocannon reports whole milliseconds).
   */
  const against = (label, id, other, target) => {
    const ratio = spread(ratios(rps(id), rps(other)));
    const cap = capacity(id, other);
    const p99 = { mine: p99Of(runs[id]), theirs: p99Of(runs[other]) };
    return {
      label,
      ratio,
      capacity: cap,
      p99,
      target,
      holds: cap.median >= target && ratio.median >= target && p99.mine <= p99.theirs,
    };
  };
  const comparisons = [];
  for (const framework of Object.keys(VARIANTS)) {
    if (!runs[`${framework}/pixhook`]) continue;
    comparisons.push(
      against(
        `${framework}: pixhook ÷ hand-written baseline`,
        `${framework}/pixhook`,
        `${framework}/baseline`,
        HTTP_TARGETS.minVsBaseline,
      ),
    );
  }
  for (const framework of Object.keys(VARIANTS)) {
    if (!runs[`${framework}/pixhook-nostore`]) continue;
    // Informational, no target: the target is on the default adapter, with its MemoryStore.
    comparisons.push({
      label: `${framework}: pixhook with store: false ÷ hand-written baseline`,
      ratio: spread(ratios(rps(`${framework}/pixhook-nostore`), rps(`${framework}/baseline`))),
      capacity: capacity(`${framework}/pixhook-nostore`, `${framework}/baseline`),
    });
  }
  if (runs['express/octokit']) {
    comparisons.push(
      against(
        'express: pixhook ÷ Octokit createNodeMiddleware',
        'express/pixhook',
        'express/octokit',
        HTTP_TARGETS.minVsOctokit,
      ),
    );
    if (runs['express/pixhook-nostore']) {
      // Informational: Octokit does not de-duplicate, so this is like for like.
      comparisons.push({
        label: 'express: pixhook with store: false ÷ Octokit createNodeMiddleware',
        ratio: spread(ratios(rps('express/pixhook-nostore'), rps('express/octokit'))),
        capacity: capacity('express/pixhook-nostore', 'express/octokit'),
      });
    }
  }
  // NestJS (no target): PixhookModule against Nest's bare route, and against pixhook on the plain
  // framework of the same platform, in the same rounds.
  for (const [nest, platform] of Object.entries(NEST_PLATFORMS)) {
    const mounted = `${nest}/pixhook`;
    for (const [versus, other, than] of [
      ['bare', `${nest}/bare`, 'Nest bare'],
      ['plain', `${platform}/pixhook`, `pixhook on plain ${platform}`],
    ]) {
      if (!runs[mounted] || !runs[other]) continue;
      comparisons.push({
        nest,
        versus,
        label: `${nest}: PixhookModule ÷ ${than}`,
        ratio: spread(ratios(rps(mounted), rps(other))),
        capacity: capacity(mounted, other),
        p99: { mine: p99Of(runs[mounted]), theirs: p99Of(runs[other]) },
        p99Ratio: spread(ratios(p99s(mounted), p99s(other))),
      });
    }
  }
  if (runs[`${REDIS_FRAMEWORK}/pixhook+redis`]) {
    const r = spread(ratios(rps(`${REDIS_FRAMEWORK}/pixhook+redis`), rps(`${REDIS_FRAMEWORK}/pixhook`)));
    comparisons.push({
      label: `${REDIS_FRAMEWORK}: pixhook with RedisStore ÷ with MemoryStore`,
      ratio: r,
      // redis-server's own CPU is not in the server's figure, so no capacity ratio here.
      target: HTTP_TARGETS.minRedisVsMemory,
      holds: r.median >= HTTP_TARGETS.minRedisVsMemory,
    });
  }
  // Queued mode: req/s against inline processing; the answer's p99 flat out is information (its
  // target is at a fixed rate: see summariseFixed).
  const thresholds = [];
  const informational = [];
  // OpenTelemetry: server CPU per request against plain pixhook (MemoryStore) in the same rounds,
  // and, with the SDK, against the same SDK without pixhook's instrumentation (its own share).
  for (const framework of OTEL_FRAMEWORKS) {
    const plain = `${framework}/pixhook`;
    const sdkOnly = `${framework}/pixhook+otel-sdk-only`;
    const pairs = [
      ['loaded', plain, 'pixhook with @pixhook/opentelemetry loaded, no SDK ÷ without'],
      ['sdk', plain, 'pixhook with the OpenTelemetry SDK recording its spans and metrics ÷ without OpenTelemetry'],
      [
        'sdk-only',
        plain,
        'pixhook in an app with the OpenTelemetry SDK and its context manager in use (no pixhook instrumentation) ÷ without',
      ],
      [
        'sdk',
        sdkOnly,
        "@pixhook/opentelemetry's own share: with the SDK recording its spans and metrics ÷ the same SDK without it",
      ],
    ];
    for (const [otel, other, what] of pairs) {
      const id = `${framework}/pixhook+otel-${otel}`;
      if (!runs[id] || !runs[other]) continue;
      comparisons.push({
        label: `${framework}: ${what}`,
        ratio: spread(ratios(rps(id), rps(other))),
        capacity: capacity(id, other),
        p99: { mine: p99Of(runs[id]), theirs: p99Of(runs[other]) },
      });
      if (framework !== 'fastify' || otel !== 'sdk') continue;
      const cpuRatio = spread(ratios(cpu(id), cpu(other)));
      thresholds.push({
        label: `${framework}: server CPU per request, ${what}`,
        value: cpuRatio,
        unit: '×',
        max: OTEL_TARGETS.maxSdkCpuRatio,
        holds: cpuRatio.median <= OTEL_TARGETS.maxSdkCpuRatio,
      });
    }
  }
  for (const framework of QUEUED_FRAMEWORKS) {
    const id = `${framework}/pixhook+bullmq`;
    if (!runs[id]) continue;
    const vsRedis = spread(ratios(rps(id), rps(`${framework}/pixhook+redis`)));
    informational.push(saturatedP99(framework, 'BullMQ', runs[id], connections));
    comparisons.push({
      label: `${framework}: queued (BullMQ) ÷ inline with RedisStore`,
      ratio: vsRedis,
      // The worker's and redis-server's CPU are not in the server's figure: no capacity ratio.
      p99: { mine: p99Of(runs[id]), theirs: p99Of(runs[`${framework}/pixhook+redis`]) },
      target: QUEUED_TARGETS.minVsRedis,
      holds: vsRedis.median >= QUEUED_TARGETS.minVsRedis,
    });
    // Informational: against the default, in-memory inline mode.
    comparisons.push({
      label: `${framework}: queued (BullMQ) ÷ inline with MemoryStore`,
      ratio: spread(ratios(rps(id), rps(`${framework}/pixhook`))),
      p99: { mine: p99Of(runs[id]), theirs: p99Of(runs[`${framework}/pixhook`]) },
    });
  }
  // Queued on pg-boss against inline PostgresStore, on the same Postgres: req/s, and what a delivery
  // costs in all (server, worker and Postgres CPU) on each side.
  for (const framework of QUEUED_FRAMEWORKS) {
    const id = `${framework}/pixhook+pg-boss`;
    const inline = `${framework}/pixhook+postgres`;
    if (!runs[id] || !runs[inline]) continue;
    const vsPostgres = spread(ratios(rps(id), rps(inline)));
    informational.push(saturatedP99(framework, 'pg-boss', runs[id], connections));
    comparisons.push({
      label: `${framework}: queued (pg-boss) ÷ inline with PostgresStore`,
      ratio: vsPostgres,
      p99: { mine: p99Of(runs[id]), theirs: p99Of(runs[inline]) },
      target: PG_BOSS_TARGETS.minVsPostgres,
      holds: vsPostgres.median >= PG_BOSS_TARGETS.minVsPostgres,
    });
  }
  // Postgres: PostgresStore and transactional mode against MemoryStore, in the same rounds (no target:
  // the issue asks for the figures, honestly reported).
  for (const framework of POSTGRES_FRAMEWORKS) {
    const memory = `${framework}/pixhook`;
    for (const [store, label] of [
      ['postgres', 'PostgresStore'],
      ['transactions', 'transactional (PostgresTransactions, one INSERT in the handler)'],
    ]) {
      const id = `${framework}/pixhook+${store}`;
      if (!runs[id] || !runs[memory]) continue;
      const ratio = spread(ratios(rps(id), rps(memory)));
      const target = store === 'postgres' ? DURABLE_TARGETS.minStoreVsMemory : DURABLE_TARGETS.minTransactionsVsMemory;
      comparisons.push({
        framework,
        postgres: store,
        label: `${framework}: ${label} ÷ MemoryStore`,
        ratio,
        // Postgres' own CPU is not in the server's figure: no capacity ratio.
        p99: { mine: p99Of(runs[id]), theirs: p99Of(runs[memory]) },
        target,
        holds: ratio.median >= target,
      });
    }
  }
  // The stretch: the fastest durable acknowledgement of each framework (queued on BullMQ or pg-boss,
  // or transactional) against inline processing with MemoryStore, in the same rounds.
  for (const framework of QUEUED_FRAMEWORKS) {
    const memory = `${framework}/pixhook`;
    const durable = ['bullmq', 'pg-boss', 'transactions']
      .map((store) => `${framework}/pixhook+${store}`)
      .filter((id) => runs[id] && runs[memory])
      .map((id) => ({ id, ratio: spread(ratios(rps(id), rps(memory))) }));
    if (durable.length === 0) continue;
    const best = durable.reduce((a, b) => (b.ratio.median > a.ratio.median ? b : a));
    comparisons.push({
      label: `${framework}: the fastest durable acknowledgement (${best.id.split('+')[1]}) ÷ inline with MemoryStore (stretch)`,
      ratio: best.ratio,
      p99: { mine: p99Of(runs[best.id]), theirs: p99Of(runs[memory]) },
      target: DURABLE_TARGETS.minDurableVsMemory,
      holds: best.ratio.median >= DURABLE_TARGETS.minDurableVsMemory,
    });
  }
  return {
    rows,
    comparisons,
    thresholds,
    informational,
    problems,
    // Every run's own figures, per server, in round order.
    runs,
    redis: redis.port
      ? {
          version: redis.version,
          framework: REDIS_FRAMEWORK,
          queued: QUEUED_FRAMEWORKS,
          workerConcurrency: WORKER_CONCURRENCY,
        }
      : { skipped: redis.skipped },
    postgres: postgres.url
      ? { version: postgres.version, settings: postgres.settings, poolMax: POOL_MAX, frameworks: POSTGRES_FRAMEWORKS }
      : { skipped: postgres.skipped },
    nest: { platforms: NEST_PLATFORMS },
  };
}

/**
 * A Postgres server's figures across rounds: the cluster's CPU per request (from /proc) and the
 * statements the server sent per request (each one round trip); nothing for other servers.
 */
function postgresFigures(list) {
  if (!list.every((r) => r.postgresCpuPerRequest !== undefined)) return {};
  return {
    postgresCpuPerRequest: spread(list.map((r) => r.postgresCpuPerRequest)),
    queriesPerRequest: spread(list.map((r) => r.queriesPerRequest)),
    // Queued on pg-boss: the cluster's CPU per job until the worker had started them all (the
    // round's answers and the rest of its jobs' runs), and the worker's statements per job.
    ...(list.every((r) => r.postgresCpuPerJob !== undefined)
      ? { postgresCpuPerJob: spread(list.map((r) => r.postgresCpuPerJob)) }
      : {}),
    ...(list.every((r) => r.workerQueriesPerJob !== undefined)
      ? { workerQueriesPerJob: spread(list.map((r) => r.workerQueriesPerJob)) }
      : {}),
  };
}

/**
 * A queued server's worker figures across rounds: the time from each job's write to its handler's
 * start (p50 and p99 of each round's jobs, all of them, those started after the round included),
 * the jobs answered but not yet started when the round ended, how long the rest took to start,
 * and the worker's CPU per job.
 */
function queuedFigures(list) {
  const of = (pick) => spread(list.map(pick));
  return {
    lagP50: of((r) => r.lag.p50 ?? Number.NaN),
    lagP99: of((r) => r.lag.p99 ?? Number.NaN),
    lagMax: of((r) => r.lag.max ?? Number.NaN),
    backlog: of((r) => r.backlog),
    drainMs: of((r) => r.drainMs),
    workerCpuPerJob: of((r) => r.workerCpuPerJob),
  };
}
