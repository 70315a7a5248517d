import { type AnyEvent, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { type Dashboard, type DeadLetterSource, startDashboard } from '@pixhook/dashboard';
import { ensureBuilt } from '@pixhook/test-helpers/cli';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { chromiumFound, launchBrowser } from './helpers/dashboard.js';
import {
  type ArchiveKind,
  bullmqDeadLetters,
  pgBossDeadLetters,
  postgresArchive,
  redisArchive,
  SECRET,
  seedBinary,
  seedEvents,
  seedHostile,
  type TestArchive,
  uniqueName,
  until,
} from './helpers/production.js';

/**
 * The production views of the dashboard (Inbox, Dead letters) in a real headless Chromium, against
 * a seeded PostgresArchive and RedisArchive and the dead letters of real BullMQ and pg-boss
 * workers: every click goes through the page, its API and the real servers.
 */

let browser: Browser | undefined;
let postgres: PostgresServer;
let redis: RedisServer;
let pool: pg.Pool;
let boss: PgBoss;

const eventually = <T>(value: () => T | Promise<T>) => expect.poll(value, { timeout: 20_000 });
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // The server runs from its sources here and serves the page built into dist: built (with what
  // it uses) under the lock the other dashboard tests take, so no test rebuilds it under another.
  if (chromiumFound) ensureBuilt('@pixhook/dashboard');
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 10 });
  pool.on('error', () => {});
  boss = new PgBoss({ connectionString: postgres.url, schedule: false, max: 10 });
  boss.on('error', () => {});
  await boss.start();
  if (chromiumFound) browser = await launchBrowser();
}, 120_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await browser?.close();
  await boss?.stop({ graceful: false, wait: true });
  await pool?.end();
  await Promise.all([postgres?.close(), redis?.close()]);
});

async function archiveOn(kind: ArchiveKind): Promise<TestArchive> {
  const opened = kind === 'postgres' ? await postgresArchive(pool) : redisArchive(redis.port);
  cleanups.push(() => opened.close());
  return opened;
}

async function dashboardWith(options: Parameters<typeof startDashboard>[0]): Promise<Dashboard> {
  const dashboard = await startDashboard({ port: 0, ...options });
  cleanups.push(() => dashboard.close());
  return dashboard;
}

async function open(dashboard: Dashboard, tab: 'Inbox' | 'Dead letters'): Promise<Page> {
  if (!browser) throw new Error('no browser');
  const context = await browser.newContext();
  cleanups.push(() => context.close());
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    const text = message.text();
    // The API's refusals (a 409 asking for confirmation) are logged by the browser, and expected.
    if (message.type() === 'error' && !text.startsWith('Failed to load resource: the server responded')) {
      errors.push(text);
    }
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(dashboard.url)) errors.push(`request outside the dashboard: ${request.url()}`);
  });
  cleanups.push(async () => {
    // No hostile script ran.
    expect(await page.evaluate(() => (window as { pwned?: unknown }).pwned)).toBeUndefined();
    expect(errors, 'errors in the page').toEqual([]);
  });
  await page.goto(dashboard.url);
  await page.getByRole('tab', { name: tab }).click();
  return page;
}

function rows(page: Page): Locator {
  return page.getByTestId('inbox-row');
}

async function rowIds(page: Page): Promise<string[]> {
  return rows(page).evaluateAll((list) => list.map((row) => row.getAttribute('data-event-id') ?? ''));
}

/** Waits for the page's list to show `count` rows and the "Page n" line to be settled. */
async function pageShows(page: Page, count: number, n: number) {
  await eventually(() => page.getByTestId('inbox-page').textContent()).toBe(`Page ${n}: ${count} events`);
}

const describeProduction = chromiumFound ? describeWithPostgres : describe.skip;

