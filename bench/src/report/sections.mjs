// The result tables, as rows shared by the console and the Markdown report.
import { fineMs, int, intSpread, mark, mib, ns, ratio } from './format.mjs';

const KIND = { ascii: 'ASCII', utf8: 'UTF-8' };

/** One table per body size: each candidate's time per call and its ratio to floor + parse. */
export function verifyTables(verify) {
  const sizes = [...new Set(verify.rows.map((r) => r.size))];
  return sizes.map((size) => {
    const rows = verify.rows.filter((r) => r.size === size);
    const head = ['candidate'];
    for (const r of rows) head.push(`${KIND[r.kind]}: time per call`, `${KIND[r.kind]}: ÷ floor + parse`);
    const body = verify.candidates.map(({ id, label }) => {
      const cells = [label];
      for (const r of rows)
        cells.push(`${ns(r.time[id].median)} (${ns(r.time[id].min)}–${ns(r.time[id].max)})`, ratio(r.vsFloorParse[id]));
      return cells;
    });
    const stripe = ['Stripe ÷ pixhook (speed-up)'];
    for (const r of rows) stripe.push('', ratio(r.stripeSpeedup));
    body.push(stripe);
    return { title: `${size} bodies`, head, rows: body };
  });
}

// autocannon counts latency in whole milliseconds.
function latency(ms) {
  return ms < 1 ? '< 1' : ms.toFixed(1);
}

export function httpTable(http) {
  return {
    head: ['server', 'req/s', 'p50 ms', 'p99 ms', 'server CPU per request', '÷ bare', 'requests', 'errors', 'non-2xx'],
    rows: http.rows.map((r) => [
      `${r.framework} ${r.variant}`,
      intSpread(r.rps),
      latency(r.p50.median),
      latency(r.p99.median),
      `${r.cpuPerRequest.median.toFixed(1)} µs`,
      ratio(r.vsBare),
      int(r.requests),
      int(r.errors),
      int(r.non2xx),
    ]),
  };
}

/** A ratio, or `—` where there is none (a p99 of 0 ms, below autocannon's resolution, divides by zero). */
function ratioOrDash(s) {
  return s && Number.isFinite(s.median) && Number.isFinite(s.min) && Number.isFinite(s.max) ? ratio(s) : '—';
}

const PLATFORM_NAMES = { express: 'Express', fastify: 'Fastify' };
const PLAIN_PIXHOOK = { express: '`webhookMiddleware` (@pixhook/express)', fastify: '@pixhook/fastify plugin' };

/**
 * NestJS next to the plain framework of its platform, from the same rounds: per platform, the plain
 * bare route and pixhook adapter, then Nest's bare controller route and PixhookModule; each with its
 * ratios to the bare route of its own stack and, for Nest, to the same route on the plain framework.
 */
export function nestTable(http) {
  const byId = new Map(http.rows.map((r) => [r.id, r]));
  const rows = [];
  for (const [nest, platform] of Object.entries(http.nest?.platforms ?? {})) {
    const name = PLATFORM_NAMES[platform] ?? platform;
    for (const [id, stack, route] of [
      [`${platform}/bare`, name, 'bare'],
      [`${platform}/pixhook`, name, `pixhook: ${PLAIN_PIXHOOK[platform] ?? 'adapter'}`],
      [`${nest}/bare`, `Nest on ${name}`, 'bare: a controller route'],
      [`${nest}/pixhook`, `Nest on ${name}`, 'pixhook: `PixhookModule`'],
    ]) {
      const r = byId.get(id);
      if (!r) continue;
      rows.push([
        stack,
        route,
        intSpread(r.rps),
        latency(r.p50.median),
        latency(r.p99.median),
        `${r.cpuPerRequest.median.toFixed(1)} µs`,
        ratio(r.vsBare),
        ratioOrDash(r.p99VsBare),
        r.plain ? ratio(r.plain.rps) : '—',
        r.plain ? ratio(r.plain.capacity) : '—',
      ]);
    }
  }
  return {
    head: [
      'stack',
      'route',
      'req/s',
      'p50 ms',
      'p99 ms',
      'server CPU per request',
      'req/s ÷ bare of its stack',
      'p99 ÷ bare of its stack',
      'req/s ÷ same route, plain framework',
      'capacity ÷ same route, plain framework',
    ],
    rows,
  };
}

