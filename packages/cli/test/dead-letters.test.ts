/**
 * `pixhook dead-letters`, the built binary against a real redis-server: the dead letters are made
 * for real, by a Webhooks in queued mode whose handler throws, run by a BullMQQueue worker.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { BullMQQueue } from '@pixhook/bullmq';
import { type AnyEvent, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue } from '@pixhook/pg-boss';
import { CLI, ensureBuilt, run, SECRET } from '@pixhook/test-helpers/cli';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, type TestContext, test } from 'vitest';

// What a terminal acts on instead of showing: C0 but the line feed, DEL, C1 (0x9b is CSI), bidi controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** A dead letter as `--json` prints it. */
interface JsonDeadLetter {
  jobId: string;
  eventId: string | null;
  type: string | null;
  attemptsMade: number;
  failedAt: number | null;
  error: string;
  stack: string | null;
  delivery: { event: AnyEvent; deliveryId: string; timestamp: number } | null;
}

/** Closes what a test opened when that test ends (the test's own hook: right in concurrent tests too). */
type OnTestFinished = TestContext['onTestFinished'];

let redis: RedisServer;
let redisUrl: string;

beforeAll(() => ensureBuilt());

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A queue (unique name, one attempt) holding a dead letter for each event: each is delivered signed
 * through `webhooks.handle()` (202), then run by a worker whose handler throws `message(event)`.
 * `state.failing = false` makes the handler succeed; `state.runs` counts its runs.
 */
async function deadLetters(
  onTestFinished: OnTestFinished,
  events: AnyEvent[],
  message: (event: AnyEvent) => string = () => 'billing API down',
) {
  const name = `cli-dead-letters-${randomUUID()}`;
  const queue = new BullMQQueue({ connection: { host: '127.0.0.1', port: redis.port }, name, attempts: 1 });
  onTestFinished(() => queue.close());
  const state = { failing: true, runs: [] as string[] };
  const webhooks = new Webhooks({ secret: SECRET, queue });
  webhooks.onError(() => {});
  webhooks.onAny((event) => {
    state.runs.push(event.id);
    if (state.failing) throw new Error(message(event));
  });
  for (const event of events) {
    const { headers, body } = createSignedRequest(event, { secret: SECRET });
    expect((await webhooks.handle({ method: 'POST', headers, body })).status).toBe(202);
  }
  const worker = queue.startWorker(webhooks);
  await until(async () => (await queue.countDeadLetters()) === events.length, 'the dead letters');
  await worker.close();
  return { queue, webhooks, state, args: ['--redis', redisUrl, '--queue', name] };
}

function parse<T>(stdout: string): T {
  return JSON.parse(stdout) as T;
}

