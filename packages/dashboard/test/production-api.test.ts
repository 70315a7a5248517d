import { request } from 'node:http';
import { type Dashboard, startDashboard } from '@pixhook/dashboard';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import {
  bullmqDeadLetters,
  pgBossDeadLetters,
  postgresArchive,
  redisArchive,
  seedBinary,
  seedEvents,
  type TestArchive,
  uniqueName,
  until,
} from './helpers/production.js';

/**
 * The production views' JSON API (`/api/production…`) against a real PostgresArchive, RedisArchive,
 * BullMQ and pg-boss: what the page relies on, and what it refuses.
 */

let postgres: PostgresServer;
let redis: RedisServer;
let pool: pg.Pool;
let boss: PgBoss;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 10 });
  pool.on('error', () => {});
  boss = new PgBoss({ connectionString: postgres.url, schedule: false, max: 10 });
  boss.on('error', () => {});
  await boss.start();
}, 120_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await pool?.end();
  await Promise.all([postgres?.close(), redis?.close()]);
});

async function dashboardWith(options: Parameters<typeof startDashboard>[0]): Promise<Dashboard> {
  const dashboard = await startDashboard({ port: 0, ...options });
  cleanups.push(() => dashboard.close());
  return dashboard;
}

async function archive(kind: 'postgres' | 'redis'): Promise<TestArchive> {
  const opened = kind === 'postgres' ? await postgresArchive(pool) : redisArchive(redis.port);
  cleanups.push(() => opened.close());
  return opened;
}

/** A request with exactly these headers (fetch adds Sec-Fetch-* and sets Host itself). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text || '{}') }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** As the page calls it: Host and Origin of the dashboard. */
function api(dashboard: Dashboard, path: string, body?: unknown) {
  const origin = dashboard.url.slice(0, -1);
  const host = origin.slice('http://'.length);
  return raw(
    `${dashboard.url}api/production${path}`,
    body === undefined ? 'GET' : 'POST',
    body === undefined ? { host } : { host, origin, 'content-type': 'application/json' },
    body,
  );
}