/** `+1.2 µs`, `−300 ns`: a difference of CPU times. */
function signedNs(value) {
  return value < 0 ? `−${ns(-value)}` : `+${ns(value)}`;
}

/** The Lambda handler in process: CPU time per call, calls per second of CPU, and both against `handle()`. */
export function lambdaTable(lambda) {
  return {
    head: ['call', 'time per call', 'ops/s (one core)', 'ops/s ÷ handle()', 'CPU added per call'],
    rows: lambda.rows.map((r) => [
      r.label,
      `${ns(r.time.median)} (${ns(r.time.min)}–${ns(r.time.max)})`,
      intSpread(r.ops),
      r.id === 'handle' ? '1 (itself)' : ratio(r.vsHandle),
      r.id === 'handle'
        ? '—'
        : `${signedNs(r.addedNs.median)} (${signedNs(r.addedNs.min)} to ${signedNs(r.addedNs.max)})`,
    ]),
  };
}

/**
 * An in-process scenario's rows (schema, tenant): time per call, and per round the ops/s ratio to
 * its baseline (the row named in `against`) and the CPU it adds per call.
 */
function inProcessTable(result, against) {
  const labels = new Map(result.rows.map((r) => [r.id, r.label]));
  return {
    head: ['call', 'time per call', 'ops/s (one core)', 'ops/s ÷ baseline', 'CPU added per call', 'baseline'],
    rows: result.rows.map((r) => [
      r.label,
      `${ns(r.time.median)} (${ns(r.time.min)}–${ns(r.time.max)})`,
      intSpread(r.ops),
      r.id === r.baseline ? '1 (itself)' : ratio(r.vsBaseline),
      r.id === r.baseline
        ? '—'
        : `${signedNs(r.addedNs.median)} (${signedNs(r.addedNs.min)} to ${signedNs(r.addedNs.max)})`,
      against(r, labels),
    ]),
  };
}

/** Schemas in process: each handler registration against the same handler without a schema. */
export function schemaTable(schema) {
  return inProcessTable(schema, (r) => (r.id === r.baseline ? '—' : 'no schema'));
}

/** A secret per tenant in process: accepted deliveries against a static secret, refusals against a wrong signature. */
export function tenantTable(tenant) {
  const names = { static: 'static secret', wrong: 'wrong signature' };
  return inProcessTable(tenant, (r) => (r.id === r.baseline ? '—' : (names[r.baseline] ?? r.baseline)));
}

/**
 * The ordering guard and named handlers in process: each row against the same store without the
 * guard (or with the handler unnamed), on the CPU clock (ops/s of one core, CPU added) and on the
 * wall clock (which counts the round trips to Redis and Postgres).
 */
export function orderingTable(ordering) {
  const added = (s) => `${signedNs(s.median)} (${signedNs(s.min)} to ${signedNs(s.max)})`;
  const labels = new Map(ordering.rows.map((r) => [r.id, r.label]));
  return {
    head: [
      'call',
      'CPU per call',
      'ops/s ÷ baseline (CPU)',
      'CPU added per call',
      'wall time per call',
      'calls/s ÷ baseline (wall)',
      'wall added per call',
      'baseline',
    ],
    rows: ordering.rows.map((r) => {
      const itself = r.id === r.baseline;
      return [
        r.label,
        `${ns(r.time.median)} (${ns(r.time.min)}–${ns(r.time.max)})`,
        itself ? '1 (itself)' : ratio(r.vsBaseline),
        itself ? '—' : added(r.addedNs),
        r.wall ? `${ns(r.wall.median)} (${ns(r.wall.min)}–${ns(r.wall.max)})` : '—',
        itself || !r.wall ? '—' : ratio(r.wallVsBaseline),
        itself || !r.wall ? '—' : added(r.wallAddedNs),
        itself ? '—' : (labels.get(r.baseline) ?? r.baseline),
      ];
    }),
  };
}