describeProduction('dashboard: the inbox in Chromium', () => {
  test.each(['postgres', 'redis'] as const)(
    'on a %sArchive: filter by type and outcome, page forward and back, the detail of an event (bytes, headers, timeline), hostile text shown as text',
    async (kind) => {
      const { archive } = await archiveOn(kind);
      const now = Date.now();
      const seeded = await seedEvents(archive, 25, now - 60_000);
      const binary = await seedBinary(archive, now - 30_000);
      const hostile = await seedHostile(archive, now - 20_000);
      const dashboard = await dashboardWith({ inbox: archive });
      const page = await open(dashboard, 'Inbox');

      // Newest first: the hostile event, the binary one, then the 25.
      await page.getByTestId('inbox').getByLabel('Per page').selectOption('10');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await pageShows(page, 10, 1);
      const all = [hostile.event.id, binary.event.id, ...seeded.map((event) => event.id)];
      expect(await rowIds(page)).toEqual(all.slice(0, 10));
      await page.getByRole('button', { name: 'Next page' }).click();
      await pageShows(page, 10, 2);
      expect(await rowIds(page)).toEqual(all.slice(10, 20));
      await page.getByRole('button', { name: 'Next page' }).click();
      await pageShows(page, 7, 3);
      expect(await rowIds(page)).toEqual(all.slice(20));
      expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
      await page.getByRole('button', { name: 'Previous page' }).click();
      await pageShows(page, 10, 2);
      expect(await rowIds(page)).toEqual(all.slice(10, 20));

      // Type and outcome: only the failed quota.exceeded events (every fifth seeded event failed).
      await page.getByTestId('inbox').getByLabel('Event type').fill('quota.exceeded');
      await page.getByTestId('inbox').getByLabel('Outcome').selectOption('failed');
      await page.getByTestId('inbox').getByLabel('Per page').selectOption('50');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      const expected = seeded.filter((event) => event.type === 'quota.exceeded' && event.outcome === 'failed');
      expect(expected.length).toBeGreaterThan(0);
      await pageShows(page, expected.length, 1);
      expect(await rowIds(page)).toEqual(expected.map((event) => event.id));
      // A time range (local date and time, to the second): the three events seen in it.
      await page.getByRole('button', { name: 'Clear' }).click();
      const local = (ms: number) => {
        const date = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
        return date.toISOString().slice(0, 19);
      };
      const second = (ms: number) => Math.floor(ms / 1000) * 1000;
      await page
        .getByTestId('inbox')
        .getByLabel('Since')
        .fill(local(second(seeded[4]?.at as number)));
      await page
        .getByTestId('inbox')
        .getByLabel('Until')
        .fill(local(second(seeded[2]?.at as number) + 1000));
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await pageShows(page, 3, 1);
      expect(await rowIds(page)).toEqual(seeded.slice(2, 5).map((event) => event.id));
      // An event id finds one event.
      await page.getByRole('button', { name: 'Clear' }).click();
      await page
        .getByTestId('inbox')
        .getByLabel('Event id')
        .fill(seeded[3]?.id as string);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await pageShows(page, 1, 1);
      expect(await rowIds(page)).toEqual([seeded[3]?.id]);

      // The hostile event in detail: its bytes, headers and timeline, as text.
      await page.getByRole('button', { name: 'Clear' }).click();
      await pageShows(page, 27, 1);
      await page.getByRole('button', { name: `Show ${hostile.event.id}` }).click();
      const detail = page.getByTestId('inbox-event');
      const body = detail.getByTestId('event-body');
      await eventually(() => body.textContent()).toContain('<script>window.pwned = 1</script>');
      // The right-to-left override is shown as its code point, never applied.
      const bodyText = (await body.textContent()) as string;
      expect(bodyText).not.toContain('\u202E');
      expect(bodyText).toContain('U+202Egnp.exe');
      expect(bodyText.replace(/U\+202E/g, '\u202E')).toBe(new TextDecoder().decode(hostile.body));
      expect(await detail.locator('script, img').count()).toBe(0);
      await detail.getByRole('button', { name: 'Formatted JSON' }).click();
      await eventually(() => body.textContent()).toContain(
        '"filename": "<script>window.pwned = 1</script><img src=x onerror=\\"window.pwned = 2\\"> U+202Egnp.exe"',
      );
      await detail.getByRole('button', { name: 'Hex' }).click();
      await eventually(() => body.textContent()).toMatch(/^00000000 {2}7b 22 69 64 22/);
      await detail.getByRole('button', { name: 'As received' }).click();
      await eventually(() => body.getAttribute('data-view')).toBe('text');
      const headers = (await detail.getByTestId('event-headers').textContent()) as string;
      for (const [name, value] of Object.entries(hostile.headers)) {
        expect(headers).toContain(`${name}: ${value.replace(/\u202E/g, 'U+202E')}`);
      }
      const timeline = detail.getByTestId('timeline-entry');
      expect(await timeline.evaluateAll((list) => list.map((li) => li.getAttribute('data-kind')))).toEqual([
        'delivery',
        'replay',
      ]);
      expect(await timeline.first().getAttribute('data-result')).toBe('failed');
      expect(await timeline.first().textContent()).toContain('HANDLER_FAILED');
      expect(await timeline.first().getByTestId('handler-run').textContent()).toContain(
        'TypeError: <script>window.pwned = 1</script>',
      );
      expect(await timeline.nth(1).getAttribute('data-result')).toBe('processed');
      expect(await detail.getByTestId('event-outcome').textContent()).toBe('processed');

      // A body that is not UTF-8: its bytes in hex.
      await page.getByRole('button', { name: `Show ${binary.event.id}` }).click();
      await eventually(() => page.getByTestId('event-body').textContent()).toBe('00000000  7b ff fe 00 80 7d');
    },
  );

  test('replay one event, and a filtered set after a confirmation that says how many: the app attached to the archive runs each once, and the timeline shows it', async () => {
    const opened = await archiveOn('postgres');
    // The app: `new Webhooks({ archive })` on another instance of the same tables, as in production.
    const webhooks = new Webhooks({ secret: SECRET, archive: opened.another({ replayPollMs: 50 }) });
    let broken = true;
    const runs: { id: string; replay: boolean }[] = [];
    webhooks.onAny((event, context) => {
      runs.push({ id: event.id, replay: context.replay === true });
      if (broken && event.type === 'quota.exceeded') throw new Error('the quota service is down');
    });
    webhooks.onError(() => {});
    const delivered: { id: string; type: string }[] = [];
    for (const type of ['image.created', 'quota.exceeded', 'image.created', 'quota.exceeded', 'quota.exceeded']) {
      const event = createTestEvent(type as 'image.created') as AnyEvent;
      const signed = createSignedRequest(event, { secret: SECRET });
      await webhooks.handle({ method: 'POST', ...signed });
      delivered.push({ id: event.id, type });
    }
    const failed = delivered.filter((event) => event.type === 'quota.exceeded').map((event) => event.id);
    const replays = () => runs.filter((run) => run.replay).map((run) => run.id);

    const dashboard = await dashboardWith({ inbox: opened.archive });
    const page = await open(dashboard, 'Inbox');
    await pageShows(page, 5, 1);

    // One: its handlers run again, once, and its timeline says it was a replay.
    const one = delivered[0]?.id as string;
    await page.getByRole('button', { name: `Show ${one}` }).click();
    const detail = page.getByTestId('inbox-event');
    await eventually(() => detail.getByTestId('timeline-entry').count()).toBe(1);
    await detail.getByRole('button', { name: 'Replay', exact: true }).click();
    await eventually(() => page.getByTestId('status').textContent()).toContain(`Replay of ${one} requested`);
    await until(() => replays().length === 1, 'the replay to run in the app');
    expect(replays()).toEqual([one]);
    await eventually(async () => {
      await detail.getByRole('button', { name: 'Reload' }).click();
      return detail.getByTestId('timeline-entry').evaluateAll((list) => list.map((li) => li.getAttribute('data-kind')));
    }).toEqual(['delivery', 'replay']);

    // The failed ones, once fixed: the count first, Cancel does nothing, then confirmed.
    broken = false;
    await page.getByTestId('inbox').getByLabel('Outcome').selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await pageShows(page, failed.length, 1);
    expect((await rowIds(page)).sort()).toEqual([...failed].sort());
    await page.getByRole('button', { name: 'Replay all matching…' }).click();
    const confirm = page.getByTestId('confirm');
    await eventually(() => confirm.getByTestId('confirm-question').textContent()).toContain(
      `Replay the ${failed.length} events that match (outcome failed)`,
    );
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await confirm.count()).toBe(0);
    await page.getByRole('button', { name: 'Replay all matching…' }).click();
    await page.getByRole('button', { name: `Replay ${failed.length} events` }).click();
    await eventually(() => page.getByTestId('status').textContent()).toContain(
      `Replay requested for ${failed.length} events`,
    );
    await until(() => replays().length === 1 + failed.length, 'the filtered replays to run in the app');
    expect(replays().slice(1).sort()).toEqual([...failed].sort());
    // Processed now: no failed event is left to list.
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return page.getByTestId('inbox-page').textContent();
    }).toBe('Page 1: 0 events');
    expect(replays()).toHaveLength(1 + failed.length);
  });
});