describeWithPostgres('dashboard: the production API', () => {
  test.each(['postgres', 'redis'] as const)(
    'on a %sArchive: the list takes the inbox filters, an event comes with its body in base64 (and as text when UTF-8), bad input is a 400',
    async (kind) => {
      const { archive: inbox } = await archive(kind);
      const seeded = await seedEvents(inbox, 7);
      const binaryAt = Date.now();
      const binary = await seedBinary(inbox, binaryAt);
      const dashboard = await dashboardWith({ inbox });
      expect((await api(dashboard, '')).json).toEqual({ readOnly: false, inbox: true, deadLetters: [] });

      const first = await api(dashboard, '/inbox?limit=3');
      expect(first.status).toBe(200);
      const items = first.json.items as { eventId: string }[];
      expect(items.map((item) => item.eventId)).toEqual([binary.event.id, ...seeded.slice(0, 2).map((s) => s.id)]);
      const next = await api(dashboard, `/inbox?limit=3&cursor=${encodeURIComponent(first.json.next as string)}`);
      expect((next.json.items as { eventId: string }[]).map((item) => item.eventId)).toEqual(
        seeded.slice(2, 5).map((s) => s.id),
      );
      const failed = await api(dashboard, '/inbox?outcome=failed&type=image.created');
      expect((failed.json.items as { eventId: string }[]).map((item) => item.eventId)).toEqual(
        seeded.filter((s) => s.outcome === 'failed' && s.type === 'image.created').map((s) => s.id),
      );
      const since = seeded[2]?.at as number;
      const recent = await api(dashboard, `/inbox?since=${new Date(since).toISOString()}&until=${binaryAt}`);
      expect(recent.status).toBe(200);
      expect((recent.json.items as { eventId: string }[]).map((item) => item.eventId)).toEqual(
        seeded.slice(0, 3).map((s) => s.id),
      );

      const event = await api(dashboard, `/inbox/events/${encodeURIComponent(seeded[0]?.id as string)}`);
      expect(event.status).toBe(200);
      const text = Buffer.from(event.json.body as string, 'base64').toString('utf8');
      expect(event.json.text).toBe(text);
      expect(JSON.parse(text)).toMatchObject({ id: seeded[0]?.id, type: seeded[0]?.type });
      expect(event.json.timeline).toHaveLength(1);
      const bytes = await api(dashboard, `/inbox/events/${encodeURIComponent(binary.event.id)}`);
      expect(Buffer.from(bytes.json.body as string, 'base64')).toEqual(Buffer.from(binary.body));
      expect(bytes.json).not.toHaveProperty('text');

      for (const query of ['outcome=lost', 'limit=0', 'limit=abc', 'since=yesterday', 'cursor=not-a-cursor']) {
        const refused = await api(dashboard, `/inbox?${query}`);
        expect(refused.status, query).toBe(400);
        expect((refused.json.error as { message: string }).message, query).toMatch(/\S/);
      }
      expect((await api(dashboard, '/inbox/events/evt_not_there')).status).toBe(404);
    },
  );

  test('a filtered replay needs confirm set to the count the server finds: a 409 with the count, nothing requested, until then', async () => {
    const opened = await archive('redis');
    const seeded = await seedEvents(opened.archive, 10);
    const replayed: string[] = [];
    opened.another({ replayPollMs: 50 }).attach?.(async (eventId) => void replayed.push(eventId));
    const dashboard = await dashboardWith({ inbox: opened.archive });
    const query = { type: 'image.deleted' };
    const matching = seeded.filter((s) => s.type === 'image.deleted').map((s) => s.id);

    for (const confirm of [undefined, matching.length + 1, String(matching.length)]) {
      const refused = await api(dashboard, '/inbox/replay-matching', { query, confirm });
      expect(refused.status).toBe(409);
      expect(refused.json).toMatchObject({ error: { code: 'CONFIRM_COUNT' }, count: matching.length });
    }
    const done = await api(dashboard, '/inbox/replay-matching', { query, confirm: matching.length });
    expect(done).toEqual({ status: 200, json: { requested: matching.length } });
    await until(() => replayed.length === matching.length, 'the replays');
    // Only the confirmed request reached the app: nothing from the refused ones.
    expect([...replayed].sort()).toEqual([...matching].sort());

    expect((await api(dashboard, '/inbox/replay', { eventIds: [] })).status).toBe(400);
    expect((await api(dashboard, '/inbox/replay-matching', { query: { colour: 'red' } })).status).toBe(400);
    expect(await api(dashboard, '/inbox/replay', { eventIds: ['evt_not_archived'] })).toEqual({
      status: 200,
      json: { requested: 0 },
    });
  });

  test('dead letters of BullMQ and pg-boss: a page with the total, one by id, and retry-all / discard-all only with the current count', async () => {
    const name = uniqueName('dash-api').replace('_', '-');
    const bull = await bullmqDeadLetters(redis.port, name, 3);
    cleanups.push(() => bull.close());
    const pgboss = await pgBossDeadLetters(boss, name, 3);
    cleanups.push(() => pgboss.close());
    const dashboard = await dashboardWith({ deadLetters: [bull.queue, pgboss.queue] });
    expect((await api(dashboard, '')).json).toEqual({
      readOnly: false,
      inbox: false,
      deadLetters: [
        { id: '0', engine: 'bullmq', queueName: name },
        { id: '1', engine: 'pg-boss', queueName: name },
      ],
    });
    for (const [id, made] of [
      ['0', bull],
      ['1', pgboss],
    ] as const) {
      const page = await api(dashboard, `/dead-letters/${id}?limit=2&offset=1`);
      expect(page.json).toMatchObject({ total: 3, offset: 1, limit: 2 });
      expect(page.json.items).toHaveLength(2);
      const one = await api(dashboard, `/dead-letters/${id}/${encodeURIComponent(made.eventIds[0] as string)}`);
      expect(one.json).toMatchObject({ delivery: { event: { id: made.eventIds[0] } }, attemptsMade: 1 });
      expect(one.json.stack).toContain('the billing API is down');
      expect((await api(dashboard, `/dead-letters/${id}/evt_none`)).status).toBe(404);

      const refused = await api(dashboard, `/dead-letters/${id}/discard-all`, { confirm: 2 });
      expect(refused).toMatchObject({ status: 409, json: { count: 3 } });
      expect(await made.queue.countDeadLetters()).toBe(3);
      expect(await api(dashboard, `/dead-letters/${id}/discard`, { id: made.eventIds[0] })).toEqual({
        status: 200,
        json: { count: 1 },
      });
      expect((await api(dashboard, `/dead-letters/${id}/discard`, { id: made.eventIds[0] })).status).toBe(404);
      expect(await api(dashboard, `/dead-letters/${id}/discard-all`, { confirm: 2 })).toEqual({
        status: 200,
        json: { count: 2 },
      });
      expect(await made.queue.countDeadLetters()).toBe(0);
    }
    expect((await api(dashboard, '/dead-letters/7')).status).toBe(404);
    expect((await api(dashboard, '/dead-letters/0?limit=0')).status).toBe(400);
  });

  test('the Host and Origin guard covers the production routes: another Host, another Origin, a POST without Origin and a cross-site fetch are refused', async () => {
    const { archive: inbox } = await archive('postgres');
    const [event] = await seedEvents(inbox, 1);
    const replayed: string[] = [];
    const dashboard = await dashboardWith({ inbox });
    const origin = dashboard.url.slice(0, -1);
    const host = origin.slice('http://'.length);
    const port = host.split(':')[1];
    const url = `${dashboard.url}api/production/inbox`;
    const post = `${dashboard.url}api/production/inbox/replay`;
    const body = { eventIds: [event?.id] };
    const json = { 'content-type': 'application/json' };
    const refusals = [
      await raw(url, 'GET', { host: `evil.example:${port}` }),
      await raw(url, 'GET', { host, origin: 'https://evil.example' }),
      await raw(url, 'GET', { host, 'sec-fetch-site': 'cross-site' }),
      await raw(post, 'POST', { host, ...json }, body),
      await raw(post, 'POST', { host, origin: 'http://evil.example', ...json }, body),
      await raw(
        post,
        'POST',
        { host: `rebound.example:${port}`, origin: `http://rebound.example:${port}`, ...json },
        body,
      ),
    ];
    for (const refused of refusals) {
      expect(refused.status).toBe(403);
      expect(refused.json).toMatchObject({ error: { code: 'FORBIDDEN' } });
      expect(JSON.stringify(refused.json)).not.toContain(event?.id);
    }
    // Nothing was requested: the app attached now takes nothing, and the page's own call works.
    inbox.attach?.(async (eventId) => void replayed.push(eventId));
    expect(await api(dashboard, '/inbox/replay', body)).toEqual({ status: 200, json: { requested: 1 } });
    await until(() => replayed.length === 1, 'the one replay requested');
    expect(replayed).toEqual([event?.id]);
  });
});