/** `1.0 (0.0–2.0)` ms from a spread of whole milliseconds; `—` when there is none. */
function msSpread(s) {
  if (!s || Number.isNaN(s.median)) return '—';
  return `${s.median.toFixed(1)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
}

/** Commands sent to Redis per delivery (each its own round trip): the server's, plus the worker's per job. */
function redisTrips(commands) {
  if (!commands?.server) return '—';
  const server = commands.server.median.toFixed(2);
  return commands.worker ? `${server} + ${commands.worker.median.toFixed(2)}` : server;
}

/** What redis-server ran per delivery: EVAL/EVALSHA calls, and every other command (those inside the scripts too). */
function redisRun(commands) {
  if (!commands?.scripts) return '—';
  return `${commands.scripts.median.toFixed(2)}, ${commands.inside.median.toFixed(1)}`;
}

/**
 * Queued mode next to inline processing in the same framework: one row each for the MemoryStore,
 * RedisStore and queued (BullMQ) servers, with what each costs the server, redis-server and the
 * worker, and for the queued one the time from the answer to the handler's start.
 */
export function queuedTable(http) {
  const byId = new Map(http.rows.map((r) => [r.id, r]));
  const rows = [];
  for (const framework of http.redis.queued ?? []) {
    for (const [id, processing] of [
      [`${framework}/pixhook`, 'inline, MemoryStore'],
      [`${framework}/pixhook+redis`, 'inline, RedisStore'],
      [`${framework}/pixhook+bullmq`, 'queued, BullMQ'],
    ]) {
      const r = byId.get(id);
      if (!r) continue;
      const q = r.queued;
      rows.push([
        framework,
        processing,
        intSpread(r.rps),
        latency(r.p50.median),
        latency(r.p99.median),
        `${r.cpuPerRequest.median.toFixed(1)} µs`,
        r.redisCpuPerRequest ? `${r.redisCpuPerRequest.median.toFixed(1)} µs` : '—',
        q ? `${q.workerCpuPerJob.median.toFixed(1)} µs` : '(in the server)',
        redisTrips(r.redisCommands),
        redisRun(r.redisCommands),
        q ? msSpread(q.lagP50) : 'before the answer',
        q ? msSpread(q.lagP99) : '—',
        q ? intSpread(q.backlog) : '—',
      ]);
    }
  }
  return {
    head: [
      'framework',
      'processing',
      'req/s',
      'p50 ms',
      'p99 ms',
      'server CPU per request',
      'redis-server CPU per request',
      'worker CPU per job',
      'Redis round trips per delivery: server + worker',
      'redis-server ran per delivery: scripts, commands',
      'answer → handler start, p50 ms',
      'p99 ms',
      'jobs waiting at round end',
    ],
    rows,
  };
}

/**
 * Queued mode on pg-boss next to inline PostgresStore, on the same Postgres, in the same rounds:
 * req/s, each part's CPU per delivery (server, worker, Postgres; Postgres' until the worker had
 * started every job of the round) and their sum, the statements per delivery of the server and of the
 * worker, and the time from the answer to the handler's start.
 */
export function pgBossTable(http) {
  const byId = new Map(http.rows.map((r) => [r.id, r]));
  const rows = [];
  const us = (value) => (value === undefined ? '—' : `${value.toFixed(1)} µs`);
  for (const framework of http.postgres?.frameworks ?? []) {
    for (const [id, processing] of [
      [`${framework}/pixhook+postgres`, 'inline, PostgresStore'],
      [`${framework}/pixhook+pg-boss`, 'queued, pg-boss'],
    ]) {
      const r = byId.get(id);
      if (!r) continue;
      const q = r.queued;
      const database = (r.postgresCpuPerJob ?? r.postgresCpuPerRequest)?.median;
      const worker = q?.workerCpuPerJob.median ?? 0;
      rows.push([
        framework,
        processing,
        intSpread(r.rps),
        latency(r.p50.median),
        latency(r.p99.median),
        us(r.cpuPerRequest.median),
        q ? us(worker) : '(in the server)',
        us(database),
        us(r.cpuPerRequest.median + worker + (database ?? 0)),
        r.queriesPerRequest ? r.queriesPerRequest.median.toFixed(2) : '—',
        r.workerQueriesPerJob ? r.workerQueriesPerJob.median.toFixed(2) : '—',
        q ? msSpread(q.lagP50) : 'before the answer',
        q ? msSpread(q.lagP99) : '—',
        q ? intSpread(q.backlog) : '—',
      ]);
    }
  }
  return {
    head: [
      'framework',
      'processing',
      'req/s',
      'p50 ms',
      'p99 ms',
      'server CPU per delivery',
      'worker CPU per job',
      'Postgres CPU per delivery',
      'CPU per delivery in all',
      'statements per delivery, server',
      'worker',
      'answer → handler start, p50 ms',
      'p99 ms',
      'jobs waiting at round end',
    ],
    rows,
  };
}

/** A share of one core, in %: CPU µs per request × requests per second. */
function coreShare(cpuPerRequest, rps) {
  return `${Math.round((cpuPerRequest * rps) / 1e4)}%`;
}

/** What each row's handler does, for the Postgres table. */
const HANDLER = {
  transactions: 'one INSERT through `context.transaction`, then counts',
  other: 'counts (no I/O)',
};

/**
 * Postgres next to MemoryStore and RedisStore in the same framework and rounds: req/s, its ratio to
 * MemoryStore (per round), p50 and p99, what each costs the servers' core and the database, the
 * statements per event, and how busy each core was (the servers' core: the server alone; the
 * other core: the database, redis-server or Postgres, with the load generator).
 */
export function postgresTable(http) {
  const byId = new Map(http.rows.map((r) => [r.id, r]));
  const rows = [];
  for (const framework of http.postgres?.frameworks ?? []) {
    for (const [id, processing] of [
      [`${framework}/pixhook`, 'MemoryStore'],
      [`${framework}/pixhook+redis`, 'RedisStore'],
      [`${framework}/pixhook+postgres`, 'PostgresStore'],
      [`${framework}/pixhook+transactions`, 'transactional (PostgresTransactions)'],
    ]) {
      const r = byId.get(id);
      if (!r) continue;
      const db = r.postgresCpuPerRequest ?? r.redisCpuPerRequest;
      const other = (db?.median ?? 0) + (r.loadCpuPerRequest?.median ?? 0);
      rows.push([
        framework,
        processing,
        HANDLER[id.endsWith('+transactions') ? 'transactions' : 'other'],
        intSpread(r.rps),
        r.vsMemory ? ratio(r.vsMemory) : '1 (itself)',
        latency(r.p50.median),
        latency(r.p99.median),
        `${r.cpuPerRequest.median.toFixed(1)} µs`,
        db ? `${db.median.toFixed(1)} µs` : '—',
        r.queriesPerRequest ? r.queriesPerRequest.median.toFixed(2) : '—',
        coreShare(r.cpuPerRequest.median, r.rps.median),
        r.loadCpuPerRequest ? coreShare(other, r.rps.median) : '—',
      ]);
    }
  }
  return {
    head: [
      'framework',
      'processing',
      'handler',
      'req/s',
      '÷ MemoryStore (req/s)',
      'p50 ms',
      'p99 ms',
      'server CPU per request',
      'database CPU per request',
      'statements per event',
      "servers' core busy",
      'other core busy (database + load generator)',
    ],
    rows,
  };
}

/** `0.78 (0.70–0.95)` ms from a spread measured in fractions of a millisecond. */
function fineMsSpread(s) {
  return `${fineMs(s.median)} (${fineMs(s.min)}–${fineMs(s.max)})`;
}

const PROCESSING = {
  memory: 'inline, MemoryStore',
  redis: 'inline, RedisStore',
  bullmq: 'queued, BullMQ',
  postgres: 'inline, PostgresStore',
  'pg-boss': 'queued, pg-boss',
};

/**
 * The fixed-rate runs: the MemoryStore, RedisStore and queued servers of each queued framework at
 * the same fixed pace, with the answer's p50 and p99, what each costs the servers' core and, queued,
 * the time to the handler's start.
 */
export function fixedTable(fixed) {
  return {
    head: [
      'framework',
      'processing',
      'req/s',
      'p50 ms',
      'p99 ms',
      'most in flight',
      'server CPU per request',
      'worker CPU per job',
      'Postgres CPU per delivery',
      'answer → handler start, p50 ms',
      'p99 ms',
    ],
    rows: fixed.rows.map((r) => [
      r.framework,
      PROCESSING[r.store],
      intSpread(r.rps),
      fineMsSpread(r.p50),
      fineMsSpread(r.p99),
      intSpread(r.maxInFlight),
      `${r.cpuPerRequest.median.toFixed(1)} µs`,
      r.queued ? `${r.queued.workerCpuPerJob.median.toFixed(1)} µs` : '(in the server)',
      r.postgresCpuPerJob || r.postgresCpuPerRequest
        ? `${(r.postgresCpuPerJob ?? r.postgresCpuPerRequest).median.toFixed(1)} µs`
        : '—',
      r.queued ? msSpread(r.queued.lagP50) : 'before the answer',
      r.queued ? msSpread(r.queued.lagP99) : '—',
    ]),
  };
}

export function comparisonTable(http) {
  return {
    head: ['comparison', 'req/s ratio', 'capacity ratio (server CPU)', 'p99 ms (this vs that)', 'target', 'result'],
    rows: http.comparisons.map((c) => [
      c.label,
      ratio(c.ratio),
      c.capacity ? ratio(c.capacity) : '—',
      c.p99 ? `${c.p99.mine} vs ${c.p99.theirs}` : '—',
      c.target === undefined
        ? '(no target)'
        : c.capacity
          ? `capacity and req/s ≥ ${c.target}×, p99 no higher`
          : `≥ ${c.target}×`,
      c.target === undefined ? '—' : mark(c.holds),
    ]),
  };
}

export function memoryTable(memory) {
  return {
    head: [
      'adapter',
      'deliveries in flight',
      'peak RSS growth per delivery',
      'peak Buffer memory per delivery',
      'Buffers kept while handlers run',
      'heap kept while handlers run',
      '≤ 4 MiB',
      'body held once',
    ],
    rows: memory.rows.map((r) => [
      r.framework,
      r.count,
      mib(r.rssGrowthPerDelivery),
      mib(r.peakBuffersPerDelivery),
      mib(Math.max(0, r.heldBuffersPerDelivery)),
      mib(r.heldHeapPerDelivery),
      mark(r.holds),
      r.bodyHeldOnce ? '✅ yes' : '❌ no',
    ]),
  };
}

export function targetTable(list) {
  return {
    head: ['target', 'this run (median, min–max)', 'result'],
    rows: list.map((t) => [t.target, t.worst, t.info ? '(no target)' : mark(t.holds)]),
  };
}

const ARCHIVE_LABELS = { postgres: 'PostgresArchive', redis: 'RedisArchive' };

/**
 * The inbox's cost per delivery: every server of the inbox scenario (each mode without an archive,
 * then with each archive), with req/s, p50/p99, server CPU per request, the stores' CPU per request,
 * the statements sent per event, and per round the archived server against the same mode without one.
 */
export function inboxCostTable(inbox) {
  const cpu = (s) => (s ? `${s.median.toFixed(1)} µs` : '—');
  return {
    head: [
      'mode',
      'archive',
      'req/s',
      'p50 ms',
      'p99 ms',
      'req/s ÷ no archive',
      'p99 ÷ no archive',
      'server CPU per request',
      'server CPU ÷ no archive',
      'Postgres CPU per request',
      'redis-server CPU per request',
      'worker CPU per job',
      'statements per event',
    ],
    rows: inbox.cost.rows.map((r) => [
      r.modeLabel,
      r.archive ? ARCHIVE_LABELS[r.archive] : 'none',
      intSpread(r.rps),
      latency(r.p50.median),
      latency(r.p99.median),
      r.vs ? ratioOrDash(r.vs.rps) : '',
      r.vs ? ratioOrDash(r.vs.p99) : '',
      `${r.cpuPerRequest.median.toFixed(1)} µs`,
      r.vs ? ratioOrDash(r.vs.cpu) : '',
      cpu(r.postgresCpuPerRequest),
      cpu(r.redisCpuPerRequest),
      cpu(r.workerCpuPerJob),
      r.queriesPerRequest ? r.queriesPerRequest.median.toFixed(2) : '—',
    ]),
  };
}

/** The inbox list's time: per archive and size, the median of each page's calls in ms, and how long the seeding took. */
export function inboxListTable(inbox) {
  const rows = [];
  for (const [kind, sizes] of Object.entries(inbox.list.archives)) {
    for (const r of sizes) {
      rows.push([
        ARCHIVE_LABELS[kind],
        int(r.size),
        fineMs(r.first),
        fineMs(r.deep),
        fineMs(r.type),
        fineMs(r.typeDeep),
        fineMs(r.typeOutcome),
        `${r.seedSeconds.toFixed(1)} s`,
        r.memoryBytes ? `${int(r.memoryBytes / 2 ** 20)} MiB` : '—',
      ]);
    }
  }
  return {
    head: [
      'archive',
      'events',
      'first page ms',
      'deep page ms',
      'type, first page ms',
      'type, deep page ms',
      'type + outcome ms',
      'seeded in',
      'size (table / Redis memory)',
    ],
    rows,
  };
}