describeProduction('dashboard: dead letters of BullMQ and pg-boss in Chromium', () => {
  test('list, show (last error and stack), retry and discard one, retry all and discard all after a confirmation, on both engines', async () => {
    const name = uniqueName('dash-dl').replace('_', '-');
    const bull = await bullmqDeadLetters(redis.port, name, 4);
    cleanups.push(() => bull.close());
    const boss4 = await pgBossDeadLetters(boss, name, 4);
    cleanups.push(() => boss4.close());
    const dashboard = await dashboardWith({ deadLetters: [bull.queue, boss4.queue] });
    const page = await open(dashboard, 'Dead letters');

    for (const [engine, made] of [
      ['bullmq', bull],
      ['pg-boss', boss4],
    ] as const) {
      const card = page.locator(`[data-testid="dead-letter-queue"][data-engine="${engine}"]`);
      const total = card.getByTestId('dead-letter-total');
      await eventually(() => total.getAttribute('data-total')).toBe('4');
      const letters = card.getByTestId('dead-letter');
      expect(await letters.count()).toBe(4);
      const events = await letters.getByTestId('dead-letter-event').allTextContents();
      expect([...events].sort()).toEqual([...made.eventIds].sort());

      // Show: the last error (markup and all, as text) and its stack.
      const first = letters.first();
      await first.getByRole('button', { name: 'Show' }).click();
      const message = first.getByTestId('dead-letter-message');
      await eventually(() => message.textContent()).toContain('the billing API is down <b><script>');
      expect(await first.getByTestId('dead-letter-stack').textContent()).toMatch(
        /Error: the billing API is down[\s\S]*at /,
      );
      expect(await first.locator('b, script, img').count()).toBe(0);

      // Retry one: the handler works now, so it runs once more and leaves the dead letters.
      made.setBroken(false);
      const retried = (await first.getByTestId('dead-letter-event').textContent()) as string;
      const runsBefore = made.runs.filter((id) => id === retried).length;
      await first.getByRole('button', { name: 'Retry', exact: true }).click();
      await until(
        () => made.runs.filter((id) => id === retried).length === runsBefore + 1,
        `${engine}: the retried run`,
      );
      await until(async () => (await made.queue.countDeadLetters()) === 3, `${engine}: three dead letters`);
      await card.getByRole('button', { name: 'Refresh' }).click();
      await eventually(() => total.getAttribute('data-total')).toBe('3');

      // Discard one: gone, never run.
      made.setBroken(true);
      const discarded = (await letters.first().getByTestId('dead-letter-event').textContent()) as string;
      await letters.first().getByRole('button', { name: 'Discard', exact: true }).click();
      await eventually(() => total.getAttribute('data-total')).toBe('2');
      expect(await made.queue.getDeadLetter(discarded)).toBeUndefined();

      // Retry all: the count to confirm, Cancel changes nothing.
      await card.getByRole('button', { name: 'Retry all…' }).click();
      await eventually(() => card.getByTestId('confirm-question').textContent()).toContain(
        `Run all 2 dead letters of ${name} again`,
      );
      await card.getByRole('button', { name: 'Cancel' }).click();
      expect(await made.queue.countDeadLetters()).toBe(2);
      made.setBroken(false);
      const runs = made.runs.length;
      await card.getByRole('button', { name: 'Retry all…' }).click();
      await card.getByRole('button', { name: 'Retry 2 dead letters' }).click();
      await eventually(() => page.getByTestId('status').textContent()).toContain('2 dead letters queued again');
      await until(() => made.runs.length === runs + 2, `${engine}: both retried runs`);
      await until(async () => (await made.queue.countDeadLetters()) === 0, `${engine}: no dead letters`);
    }

    // Discard all, on pg-boss: three new dead letters, confirmed with their count.
    boss4.setBroken(true);
    const more = await pgBossDeadLetters(boss, `${name}-more`, 3);
    cleanups.push(() => more.close());
    const again = await dashboardWith({ deadLetters: [more.queue] });
    const second = await open(again, 'Dead letters');
    const card = second.getByTestId('dead-letter-queue');
    await eventually(() => card.getByTestId('dead-letter-total').getAttribute('data-total')).toBe('3');
    await card.getByRole('button', { name: 'Discard all…' }).click();
    await eventually(() => card.getByTestId('confirm-question').textContent()).toContain(
      `Delete all 3 dead letters of ${name}-more for good`,
    );
    await card.getByRole('button', { name: 'Discard 3 dead letters' }).click();
    await eventually(() => card.getByTestId('dead-letter-total').getAttribute('data-total')).toBe('0');
    expect(await more.queue.countDeadLetters()).toBe(0);
    expect(more.runs).toHaveLength(3);
  });
});

