import { ensureBuilt, run } from '@pixhook/test-helpers/cli';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, type TestContext, test } from 'vitest';
import { type RunningDashboard, startDashboard } from './helpers/dashboard.js';
import { bullmqDeadLetters, pgBossDeadLetters, postgresArchive, seedEvents, uniqueName } from './helpers/production.js';

/**
 * `pixhook dashboard --postgres … --redis … --queue … --read-only` as a user runs it: the command
 * opens the archive and both engines' dead letters through the CLI's io/production.ts, prints
 * where (passwords masked), and the dashboard's API serves them.
 */

let postgres: PostgresServer;
let redis: RedisServer;
let pool: pg.Pool;
let boss: PgBoss;
/** A password the test cluster (trust authentication) ignores: it must never be printed. */
const PASSWORD = 'pw_s3cret_9f8e';

beforeAll(async () => {
  ensureBuilt('@pixhook/dashboard');
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 5 });
  pool.on('error', () => {});
  boss = new PgBoss({ connectionString: postgres.url, schedule: false, max: 5 });
  boss.on('error', () => {});
  await boss.start();
}, 180_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await pool?.end();
  await Promise.all([postgres?.close(), redis?.close()]);
});

/** The Postgres URL with a password in it. */
function withPassword(url: string): string {
  return url.replace('postgres@', `postgres:${PASSWORD}@`);
}

/** The dashboard, stopped when the test that started it ends (its own hook: right in concurrent tests). */
async function running(
  onTestFinished: TestContext['onTestFinished'],
  args: string[],
  env?: Record<string, string>,
): Promise<RunningDashboard> {
  const dashboard = await startDashboard(args, { secret: null, ...(env ? { env } : {}) });
  onTestFinished(() => dashboard.stop());
  return dashboard;
}

function api(dashboard: RunningDashboard, path: string, body?: unknown) {
  return fetch(`${dashboard.url}api/production${path}`, {
    ...(body === undefined
      ? {}
      : {
          method: 'POST',
          headers: { origin: dashboard.url.slice(0, -1), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
  });
}

// Concurrently: each test has its own table, queues and dashboard, closed when it ends (in reverse order).
describeWithPostgres.concurrent('pixhook dashboard with production', () => {
  test('--postgres --redis --queue --table --read-only: the inbox and both engines’ dead letters, changes refused, the password never printed', async ({
    expect,
    onTestFinished,
  }) => {
    const opened = await postgresArchive(pool);
    onTestFinished(() => opened.close());
    const seeded = await seedEvents(opened.archive, 3);
    const name = uniqueName('dash-cli').replace('_', '-');
    const bull = await bullmqDeadLetters(redis.port, name, 1);
    onTestFinished(() => bull.close());
    const pgboss = await pgBossDeadLetters(boss, name, 2);
    onTestFinished(() => pgboss.close());

    const dashboard = await running(onTestFinished, [
      '--postgres',
      withPassword(postgres.url),
      '--redis',
      `redis://127.0.0.1:${redis.port}`,
      '--queue',
      name,
      '--table',
      opened.table,
      '--read-only',
    ]);
    const info = await (await api(dashboard, '')).json();
    expect(info).toEqual({
      readOnly: true,
      inbox: true,
      deadLetters: [
        { id: '0', engine: 'pg-boss', queueName: name },
        { id: '1', engine: 'bullmq', queueName: name },
      ],
    });
    const page = (await (await api(dashboard, '/inbox')).json()) as { items: { eventId: string }[] };
    expect(page.items.map((item) => item.eventId)).toEqual(seeded.map((event) => event.id));
    expect(await (await api(dashboard, '/dead-letters/0')).json()).toMatchObject({ total: 2 });
    expect(await (await api(dashboard, '/dead-letters/1')).json()).toMatchObject({ total: 1 });

    const refused = await api(dashboard, '/dead-letters/0/discard-all', { confirm: 2 });
    expect(refused.status).toBe(403);
    expect(await pgboss.queue.countDeadLetters()).toBe(2);

    // Where it reads, printed with the password masked.
    await expect.poll(() => dashboard.output(), { timeout: 10_000 }).toContain('read-only');
    expect(dashboard.output()).toContain(`postgres://postgres:***@127.0.0.1:${postgres.port}/postgres`);
    expect(dashboard.output()).toContain(`queue ${name}`);
    expect(dashboard.output()).not.toContain(PASSWORD);
    expect(JSON.stringify(info)).not.toContain(PASSWORD);
  });

  test('--postgres alone reads DATABASE_URL; the views that cannot be opened are left out with a warning', async ({
    expect,
    onTestFinished,
  }) => {
    const opened = await postgresArchive(pool);
    onTestFinished(() => opened.close());
    await seedEvents(opened.archive, 2);
    // No pg-boss queue of that name: the dead letters are left out, the inbox is there.
    const dashboard = await running(
      onTestFinished,
      ['--postgres', '--queue', uniqueName('none').replace('_', '-'), '--table', opened.table],
      {
        DATABASE_URL: withPassword(postgres.url),
      },
    );
    const info = await (await api(dashboard, '')).json();
    expect(info).toEqual({ readOnly: false, inbox: true, deadLetters: [] });
    await expect
      .poll(() => dashboard.output(), { timeout: 10_000 })
      .toMatch(/warning: Dead letters \(pg-boss\): .*left out/);
    expect(dashboard.output()).toContain('add --read-only to only look');
    expect(dashboard.output()).not.toContain(PASSWORD);
  });

  test('usage errors (exit 2) and a server that cannot be reached (exit 1), the password masked', async ({
    expect,
  }) => {
    const [stray, noEnv, down] = await Promise.all([
      run(['dashboard', '--port', '0', '--queue', 'billing'], { secret: null }),
      run(['dashboard', '--port', '0', '--postgres'], { secret: null }),
      run(['dashboard', '--port', '0', '--redis', `redis://:${PASSWORD}@127.0.0.1:1`], { secret: null }),
    ]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/go with --postgres or --redis/);
    expect(noEnv.code).toBe(2);
    expect(noEnv.stderr).toMatch(/--postgres without a URL reads DATABASE_URL, which is not set/);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/Nothing of production could be opened/);
    expect(down.stderr).toContain('redis://:***@127.0.0.1:1');
    expect(`${down.stdout}${down.stderr}`).not.toContain(PASSWORD);
  });
});
