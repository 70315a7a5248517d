// Runs the ordering benchmark (./run.mjs) in its own process pinned to the load generator's core,
// with a redis-server and a Postgres cluster of its own on the servers' core, and turns its timings
// into rows: CPU and wall-clock time per call, and per round the ratio to its baseline (the same store
// without the guard, or with the handler unnamed) and what it adds.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { startPostgres } from '../http/postgres-server.mjs';
import { startRedis } from '../http/redis-server.mjs';
import { inProcessRows } from '../inprocess.mjs';
import { CORE } from '../pin.mjs';

const script = fileURLToPath(new URL('./run.mjs', import.meta.url));
const CI = process.env.CI === 'true' || process.env.CI === '1';

export async function runOrdering({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  const problems = [];
  const notes = [];
  const redis = await startRedis({ core: CORE.server });
  let postgres;
  try {
    postgres = await startPostgres({ core: CORE.server });
  } catch (error) {
    postgres = { skipped: `Postgres did not start: ${error?.message ?? error}` };
    problems.push(postgres.skipped);
  }
  if (postgres.missing) {
    notes.push(postgres.skipped);
    if (CI) problems.push(`CI is set and Postgres is not installed: ${postgres.skipped}`);
  }
  if (redis.skipped) notes.push(redis.skipped);
  for (const note of notes) process.stderr.write(`  ordering: ${note}\n`);
  let child;
  try {
    child = await startChild(script, { core: CORE.client });
    const {
      candidates,
      ns,
      wallNs,
      notes: more,
      ...run
    } = await child.call({
      rounds,
      minCpuTimeMs,
      warmCpuTimeMs,
      redisPort: redis.port,
      postgresUrl: postgres.url,
    });
    for (const note of more) process.stderr.write(`  ordering: ${note}\n`);
    return {
      ...run,
      rows: inProcessRows(candidates, ns, wallNs),
      notes: [...notes, ...more],
      problems,
      redis: redis.port ? { version: redis.version } : { skipped: redis.skipped },
      postgres: postgres.url ? { version: postgres.version } : { skipped: postgres.skipped },
    };
  } finally {
    await child?.stop();
    await redis.stop?.();
    await postgres.stop?.();
  }
}