test("help: the group and each subcommand, with the Redis options and their defaults; never REDIS_URL's value", async () => {
  const env = { REDIS_URL: 'redis://:s3cret@127.0.0.1:6379' };
  const subcommands = ['list', 'show', 'retry', 'discard'];
  const [main, group, ...each] = await Promise.all([
    run(['--help']),
    run(['dead-letters', '--help'], { env }),
    ...subcommands.map((command) => run(['dead-letters', command, '--help'], { env })),
  ]);
  expect(main.stdout).toContain('$ pixhook dead-letters list');
  expect(group.code).toBe(0);
  for (const command of subcommands) expect(group.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
  expect(group.stdout).toContain('Examples:');
  expect(group.stdout).toContain('$ pixhook dead-letters discard --all --yes');
  for (const result of [group, ...each]) {
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain('s3cret');
  }
  for (const result of each) {
    expect(result.stdout).toMatch(/--redis <url> .*\(default: "redis:\/\/127\.0\.0\.1:6379", env:\s+REDIS_URL\)/s);
    expect(result.stdout).toContain('(default: "pixhook-webhooks")');
    expect(result.stdout).toContain('(default: "bull")');
  }
  expect(each[0]?.stdout).toContain('(default: 20)');
});

// Concurrently, and both engines' suites at once: each test has its own queue (closed when it ends);
// the tests spend their time waiting for workers and CLI processes.
describeWithRedis.concurrent('pixhook dead-letters', () => {
  beforeAll(async () => {
    redis = await startRedisServer();
    redisUrl = `redis://127.0.0.1:${redis.port}`;
  });
  afterAll(() => redis?.close());

  test('list: a table with the job id, type, event id, attempts, time and error, and the total; --json, --limit, --offset, REDIS_URL', async ({
    expect,
    onTestFinished,
  }) => {
    const events = [
      createTestEvent('image.created'),
      createTestEvent('quota.warned'),
      createTestEvent('image.deleted'),
    ];
    const { args } = await deadLetters(onTestFinished, events, (event) =>
      event.type === 'quota.warned' ? `billing API down\n${'x'.repeat(20)} second line` : 'billing API down',
    );
    const [text, json, page1, page2, fromEnv] = await Promise.all([
      run(['dead-letters', 'list', ...args]),
      run(['dead-letters', 'list', ...args, '--json']),
      run(['dead-letters', 'list', ...args, '--json', '--limit', '2']),
      run(['dead-letters', 'list', ...args, '--json', '--limit', '2', '--offset', '2']),
      // No --redis: REDIS_URL says where.
      run(['dead-letters', 'list', ...args.slice(2)], { env: { REDIS_URL: redisUrl } }),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`3 dead letters in queue ${args[3]} (prefix bull) on ${redisUrl}`);
    expect(text.stdout).toMatch(/JOB ID +EVENT TYPE +EVENT ID +ATTEMPTS +FAILED AT +LAST ERROR/);
    for (const event of events) {
      // The job id is the event id here; then the type, the event id, 1 attempt, the time, the error.
      expect(text.stdout).toMatch(
        new RegExp(
          `${event.id} +${event.type.replace('.', '\\.')} +${event.id} +1 +\\d{4}-\\d\\d-\\d\\dT[\\d:]{8}Z +billing API down`,
        ),
      );
    }
    // The last error's first line only.
    expect(text.stdout).toContain('billing API down…');
    expect(text.stdout).not.toContain('second line');
    expect(text.stdout).toContain('showing 1–3 of 3, newest first');

    expect(json.code, json.stderr).toBe(0);
    const all = parse<JsonDeadLetter[]>(json.stdout);
    expect(all.map((letter) => letter.eventId).sort()).toEqual(events.map((event) => event.id).sort());
    const created = all.find((letter) => letter.type === 'image.created');
    expect(created).toMatchObject({ jobId: events[0]?.id, attemptsMade: 1, error: 'billing API down' });
    expect(created?.delivery?.event).toEqual(events[0]);

    const [first, second] = [parse<JsonDeadLetter[]>(page1.stdout), parse<JsonDeadLetter[]>(page2.stdout)];
    expect([first.length, second.length]).toEqual([2, 1]);
    expect(new Set([...first, ...second].map((letter) => letter.jobId)).size).toBe(3);

    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(fromEnv.stdout).toContain(`3 dead letters in queue ${args[3]}`);
    expect(fromEnv.stdout).toContain('showing 1–3 of 3');
  });

  test('show, by event id or job id: the error, the stack, the ids, times and the event; --json', async ({
    expect,
    onTestFinished,
  }) => {
    const event = createTestEvent('image.created');
    const { args, queue } = await deadLetters(onTestFinished, [event]);
    const deadLetter = await queue.getDeadLetter(event.id);
    const [text, json] = await Promise.all([
      run(['dead-letters', 'show', event.id, ...args]),
      run(['dead-letters', 'show', event.id, ...args, '--json']),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Dead letter ${event.id} in queue ${args[3]}`);
    expect(text.stdout).toMatch(/event type +image\.created/);
    expect(text.stdout).toContain(`delivery id  ${deadLetter?.delivery?.deliveryId}`);
    expect(text.stdout).toMatch(/timestamp +\d{10} \(/);
    expect(text.stdout).toMatch(/attempts +1 failed/);
    expect(text.stdout).toMatch(/queued at +\d{4}-.*Z\n +failed at +\d{4}-.*Z/);
    expect(text.stdout).toContain('Last error\n  billing API down\n');
    expect(text.stdout).toMatch(/Stack\n {2}Error: billing API down\n {6}at /);
    expect(text.stdout).toContain(JSON.stringify(event.data.object, null, 2).split('\n')[1]);

    expect(json.code, json.stderr).toBe(0);
    const shown = parse<JsonDeadLetter>(json.stdout);
    expect(shown).toMatchObject({
      jobId: event.id,
      eventId: event.id,
      type: 'image.created',
      error: 'billing API down',
    });
    expect(shown.delivery?.event).toEqual(event);
    expect(shown.stack).toMatch(/^Error: billing API down\n/);
  });

  test('retry <id>: queued again; a worker runs the handler exactly once more, and no dead letter is left', async ({
    expect,
    onTestFinished,
  }) => {
    const event = createTestEvent('image.created');
    const { args, queue, webhooks, state } = await deadLetters(onTestFinished, [event]);
    expect(state.runs).toEqual([event.id]);
    state.failing = false;
    const retried = await run(['dead-letters', 'retry', event.id, ...args]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`✓ ${event.id} (image.created) queued again with all its attempts anew`);
    expect(await queue.countDeadLetters()).toBe(0);
    expect(state.runs).toHaveLength(1);

    const worker = queue.startWorker(webhooks);
    await until(async () => (await queue.bullQueue.getJobState(event.id)) === 'completed', 'the retried job');
    await new Promise((resolve) => setTimeout(resolve, 200));
    await worker.close();
    expect(state.runs).toEqual([event.id, event.id]);
    expect(await queue.countDeadLetters()).toBe(0);

    // The same id again: no such dead letter any more.
    const again = await run(['dead-letters', 'retry', event.id, ...args]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`No dead letter "${event.id}" in queue ${args[3]}`);
  });

  test('retry --all queues every dead letter again', async ({ expect, onTestFinished }) => {
    const { args, queue } = await deadLetters(onTestFinished, [
      createTestEvent('image.created'),
      createTestEvent('image.deleted'),
    ]);
    const { code, stdout, stderr } = await run(['dead-letters', 'retry', '--all', ...args]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('✓ 2 dead letters queued again');
    expect(await queue.countDeadLetters()).toBe(0);
    expect(await queue.bullQueue.getWaitingCount()).toBe(2);
  });

  test('discard <id> deletes one; discard --all refuses without --yes, and deletes every one with it', async ({
    expect,
    onTestFinished,
  }) => {
    const events = [
      createTestEvent('image.created'),
      createTestEvent('image.deleted'),
      createTestEvent('quota.warned'),
    ];
    const { args, queue } = await deadLetters(onTestFinished, events);
    const one = await run(['dead-letters', 'discard', events[0]?.id as string, ...args]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toContain(`✓ ${events[0]?.id} (image.created) discarded`);
    expect(await queue.getDeadLetter(events[0]?.id as string)).toBeUndefined();
    expect(await queue.countDeadLetters()).toBe(2);

    const refused = await run(['dead-letters', 'discard', '--all', ...args]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('add --yes to confirm');
    expect(await queue.countDeadLetters()).toBe(2);

    const all = await run(['dead-letters', 'discard', '--all', '--yes', ...args]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('✓ 2 dead letters discarded');
    expect(await queue.countDeadLetters()).toBe(0);
  });

  test('an unknown id: exit 1 and a message naming it; no id nor --all: exit 2', async ({ expect, onTestFinished }) => {
    const { args, queue } = await deadLetters(onTestFinished, [createTestEvent('image.created')]);
    const results = await Promise.all(
      ['show', 'retry', 'discard'].map((command) => run(['dead-letters', command, 'evt_no_such_event', ...args])),
    );
    for (const { code, stdout, stderr } of results) {
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toContain(`No dead letter "evt_no_such_event" in queue ${args[3]} (prefix bull) on ${redisUrl}`);
    }
    const noId = await run(['dead-letters', 'retry', ...args]);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain('Name the dead letter to retry');
    expect(await queue.countDeadLetters()).toBe(1);
  });

  test('escape sequences in the event and the error are printed escaped by list and show, and kept in --json', async ({
    expect,
    onTestFinished,
  }) => {
    const osc = '\u001b]0;owned\u0007';
    const event = createTestEvent(
      'image.created',
      { id: 'img_1', filename: `cat${osc}.png`, note: 'csi \u009b2J' },
      {
        id: 'evt_\u001b[31mred',
      },
    );
    const { args, queue } = await deadLetters(
      onTestFinished,
      [event],
      (evt) => `billing API down for ${(evt.data.object as { filename: string }).filename}`,
    );
    const [letter] = await queue.listDeadLetters();
    const jobId = letter?.jobId as string;
    expect(jobId).toMatch(/^sha256-/);
    const outputs = await Promise.all([
      run(['dead-letters', 'list', ...args]),
      run(['dead-letters', 'show', jobId, ...args]),
      run(['dead-letters', 'show', event.id, ...args]),
      run(['dead-letters', 'list', '--json', ...args]),
      run(['dead-letters', 'show', jobId, '--json', ...args]),
    ]);
    // After the others, which need the dead letter still there.
    outputs.push(await run(['dead-letters', 'retry', event.id, ...args]));
    for (const { code, stdout, stderr } of outputs) {
      expect(code, stderr).toBe(0);
      expect(stdout).not.toMatch(RAW_CONTROL);
      expect(stderr).not.toMatch(RAW_CONTROL);
    }
    const [list, showByJob, showByEvent, listJson, showJson, retried] = outputs.map(({ stdout }) => stdout);
    expect(list).toContain('evt_\\x1b[31mred');
    expect(list).toContain('billing API down for cat\\x1b]0;owned\\x07.png');
    expect(showByJob).toBe(showByEvent);
    expect(showByJob).toContain('event id     evt_\\x1b[31mred');
    expect(showByJob).toContain('billing API down for cat\\x1b]0;owned\\x07.png');
    // The event as JSON: the same characters as \u escapes.
    expect(showByJob).toContain('"filename": "cat\\u001b]0;owned\\u0007.png"');
    expect(showByJob).toContain('"note": "csi \\u009b2J"');
    expect(parse<JsonDeadLetter[]>(listJson as string)[0]?.eventId).toBe(event.id);
    expect(parse<JsonDeadLetter>(showJson as string).delivery?.event).toEqual(event);
    expect(retried).toContain('✓ evt_\\x1b[31mred (job sha256-');
  });

  test('Redis down or stalled: exit 1 within seconds, naming Redis and the address, never the password', async ({
    expect,
  }) => {
    // A port nothing listens on, and a server that accepts connections but never answers.
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const downPort = (free.address() as AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));
    const sockets = new Set<Socket>();
    let connectedAt = Number.POSITIVE_INFINITY;
    const stalled: Server = createServer((socket) => {
      sockets.add(socket);
      connectedAt = Math.min(connectedAt, performance.now());
    });
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    const stalledPort = (stalled.address() as AddressInfo).port;
    try {
      const timed = async (args: string[], env?: Record<string, string>) => {
        const started = performance.now();
        const result = await run(args, env ? { env } : {});
        return { ...result, ms: performance.now() - started, endedAt: performance.now() };
      };
      const down = `redis://:s3cret@127.0.0.1:${downPort}`;
      const [list, retry, fromEnv, stuck] = await Promise.all([
        timed(['dead-letters', 'list', '--redis', down]),
        timed(['dead-letters', 'retry', '--all', '--redis', down]),
        timed(['dead-letters', 'show', 'evt_1'], { REDIS_URL: `redis://admin:s3cret@127.0.0.1:${downPort}/2` }),
        // Without a password: ioredis alone would wait for CLIENT SETINFO and INFO, 3 s each.
        timed(['dead-letters', 'list', '--redis', `redis://127.0.0.1:${stalledPort}`]),
      ]);
      for (const result of [list, retry, fromEnv, stuck]) {
        expect(result.code, result.stderr).toBe(1);
        expect(result.stdout + result.stderr).not.toContain('s3cret');
        expect(result.stderr).toMatch(/^pixhook: .*Redis at redis:\/\//);
      }
      // Nothing listening: refused, not retried (ioredis alone reconnects for ever, and the stalled
      // command below would never end). The messages say it was refused; the bound only proves the
      // command ended, with the margin four Node processes starting at once need on a busy machine.
      for (const result of [list, retry, fromEnv]) expect(result.ms, result.stderr).toBeLessThan(20_000);
      // Stalled: 3 s from the connection (pixhook's own timer, as the message says), then the
      // process ends (timed from the connection, not the start). The upper bound, with a busy
      // machine's margin, proves it ends; the message proves which timer ended it.
      expect(sockets.size).toBeGreaterThan(0);
      expect(stuck.endedAt - connectedAt, stuck.stderr).toBeGreaterThan(2_900);
      expect(stuck.endedAt - connectedAt, stuck.stderr).toBeLessThan(10_000);
      for (const result of [list, retry]) {
        expect(result.stderr).toContain(
          `Cannot reach Redis at redis://:***@127.0.0.1:${downPort}: nothing accepts connections on 127.0.0.1:${downPort}`,
        );
      }
      expect(fromEnv.stderr).toContain(`Cannot reach Redis at redis://admin:***@127.0.0.1:${downPort}/2`);
      expect(stuck.stderr).toContain(`Redis at redis://127.0.0.1:${stalledPort} did not answer within 3 s.`);
    } finally {
      for (const socket of sockets) socket.destroy();
      stalled.close();
    }
  }, 60_000);

  test('only the dead-letters commands load @pixhook/bullmq and @pixhook/pg-boss, with a dynamic import', ({
    expect,
  }) => {
    // The binary and the chunks it imports (the commands share io/production.ts with the library).
    const dist = dirname(CLI);
    const built = readdirSync(dist)
      .filter((file) => file.endsWith('.js'))
      .map((file) => readFileSync(join(dist, file), 'utf8'))
      .join('\n');
    expect(built).toContain('import("@pixhook/bullmq")');
    expect(built).toContain('import("@pixhook/pg-boss")');
    expect(built).not.toMatch(/^import\b[^;]*["']@pixhook\/bullmq["']/m);
    expect(built).not.toMatch(/^import\b[^;]*["']@pixhook\/pg-boss["']/m);
    expect(built).not.toMatch(/from ["'](bullmq|pg-boss)["']|require\(["'](bullmq|ioredis)["']\)/);
  });
});

describeWithPostgres.concurrent('pixhook dead-letters --postgres (pg-boss)', () => {
  let postgres: PostgresServer;
  let boss: PgBoss;

  beforeAll(async () => {
    postgres = await startPostgresServer();
    boss = new PgBoss({ connectionString: postgres.url, schedule: false, supervise: false, max: 5 });
    boss.on('error', () => {});
    await boss.start();
  }, 120_000);
  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await postgres?.close();
  });

  /** As `deadLetters` above, on pg-boss: one attempt, a handler that throws, a dead letter per event. */
  async function pgBossDeadLetters(onTestFinished: OnTestFinished, events: AnyEvent[], message = 'billing API down') {
    const name = `cli-dead-letters-${randomUUID().slice(0, 8)}`;
    const queue = new PgBossQueue(boss, { name, attempts: 1 });
    onTestFinished(() => queue.close());
    const state = { failing: true, runs: [] as string[] };
    const webhooks = new Webhooks({ secret: SECRET, queue });
    webhooks.onError(() => {});
    webhooks.onAny((event) => {
      state.runs.push(event.id);
      if (state.failing) throw new Error(message);
    });
    for (const event of events) {
      const { headers, body } = createSignedRequest(event, { secret: SECRET });
      expect((await webhooks.handle({ method: 'POST', headers, body })).status).toBe(202);
    }
    const worker = queue.startWorker(webhooks, { pollingIntervalMs: 100 });
    await until(async () => (await queue.countDeadLetters()) === events.length, 'the dead letters');
    await worker.close();
    return { queue, webhooks, state, name, args: ['--postgres', postgres.url, '--queue', name] };
  }

  test('list, show, --json, and DATABASE_URL with --postgres alone', async ({ expect, onTestFinished }) => {
    const events = [createTestEvent('image.created'), createTestEvent('quota.warned')];
    const { args, name, queue } = await pgBossDeadLetters(onTestFinished, events);
    const [text, json, show, showJson, fromEnv] = await Promise.all([
      run(['dead-letters', 'list', ...args]),
      run(['dead-letters', 'list', ...args, '--json']),
      run(['dead-letters', 'show', events[0]?.id as string, ...args]),
      run(['dead-letters', 'show', events[0]?.id as string, ...args, '--json']),
      run(['dead-letters', 'list', '--postgres', '--queue', name, '--json'], { env: { DATABASE_URL: postgres.url } }),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`2 dead letters in pg-boss queue ${name} (schema pgboss) on ${postgres.url}`);
    expect(text.stdout).toMatch(/JOB ID +EVENT TYPE +EVENT ID +ATTEMPTS +FAILED AT +LAST ERROR/);
    for (const event of events) {
      expect(text.stdout).toMatch(new RegExp(`[0-9a-f-]{36} +${event.type.replace('.', '\\.')} +${event.id} +1 +`));
    }
    expect(json.code, json.stderr).toBe(0);
    const letters = parse<JsonDeadLetter[]>(json.stdout);
    expect(letters.map((letter) => letter.eventId).sort()).toEqual(events.map((event) => event.id).sort());
    expect(letters.every((letter) => letter.error === 'billing API down' && letter.attemptsMade === 1)).toBe(true);
    expect(letters.find((letter) => letter.eventId === events[0]?.id)?.delivery?.event).toEqual(events[0]);

    expect(show.code, show.stderr).toBe(0);
    const jobId = (await queue.getDeadLetter(events[0]?.id as string))?.jobId as string;
    expect(show.stdout).toContain(`Dead letter ${jobId} in pg-boss queue ${name}`);
    expect(show.stdout).toMatch(/event type +image\.created/);
    expect(show.stdout).toContain('Last error\n  billing API down\n');
    expect(show.stdout).toMatch(/Stack\n {2}Error: billing API down\n/);
    expect(parse<JsonDeadLetter>(showJson.stdout)).toMatchObject({
      jobId,
      eventId: events[0]?.id,
      type: 'image.created',
    });

    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(parse<JsonDeadLetter[]>(fromEnv.stdout)).toHaveLength(2);
  });

  test('retry <event id> runs it again once; discard <id>, discard --all --yes, retry --all', async ({
    expect,
    onTestFinished,
  }) => {
    const events = [
      createTestEvent('image.created'),
      createTestEvent('image.deleted'),
      createTestEvent('quota.warned'),
    ];
    const { args, queue, webhooks, state } = await pgBossDeadLetters(onTestFinished, events);
    state.failing = false;
    const retried = await run(['dead-letters', 'retry', events[0]?.id as string, ...args]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`✓ ${events[0]?.id} (job `);
    expect(retried.stdout).toContain('queued again with all its attempts anew');
    expect(await queue.countDeadLetters()).toBe(2);
    const worker = queue.startWorker(webhooks, { pollingIntervalMs: 100 });
    await until(() => state.runs.filter((id) => id === events[0]?.id).length === 2, 'the retried job');
    await worker.close();

    const discarded = await run(['dead-letters', 'discard', events[1]?.id as string, ...args]);
    expect(discarded.code, discarded.stderr).toBe(0);
    expect(discarded.stdout).toContain(`✓ ${events[1]?.id} (job `);
    expect(await queue.countDeadLetters()).toBe(1);

    const again = await run(['dead-letters', 'discard', events[1]?.id as string, ...args]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`No dead letter "${events[1]?.id}" in pg-boss queue`);

    const refused = await run(['dead-letters', 'discard', '--all', ...args]);
    expect(refused.code).toBe(2);
    const all = await run(['dead-letters', 'discard', '--all', '--yes', ...args]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('✓ 1 dead letter discarded');
    expect(await queue.countDeadLetters()).toBe(0);

    const none = await run(['dead-letters', 'retry', '--all', ...args]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain('No dead letters to retry in pg-boss queue');
  });

  test('bad options exit 2 with a clear message; a missing queue, schema or server exit 1; never the password', async ({
    expect,
    onTestFinished,
  }) => {
    const { name } = await pgBossDeadLetters(onTestFinished, [createTestEvent('image.created')]);
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const downPort = (free.address() as AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));
    const port = new URL(postgres.url).port;
    const cases: [string[], number, string, Record<string, string>?][] = [
      [['dead-letters', 'list', '--postgres'], 2, '--postgres without a URL reads DATABASE_URL, which is not set'],
      [
        ['dead-letters', 'list', '--postgres', 'mysql://root:s3cret@127.0.0.1/db'],
        2,
        'must be a postgres:// or postgresql:// URL, not mysql://',
      ],
      [['dead-letters', 'list', '--postgres', 'not a url s3cret'], 2, '--postgres (or DATABASE_URL) is not a URL'],
      [
        ['dead-letters', 'list', '--postgres', postgres.url, '--redis', 'redis://127.0.0.1:1'],
        2,
        'Give --postgres (pg-boss) or --redis (BullMQ), not both.',
      ],
      [['dead-letters', 'list', '--postgres', postgres.url, '--prefix', 'x'], 2, "--prefix is BullMQ's"],
      [['dead-letters', 'list', '--schema', 'x'], 2, "--schema is pg-boss's: use it with --postgres."],
      [
        ['dead-letters', 'list', '--postgres', postgres.url, '--queue', 'no/such'],
        2,
        "--queue: a pg-boss queue's name",
      ],
      [
        ['dead-letters', 'list', '--postgres', postgres.url, '--schema', '1x;drop'],
        2,
        '--schema: expected a Postgres identifier',
      ],
      [
        ['dead-letters', 'list', '--postgres', postgres.url, '--queue', 'no-such-queue'],
        1,
        `There is no pg-boss queue no-such-queue in schema pgboss on Postgres at ${postgres.url}`,
      ],
      [
        ['dead-letters', 'list', '--postgres', postgres.url, '--queue', name, '--schema', 'elsewhere'],
        1,
        'pg-boss is not installed in schema elsewhere',
      ],
      [
        ['dead-letters', 'list', '--postgres', `postgres://app:s3cret@127.0.0.1:${downPort}/app`],
        1,
        `Cannot reach Postgres at postgres://app:***@127.0.0.1:${downPort}/app: nothing accepts connections`,
      ],
      [
        ['dead-letters', 'list', '--postgres', '--queue', name],
        1,
        `Postgres at postgres://nobody:***@127.0.0.1:${port}/postgres`,
        { DATABASE_URL: `postgres://nobody:s3cret@127.0.0.1:${port}/postgres` },
      ],
    ];
    const results = await Promise.all(cases.map(([args, , , env]) => run(args, env ? { env } : {})));
    results.forEach((result, index) => {
      const [args, code, message] = cases[index] as (typeof cases)[number];
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code);
      expect(result.stderr).toMatch(/^pixhook: /);
      expect(result.stderr).toContain(message);
      expect(result.stdout + result.stderr).not.toContain('s3cret');
    });
  }, 60_000);
});
