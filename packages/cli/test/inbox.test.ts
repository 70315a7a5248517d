/**
 * `pixhook inbox`, the built binary against a real PostgresArchive and a real RedisArchive: the
 * archive is seeded through its public API (record()), or by a real Webhooks given it (for replay).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openInbox } from '@pixhook/cli';
import {
  type AnyEvent,
  type ArchivedDelivery,
  type ArchivedStep,
  type InboxReader,
  type WebhookArchive,
  Webhooks,
} from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { migrateArchive, PostgresArchive } from '@pixhook/postgres';
import { RedisArchive } from '@pixhook/redis';
import { ensureBuilt, run, SECRET } from '@pixhook/test-helpers/cli';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, type TestContext, test } from 'vitest';

// What a terminal acts on instead of showing: C0 but the line feed, DEL, C1 (0x9b is CSI), bidi controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

type Archive = WebhookArchive & InboxReader;

interface JsonSummary {
  eventId: string;
  eventType: string;
  lastAt: number;
  outcome: string;
  deliveries: number;
  bytes: number;
  mode: string;
}

interface JsonEvent extends JsonSummary {
  headers: Record<string, string>;
  body: string;
  text: string | null;
  timeline: { kind: string; result: string; deliveryId?: string; runs: { handler: string; ok: boolean }[] }[];
}

let postgres: PostgresServer;
let redis: RedisServer;
let pool: pg.Pool;
let redisClient: Redis;

beforeAll(async () => {
  ensureBuilt();
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 5 });
  pool.on('error', () => {});
  redisClient = new Redis({ port: redis.port, host: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  redisClient?.disconnect();
  await pool?.end();
  await Promise.all([postgres?.close(), redis?.close()]);
});

const unique = () => globalThis.crypto.randomUUID().replaceAll('-', '').slice(0, 10);
const newId = () => `evt_${unique()}`;

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function delivery(eventId: string, over: Partial<ArchivedDelivery> = {}): ArchivedDelivery {
  const eventType = over.eventType ?? 'image.created';
  return {
    kind: 'delivery',
    eventId,
    eventType,
    created: 1_700_000_000,
    deliveryId: `dlv_${unique()}`,
    timestamp: 1_700_000_000,
    at: Date.now(),
    body: new TextEncoder().encode(JSON.stringify({ id: eventId, type: eventType })),
    headers: { 'content-type': 'application/json', 'x-service-signature': 't=1700000000,v1=00ff' },
    secretIndex: 0,
    mode: 'inline',
    status: 200,
    result: 'processed',
    ms: 3,
    runs: [{ handler: 'onImage', ms: 2, ok: true }],
    ...over,
  };
}

function step(eventId: string, over: Partial<ArchivedStep> = {}): ArchivedStep {
  return {
    kind: 'job',
    eventId,
    eventType: 'image.created',
    at: Date.now(),
    result: 'failed',
    jobId: 'job-1',
    attempt: 1,
    maxAttempts: 3,
    ms: 4,
    runs: [{ handler: 'onImage', ms: 4, ok: false, error: 'Error: billing API down' }],
    error: 'Error: billing API down',
    ...over,
  };
}

/** Closes what a test opened when that test ends (the test's own hook: right in concurrent tests too). */
type OnTestFinished = TestContext['onTestFinished'];

interface Backend {
  /** A fresh archive (its own table or prefix), closed when the test ends, and the CLI arguments that name it. */
  open(
    onTestFinished: OnTestFinished,
    options?: { replayPollMs?: number },
  ): Promise<{ archive: Archive; args: string[] }>;
  /** The URL with a password and a port nothing listens on. */
  downUrl(port: number): string;
  shownDown(port: number): string;
}