describeProduction('dashboard: read-only', () => {
  test('the page shows no replay, retry or discard, and the API refuses each of them with a 403', async () => {
    const { archive } = await archiveOn('redis');
    const [event] = await seedEvents(archive, 3);
    const name = uniqueName('dash-ro').replace('_', '-');
    const letters = await bullmqDeadLetters(redis.port, name, 1);
    cleanups.push(() => letters.close());
    const source: DeadLetterSource = letters.queue;
    const dashboard = await dashboardWith({ inbox: archive, deadLetters: [source], readOnly: true });

    const page = await open(dashboard, 'Inbox');
    expect(await page.getByTestId('read-only').textContent()).toBe('read-only');
    await pageShows(page, 3, 1);
    await page.getByRole('button', { name: `Show ${event?.id}` }).click();
    await eventually(() => page.getByTestId('timeline-entry').count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Replay/ }).count()).toBe(0);
    await page.getByRole('tab', { name: 'Dead letters' }).click();
    await eventually(() => page.getByTestId('dead-letter').count()).toBe(1);
    await page.getByRole('button', { name: 'Show' }).click();
    await eventually(() => page.getByTestId('dead-letter-message').count()).toBe(1);
    expect(await page.getByRole('button', { name: /^(Retry|Discard)/ }).count()).toBe(0);

    // The API, as the page would call it (its own Origin), refuses every change.
    const origin = dashboard.url.slice(0, -1);
    const calls: [string, unknown][] = [
      ['inbox/replay', { eventIds: [event?.id] }],
      ['inbox/replay-matching', { query: {}, confirm: 3 }],
      ['dead-letters/0/retry', { id: letters.eventIds[0] }],
      ['dead-letters/0/discard', { id: letters.eventIds[0] }],
      ['dead-letters/0/retry-all', { confirm: 1 }],
      ['dead-letters/0/discard-all', { confirm: 1 }],
    ];
    for (const [path, body] of calls) {
      const response = await fetch(`${dashboard.url}api/production/${path}`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status, path).toBe(403);
      expect(await response.json()).toMatchObject({ error: { code: 'READ_ONLY' } });
    }
    expect(await letters.queue.countDeadLetters()).toBe(1);
    expect(letters.runs).toHaveLength(1);
  });
});
