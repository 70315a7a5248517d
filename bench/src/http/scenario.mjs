// HTTP end to end: every server in its own process on the server core, autocannon in another on
// the client core; every round runs each server once, in an order that rotates and reverses between rounds, so that ratios compare
// runs made seconds apart.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { CORE } from '../pin.mjs';
import { ratios, roundOrder, spread } from '../stats.mjs';
import { VARIANTS } from './apps.mjs';
import { startRedis } from './redis-server.mjs';

const serverScript = fileURLToPath(new URL('./server.mjs', import.meta.url));
const loadScript = fileURLToPath(new URL('./load.mjs', import.meta.url));

/**
 * Targets of the issue: each adapter, with its default MemoryStore, at least as cheap as the
 * hand-written baseline of its framework (capacity ratio from server CPU per request ≥ 1×) with
 * req/s and p99 latency no worse; Express at least Octokit's middleware; Redis ≥ 0.8× Memory.
 */
export const HTTP_TARGETS = { minVsBaseline: 1, minVsOctokit: 1, minRedisVsMemory: 0.8 };

/** The median of the per-round p99 latencies, in ms. */
const p99Of = (runs) => spread(runs.map((r) => r.p99)).median;

/** The framework the Redis-versus-memory comparison runs in. */
const REDIS_FRAMEWORK = 'express';

function configs(redis) {
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
  }
  if (redis.port) {
    list.push({
      id: `${REDIS_FRAMEWORK}/pixhook+redis`,
      framework: REDIS_FRAMEWORK,
      variant: 'pixhook',
      store: 'redis',
      redisPort: redis.port,
      scheme: 'pixhook',
    });
  }
  return list;
}

/** Problems that make a run count as broken: any error, timeout or non-2xx answer, or no answer at all. */
function problemsOf(id, r) {
  const problems = [];
  if (r.requests === 0 || r.ok === 0) problems.push(`${id}: no request answered`);
  if (r.non2xx > 0) problems.push(`${id}: ${r.non2xx} non-2xx answers`);
  if (r.errors > 0) problems.push(`${id}: ${r.errors} connection errors`);
  if (r.timeouts > 0) problems.push(`${id}: ${r.timeouts} timeouts`);
  return problems;
}

export async function runHttp({ rounds, seconds, warmSeconds, connections, frameworks }) {
  const wanted = (c) => !frameworks || frameworks.includes(c.framework);
  const redis =
    !frameworks || frameworks.includes(REDIS_FRAMEWORK)
      ? await startRedis({ core: CORE.client })
      : { skipped: 'not selected' };
  const list = configs(redis).filter(wanted);
  const servers = new Map();
  const load = await startChild(loadScript, { core: CORE.client });
  const runs = Object.fromEntries(list.map((c) => [c.id, []]));
  const problems = [];
  try {
    for (const config of list) {
      const { id, scheme, ...options } = config;
      servers.set(id, await startChild(serverScript, { core: CORE.server, args: [JSON.stringify(options)] }));
    }
    const fire = async (config, secs) => {
      const server = servers.get(config.id);
      const { port } = server.ready;
      const before = await server.call({ cmd: 'cpu' });
      const result = await load.call({
        cmd: 'run',
        port,
        scheme: config.scheme,
        seconds: secs,
        connections,
        // A bound on the count as well as the time: far above what one core serves in `secs`.
        maxRequests: Math.ceil(secs * 200_000),
      });
      const after = await server.call({ cmd: 'cpu' });
      // Server CPU per answered request: its cost, independent of the load generator's ceiling.
      result.cpuPerRequest = (after.cpu - before.cpu) / Math.max(1, result.requests);
      problems.push(...problemsOf(config.id, result));
      const ran = after.handled - before.handled;
      if (config.variant !== 'bare' && ran < result.ok) {
        problems.push(`${config.id}: ${result.ok} answers 2xx but handlers ran ${ran} times`);
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
  } finally {
    for (const server of servers.values()) {
      await server.call({ cmd: 'close' }).catch(() => {});
      await server.stop();
    }
    await load.stop();
    await redis.stop?.();
  }
  return summarise(list, runs, problems, redis);
}

function summarise(list, runs, problems, redis) {
  const rps = (id) => runs[id].map((r) => r.rps);
  // Requests one core could serve, from server CPU per request: baseline CPU ÷ adapter CPU.
  const capacity = (a, b) => spread(ratios(cpu(b), cpu(a)));
  const cpu = (id) => runs[id].map((r) => r.cpuPerRequest);
  const rows = list.map(({ id, framework, variant, store }) => ({
    id,
    framework,
    variant: { redis: 'pixhook, RedisStore', none: 'pixhook, store: false' }[store] ?? variant,
    rps: spread(rps(id)),
    p50: spread(runs[id].map((r) => r.p50)),
    p99: spread(runs[id].map((r) => r.p99)),
    requests: runs[id].reduce((sum, r) => sum + r.requests, 0),
    errors: runs[id].reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    non2xx: runs[id].reduce((sum, r) => sum + r.non2xx, 0),
    cpuPerRequest: spread(runs[id].map((r) => r.cpuPerRequest)),
    vsBare: spread(ratios(rps(id), rps(`${framework}/bare`))),
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
  if (redis.port) {
    const r = spread(ratios(rps(`${REDIS_FRAMEWORK}/pixhook+redis`), rps(`${REDIS_FRAMEWORK}/pixhook`)));
    comparisons.push({
      label: `${REDIS_FRAMEWORK}: pixhook with RedisStore ÷ with MemoryStore`,
      ratio: r,
      // redis-server's own CPU is not in the server's figure, so no capacity ratio here.
      target: HTTP_TARGETS.minRedisVsMemory,
      holds: r.median >= HTTP_TARGETS.minRedisVsMemory,
    });
  }
  return {
    rows,
    comparisons,
    problems,
    // Every run's own figures, per server, in round order.
    runs,
    redis: redis.port ? { version: redis.version, framework: REDIS_FRAMEWORK } : { skipped: redis.skipped },
  };
}