const backends: Record<'postgres' | 'redis', Backend> = {
  postgres: {
    async open(onTestFinished, options = {}) {
      const table = `inbox_${unique()}`;
      await migrateArchive(pool, { table });
      const archive = new PostgresArchive(pool, { table, pruneIntervalMs: false, ...options });
      onTestFinished(() => archive.close());
      return { archive, args: ['--postgres', postgres.url, '--table', table] };
    },
    downUrl: (port) => `postgres://app:s3cret@127.0.0.1:${port}/app`,
    shownDown: (port) => `postgres://app:***@127.0.0.1:${port}/app`,
  },
  redis: {
    async open(onTestFinished, options = {}) {
      const prefix = `inbox-cli:${unique()}`;
      const archive = new RedisArchive(redisClient, { prefix, pruneIntervalMs: false, ...options });
      onTestFinished(() => archive.close());
      return { archive, args: ['--redis', `redis://127.0.0.1:${redis.port}`, '--prefix', prefix] };
    },
    downUrl: (port) => `redis://:s3cret@127.0.0.1:${port}`,
    shownDown: (port) => `redis://:***@127.0.0.1:${port}`,
  },
};

function parse<T>(stdout: string): T {
  return JSON.parse(stdout) as T;
}

test('help: the group and each subcommand, their options and examples; never a URL from the environment', async () => {
  const env = { DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:5432/app', REDIS_URL: 'redis://:s3cret@127.0.0.1:6379' };
  const subcommands = ['list', 'show', 'replay', 'export'];
  const [main, group, ...each] = await Promise.all([
    run(['--help']),
    run(['inbox', '--help'], { env }),
    ...subcommands.map((command) => run(['inbox', command, '--help'], { env })),
  ]);
  expect(main.stdout).toContain('$ pixhook inbox list');
  expect(group.code).toBe(0);
  for (const command of subcommands) expect(group.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
  expect(group.stdout).toContain('$ pixhook inbox replay --outcome failed --since 1d --yes');
  for (const result of [group, ...each]) {
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain('s3cret');
  }
  for (const result of each) {
    expect(result.stdout).toContain('--postgres [url]');
    expect(result.stdout).toContain('(default: "pixhook_inbox")');
    expect(result.stdout).toMatch(/\(default:\s+"pixhook:inbox"\)/);
  }
  expect(each[0]?.stdout).toContain('(default: 50)');
  expect(each[2]?.stdout).toContain('(default: 1000)');
  expect(each[2]?.stdout).toContain('(default: 60)');
});

describeWithPostgres('pixhook inbox', () => {
  for (const [name, backend] of Object.entries(backends)) {
    // Concurrently: each test has its own table or prefix, and the two backends share nothing; the
    // tests spend their time waiting for the CLI processes they start.
    describe.concurrent(`on ${name === 'postgres' ? 'a PostgresArchive' : 'a RedisArchive'}`, () => {
      test('list: a table newest first, --json, each filter, and pages by --cursor without duplicates or gaps', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished);
        const now = Date.now();
        const ids = Array.from({ length: 5 }, newId);
        const types = ['image.created', 'image.deleted', 'image.created', 'quota.warned', 'image.created'];
        const deliveryIds: string[] = [];
        for (const [index, id] of ids.entries()) {
          const entry = delivery(id, { eventType: types[index] as string, at: now - (5 - index) * 60_000 });
          deliveryIds.push(entry.deliveryId);
          await archive.record(entry);
        }
        // The second event failed later on: a job step, its outcome now failed and its lastAt the newest.
        await archive.record(step(ids[1] as string, { eventType: 'image.deleted', at: now - 1_000 }));
        const newestFirst = [ids[1], ids[4], ids[3], ids[2], ids[0]];

        const since = new Date(now - 3.5 * 60_000).toISOString();
        const until_ = new Date(now - 1.5 * 60_000).toISOString();
        const [text, json, byType, byOutcome, byTime, byEvent, byDelivery, byDuration, first] = await Promise.all([
          run(['inbox', 'list', ...args]),
          run(['inbox', 'list', ...args, '--json']),
          run(['inbox', 'list', ...args, '--json', '--type', 'image.created']),
          run(['inbox', 'list', ...args, '--json', '--outcome', 'failed']),
          run(['inbox', 'list', ...args, '--json', '--since', since, '--until', until_]),
          run(['inbox', 'list', ...args, '--json', '--event', ids[2] as string]),
          run(['inbox', 'list', ...args, '--json', '--delivery', deliveryIds[3] as string]),
          run(['inbox', 'list', ...args, '--json', '--since', '90s']),
          run(['inbox', 'list', ...args, '--limit', '2']),
        ]);
        expect(text.code, text.stderr).toBe(0);
        expect(text.stdout).toMatch(/LAST AT +OUTCOME +EVENT TYPE +EVENT ID +DELIVERIES +BYTES +MODE/);
        expect(text.stdout).toMatch(new RegExp(`\\dZ +failed +image\\.deleted +${ids[1]} +1 +\\d+ +inline`));
        expect(text.stdout).toMatch(new RegExp(`\\dZ +processed +quota\\.warned +${ids[3]} +1 +\\d+ +inline`));
        expect(text.stdout.indexOf(ids[1] as string)).toBeLessThan(text.stdout.indexOf(ids[0] as string));
        expect(text.stdout).toContain('5 events; the last page');

        expect(json.code, json.stderr).toBe(0);
        const page = parse<{ items: JsonSummary[]; next: string | null }>(json.stdout);
        expect(page.items.map((item) => item.eventId)).toEqual(newestFirst);
        expect(page.next).toBeNull();
        expect(page.items[0]).toMatchObject({
          eventType: 'image.deleted',
          outcome: 'failed',
          deliveries: 1,
          mode: 'inline',
        });

        const idsOf = (result: { stdout: string; stderr: string; code: number | null }) => {
          expect(result.code, result.stderr).toBe(0);
          return parse<{ items: JsonSummary[] }>(result.stdout).items.map((item) => item.eventId);
        };
        expect(idsOf(byType)).toEqual([ids[4], ids[2], ids[0]]);
        expect(idsOf(byOutcome)).toEqual([ids[1]]);
        expect(idsOf(byTime)).toEqual([ids[3], ids[2]]);
        expect(idsOf(byEvent)).toEqual([ids[2]]);
        expect(idsOf(byDelivery)).toEqual([ids[3]]);
        expect(idsOf(byDuration)).toEqual([ids[1], ids[4]]);

        // Pages of 2: the cursor of each leads to the next, and together they are the whole list.
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const result = await run([
            'inbox',
            'list',
            ...args,
            '--json',
            '--limit',
            '2',
            ...(cursor === null ? [] : ['--cursor', cursor]),
          ]);
          expect(result.code, result.stderr).toBe(0);
          const next = parse<{ items: JsonSummary[]; next: string | null }>(result.stdout);
          seen.push(...next.items.map((item) => item.eventId));
          cursor = next.next;
          pages++;
        } while (cursor !== null && pages < 10);
        expect(seen).toEqual(newestFirst);
        expect(pages).toBe(3);
        expect(first.stdout).toMatch(/2 events; next page: --cursor \S+/);
      }, 60_000);

      test('show: fields, headers, the body as escaped text, the timeline with its runs; --json byte-exact', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished);
        const id = newId();
        const body = new TextEncoder().encode(`{"id":"${id}","note":"caf\u00e9 \u001b[2J\u009b1m"}\n{"second":"line"}`);
        const first = delivery(id, {
          body,
          headers: { 'content-type': 'application/json', 'x-evil': 'a\u001b]0;owned\u0007b' },
        });
        await archive.record(first);
        await archive.record(step(id));
        await archive.record(
          delivery(id, { result: 'duplicate', status: 200, runs: [], headers: { 'x-service-delivery': 'dlv_again' } }),
        );
        const [text, json] = await Promise.all([
          run(['inbox', 'show', id, ...args]),
          run(['inbox', 'show', id, ...args, '--json']),
        ]);
        expect(text.code, text.stderr).toBe(0);
        expect(text.stdout).not.toMatch(RAW_CONTROL);
        expect(text.stdout).toContain(`Event ${id} in inbox`);
        expect(text.stdout).toMatch(/type +image\.created/);
        expect(text.stdout).toMatch(/outcome +failed/);
        expect(text.stdout).toMatch(/deliveries +2/);
        expect(text.stdout).toContain('x-evil: a\\x1b]0;owned\\x07b');
        expect(text.stdout).toContain(`Body (${body.byteLength} bytes, UTF-8 text`);
        expect(text.stdout).toContain(`  {"id":"${id}","note":"café \\x1b[2J\\x9b1m"}\n  {"second":"line"}\n`);
        expect(text.stdout).toMatch(new RegExp(`delivery +processed +200, delivery ${first.deliveryId}`));
        expect(text.stdout).toMatch(/job +failed +attempt 1\/3, job job-1/);
        expect(text.stdout).toContain('error Error: billing API down');
        expect(text.stdout).toMatch(/✗ onImage .*Error: billing API down/);
        expect(text.stdout).toMatch(/delivery +duplicate/);

        expect(json.code, json.stderr).toBe(0);
        const event = parse<JsonEvent>(json.stdout);
        expect(Buffer.from(event.body, 'base64').equals(Buffer.from(body))).toBe(true);
        expect(event.text).toBe(new TextDecoder().decode(body));
        expect(event.headers).toEqual(first.headers);
        expect(event.timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
          'delivery:processed',
          'job:failed',
          'delivery:duplicate',
        ]);
        expect(event).toMatchObject({ eventId: id, outcome: 'failed', deliveries: 2, bytes: body.byteLength });
      });

      test('show: a body that is not UTF-8 in hexadecimal, byte-exact in --json; an unknown id exits 1', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished);
        const id = newId();
        const body = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x01, 0x41, 0x80, 0x7d]);
        await archive.record(delivery(id, { body }));
        const [text, json, missing] = await Promise.all([
          run(['inbox', 'show', id, ...args]),
          run(['inbox', 'show', id, ...args, '--json']),
          run(['inbox', 'show', 'evt_not_there', ...args]),
        ]);
        expect(text.code, text.stderr).toBe(0);
        expect(text.stdout).toContain('Body (8 bytes, not UTF-8: in hexadecimal)');
        expect(text.stdout).toContain('  00000000  7b ff fe 00 01 41 80 7d');
        expect(text.stdout).toMatch(/7d +\{\.\.\.\.A\.\}\n/);
        const event = parse<JsonEvent>(json.stdout);
        expect([...Buffer.from(event.body, 'base64')]).toEqual([...body]);
        expect(event.text).toBeNull();
        expect(missing.code).toBe(1);
        expect(missing.stdout).toBe('');
        expect(missing.stderr).toMatch(/^pixhook: No event "evt_not_there" in inbox /);
      });

      test('replay <id> --wait: a running app runs the handlers once more, recorded in the timeline; --json', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished, { replayPollMs: 100 });
        const runs: string[] = [];
        let failing = false;
        const webhooks = new Webhooks({ secret: SECRET, archive });
        webhooks.onError(() => {});
        webhooks.on('image.created', async function onImage(event) {
          runs.push(event.id);
          if (failing) throw new Error('still broken');
        });
        const events = [createTestEvent('image.created'), createTestEvent('image.created')] as AnyEvent[];
        for (const event of events) {
          const { headers, body } = createSignedRequest(event, { secret: SECRET });
          expect((await webhooks.handle({ method: 'POST', headers, body })).status).toBe(200);
        }
        await until(async () => (await archive.get(events[1]?.id as string)) !== undefined, 'the archived deliveries');
        const [a, b] = events.map((event) => event.id) as [string, string];

        const one = await run(['inbox', 'replay', a, ...args, '--wait', '--timeout', '30']);
        expect(one.code, one.stderr).toBe(0);
        expect(one.stdout).toMatch(new RegExp(`✓ ${a} \\(image\\.created\\) replayed: processed in \\d`));
        expect(runs.filter((id) => id === a)).toHaveLength(2);
        const timeline = (await archive.get(a))?.timeline ?? [];
        expect(timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
          'delivery:processed',
          'replay:processed',
        ]);

        failing = true;
        const both = await run(['inbox', 'replay', a, b, 'evt_not_there', ...args, '--wait', '--json']);
        expect(both.code, both.stderr).toBe(1);
        const report = parse<{
          requested: number;
          missing: string[];
          results: { eventId: string; result: string; error?: string }[];
        }>(both.stdout);
        expect(report.requested).toBe(2);
        expect(report.missing).toEqual(['evt_not_there']);
        expect(report.results.map((result) => [result.eventId, result.result]).sort()).toEqual(
          [
            [a, 'failed'],
            [b, 'failed'],
          ].sort(),
        );
        expect(report.results[0]?.error).toContain('still broken');
        expect(runs.filter((id) => id === a)).toHaveLength(3);
        expect(runs.filter((id) => id === b)).toHaveLength(2);
      }, 90_000);

      test('replay by filters: the count without --yes (exit 2), --max, then requested with --yes; nobody attached: --wait times out', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished);
        const ids = Array.from({ length: 3 }, newId);
        // Real events' bytes: a replay parses them again.
        for (const id of ids) {
          const body = new TextEncoder().encode(JSON.stringify(createTestEvent('quota.warned', undefined, { id })));
          await archive.record(
            delivery(id, { eventType: 'quota.warned', body, result: 'failed', status: 500, code: 'HANDLER_FAILED' }),
          );
        }
        await archive.record(delivery(newId()));
        const filter = ['--outcome', 'failed', '--type', 'quota.warned'];
        const [unconfirmed, tooMany, confirmed, nothing, nobody] = await Promise.all([
          run(['inbox', 'replay', ...filter, ...args]),
          run(['inbox', 'replay', ...filter, ...args, '--yes', '--max', '2']),
          run(['inbox', 'replay', ...filter, ...args, '--yes', '--json']),
          run(['inbox', 'replay', '--type', 'no.such', ...args, '--yes']),
          run(['inbox', 'replay', ids[0] as string, ...args, '--wait', '--timeout', '1']),
        ]);
        expect(unconfirmed.code).toBe(2);
        expect(unconfirmed.stderr).toContain('3 events in inbox');
        expect(unconfirmed.stderr).toContain('add --yes to run their handlers again');
        expect(tooMany.code).toBe(2);
        expect(tooMany.stderr).toContain('More than 2 events in inbox');
        expect(confirmed.code, confirmed.stderr).toBe(0);
        expect(parse<{ requested: number }>(confirmed.stdout).requested).toBe(3);
        expect(nothing.code, nothing.stderr).toBe(0);
        expect(nothing.stdout).toContain('nothing to replay');
        expect(nobody.code).toBe(1);
        expect(nobody.stdout).toContain('1 replay not run within 1 s: is your app');
        // The requests are stored: an app attached now takes them (each once).
        const runs: string[] = [];
        const webhooks = new Webhooks({ secret: SECRET, archive });
        webhooks.onError(() => {});
        webhooks.onAny((event) => void runs.push(event.id));
        await until(() => ids.every((id) => runs.includes(id)), 'the requested replays');
      }, 60_000);

      test('export: NDJSON, one event per line with its body in base64, to stdout or --output; filters and --max', async ({
        expect,
        onTestFinished,
      }) => {
        const { archive, args } = await backend.open(onTestFinished);
        const ids = Array.from({ length: 4 }, newId);
        const now = Date.now();
        for (const [index, id] of ids.entries()) {
          await archive.record(
            delivery(id, { at: now - (4 - index) * 1000, body: new Uint8Array([index, 0xff, 0x0a]) }),
          );
        }
        const dir = mkdtempSync(join(tmpdir(), 'pixhook-export-'));
        try {
          const file = join(dir, 'events.ndjson');
          // A write that fails (a full disk: Linux's /dev/full) fails the command, it is not lost silently.
          const [stdout, toFile, limited, full] = await Promise.all([
            run(['inbox', 'export', ...args]),
            run(['inbox', 'export', ...args, '--output', file, '--event', ids[1] as string]),
            run(['inbox', 'export', ...args, '--max', '2']),
            existsSync('/dev/full') ? run(['inbox', 'export', ...args, '--output', '/dev/full']) : undefined,
          ]);
          expect(stdout.code, stdout.stderr).toBe(0);
          const lines = stdout.stdout
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line) as JsonEvent);
          expect(lines.map((line) => line.eventId)).toEqual([...ids].reverse());
          for (const line of lines) {
            const index = ids.indexOf(line.eventId);
            expect([...Buffer.from(line.body, 'base64')]).toEqual([index, 0xff, 0x0a]);
            expect(line.timeline).toHaveLength(1);
            expect(line.headers['content-type']).toBe('application/json');
          }
          expect(stdout.stderr).toContain('✓ 4 events of inbox');
          expect(toFile.code, toFile.stderr).toBe(0);
          expect(toFile.stdout).toBe('');
          const written = readFileSync(file, 'utf8').trimEnd().split('\n');
          expect(written).toHaveLength(1);
          expect((JSON.parse(written[0] as string) as JsonEvent).eventId).toBe(ids[1]);
          expect(toFile.stderr).toContain(`exported to ${file}`);
          expect(limited.stdout.trimEnd().split('\n')).toHaveLength(2);
          if (full) {
            expect(full.code, full.stderr).toBe(1);
            expect(full.stderr).toContain('Cannot write /dev/full: ENOSPC');
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });

      test('bad options exit 2 with a clear message; a server down exits 1 naming it, never the password', async ({
        expect,
        onTestFinished,
      }) => {
        const { args } = await backend.open(onTestFinished);
        const free = createServer();
        await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
        const downPort = (free.address() as AddressInfo).port;
        await new Promise((resolve) => free.close(resolve));
        const cases: [string[], number, string][] = [
          [['inbox', 'list', ...args, '--cursor', 'not-a-cursor'], 2, '--cursor is not one this inbox gave'],
          [['inbox', 'list', ...args, '--limit', '0'], 2, "option '--limit <n>' argument '0' is invalid"],
          [['inbox', 'list', ...args, '--limit', '501'], 2, 'expected a whole number from 1 to 500'],
          [
            ['inbox', 'list', ...args, '--outcome', 'lost'],
            2,
            'Allowed choices are processed, failed, queued, dead-letter',
          ],
          [['inbox', 'list', ...args, '--since', 'yesterday'], 2, 'expected an ISO date or date-time'],
          [['inbox', 'list', ...args, '--since', '1h', '--until', '2h'], 2, '--since must be before --until'],
          [['inbox', 'replay', ...args], 2, 'Name the events to replay'],
          [
            ['inbox', 'export', ...args, '--output', '/no/such/dir/x.ndjson'],
            2,
            'Cannot write /no/such/dir/x.ndjson: ENOENT',
          ],
          [['inbox', 'replay', 'evt_1', '--type', 'image.created', ...args], 2, 'not both'],
          [
            ['inbox', 'list', '--redis', backend.downUrl(downPort), '--postgres', backend.downUrl(downPort)],
            2,
            'not both',
          ],
          [
            ['inbox', 'list', backend === backends.postgres ? '--postgres' : '--redis', backend.downUrl(downPort)],
            1,
            backend.shownDown(downPort),
          ],
        ];
        const results = await Promise.all(cases.map(([command]) => run(command)));
        results.forEach((result, index) => {
          const [command, code, message] = cases[index] as (typeof cases)[number];
          expect(result.code, `${command.join(' ')}: ${result.stderr}`).toBe(code);
          expect(result.stderr).toContain(message);
          expect(result.stdout + result.stderr).not.toContain('s3cret');
          expect(result.stderr).not.toMatch(/^\s+at /m);
        });
      }, 60_000);
    });
  }

  // Concurrently with the tests above; the two that freeze Postgres below run alone.
  test.concurrent('where: --postgres alone reads DATABASE_URL, neither option the one variable set; both set, none, or the wrong naming option: exit 2', async ({
    expect,
    onTestFinished,
  }) => {
    const { archive, args } = await backends.postgres.open(onTestFinished);
    await archive.record(delivery(newId()));
    const table = args[3] as string;
    const redisUrl = `redis://127.0.0.1:${redis.port}`;
    const [alone, implicit, both, none, prefix, tableOnRedis, missingTable, unset] = await Promise.all([
      run(['inbox', 'list', '--postgres', '--table', table, '--json'], { env: { DATABASE_URL: postgres.url } }),
      run(['inbox', 'list', '--table', table, '--json'], { env: { DATABASE_URL: postgres.url } }),
      run(['inbox', 'list'], { env: { DATABASE_URL: postgres.url, REDIS_URL: redisUrl } }),
      run(['inbox', 'list']),
      run(['inbox', 'list', '--postgres', postgres.url, '--prefix', 'x']),
      run(['inbox', 'list', '--redis', redisUrl, '--table', 'x']),
      run(['inbox', 'list', '--postgres', postgres.url, '--table', 'no_such_inbox']),
      run(['inbox', 'list', '--postgres']),
    ]);
    for (const result of [alone, implicit]) {
      expect(result.code, result.stderr).toBe(0);
      expect(parse<{ items: unknown[] }>(result.stdout).items).toHaveLength(1);
    }
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Both DATABASE_URL and REDIS_URL are set');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Where is the inbox? Pass --postgres <url> or --redis <url>');
    expect(prefix.code).toBe(2);
    expect(prefix.stderr).toContain("--prefix is the Redis archive's");
    expect(tableOnRedis.code).toBe(2);
    expect(tableOnRedis.stderr).toContain("--table and --schema are the Postgres archive's");
    expect(missingTable.code).toBe(1);
    expect(missingTable.stderr).toContain(
      `There is no inbox table public.no_such_inbox on Postgres at ${postgres.url}`,
    );
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('--postgres without a URL reads DATABASE_URL, which is not set');
  }, 60_000);

  test('a Postgres that stopped answering (SIGSTOP): inbox and dead-letters --postgres exit 1 within seconds, saying so', async ({
    expect,
    onTestFinished,
  }) => {
    const { args } = await backends.postgres.open(onTestFinished);
    postgres.pause();
    try {
      const timed = async (command: string[]) => {
        const started = performance.now();
        return { ...(await run(command)), ms: performance.now() - started };
      };
      const [list, deadLetters] = await Promise.all([
        timed(['inbox', 'list', ...args]),
        timed(['dead-letters', 'list', '--postgres', postgres.url]),
      ]);
      for (const result of [list, deadLetters]) {
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toContain(`Postgres at ${postgres.url} did not answer within 5 s`);
        // 5 s of pixhook's own timer, then the process ends; the margin is for a busy machine.
        expect(result.ms, result.stderr).toBeLessThan(25_000);
      }
    } finally {
      postgres.resume();
    }
  }, 60_000);

  test('openInbox from code: a reader with where and kind; close() resolves within a second on a stalled Postgres and leaves the process running', async ({
    expect,
    onTestFinished,
  }) => {
    const { archive, args } = await backends.postgres.open(onTestFinished);
    const id = newId();
    await archive.record(delivery(id));
    const inbox = await openInbox({ postgres: postgres.url, table: args[3] });
    expect(inbox.kind).toBe('postgres');
    expect(inbox.where).toBe(`inbox public.${args[3]} on ${postgres.url}`);
    expect((await inbox.list()).items.map((item) => item.eventId)).toEqual([id]);
    await expect(inbox.list({ limit: 0 })).rejects.toThrow(TypeError);
    postgres.pause();
    try {
      const pending = inbox.get(id).catch((error: unknown) => error);
      const started = performance.now();
      await inbox.close();
      expect(performance.now() - started).toBeLessThan(5_000);
      // (A process.exit() from here on would fail this run: Vitest reports it.)
      postgres.resume();
      await pending;
    } finally {
      postgres.resume();
    }
  }, 60_000);
});
