/**
 * Production data for the dashboard's production views, on real servers: archived deliveries in a
 * PostgresArchive or a RedisArchive (written through `record()`, as core writes them), and dead
 * letters made by real BullMQ and pg-boss workers whose handler fails.
 */
import { BullMQQueue } from '@pixhook/bullmq';
import {
  type AnyEvent,
  type ArchivedDelivery,
  type ArchivedStep,
  type InboxReader,
  type WebhookArchive,
  Webhooks,
} from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue } from '@pixhook/pg-boss';
import { migrateArchive, PostgresArchive } from '@pixhook/postgres';
import { RedisArchive } from '@pixhook/redis';
import { Redis } from 'ioredis';
import type pg from 'pg';
import type PgBoss from 'pg-boss';

export const SECRET = 'whsec_dashboard_production_5e6f';

/** A name no other test uses. */
export function uniqueName(label: string): string {
  return `${label}_${globalThis.crypto.randomUUID().slice(0, 8)}`;
}

/** Waits until `check()` is true, polling; throws with `what` after `ms` (a loaded machine gets room). */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export type ArchiveKind = 'postgres' | 'redis';

/** An archive both written (the app's side) and read (the dashboard's), and how to open another on the same data. */
export interface TestArchive {
  archive: WebhookArchive & InboxReader;
  /** The PostgresArchive's table, or the RedisArchive's prefix. */
  table: string;
  /** Another instance on the same tables or keys (an app attached for replays, say). */
  another(options?: { replayPollMs?: number }): WebhookArchive & InboxReader;
  close(): Promise<void>;
}

/** A PostgresArchive on its own table, migrated. */
export async function postgresArchive(pool: pg.Pool): Promise<TestArchive> {
  const table = uniqueName('inbox');
  await migrateArchive(pool, { table });
  const opened: PostgresArchive[] = [];
  const open = (options: { replayPollMs?: number } = {}) => {
    const archive = new PostgresArchive(pool, { table, pruneIntervalMs: false, ...options });
    opened.push(archive);
    return archive;
  };
  return {
    archive: open(),
    table,
    another: open,
    close: async () => {
      for (const archive of opened) await archive.close();
    },
  };
}

/** A RedisArchive on its own prefix. */
export function redisArchive(port: number): TestArchive {
  const prefix = uniqueName('pixhook:inbox');
  const clients: Redis[] = [];
  const opened: RedisArchive[] = [];
  const open = (options: { replayPollMs?: number } = {}) => {
    const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
    clients.push(client);
    const archive = new RedisArchive(client, { prefix, pruneIntervalMs: false, ...options });
    opened.push(archive);
    return archive;
  };
  return {
    archive: open(),
    table: prefix,
    another: open,
    close: async () => {
      for (const archive of opened) await archive.close();
      for (const client of clients) client.disconnect();
    },
  };
}

/** One verified delivery as core archives it. */
export function delivery(
  event: AnyEvent,
  at: number,
  overrides: Partial<ArchivedDelivery> = {},
): ArchivedDelivery & { body: Uint8Array } {
  const signed = createSignedRequest(event, { secret: SECRET });
  const headers: Record<string, string> = { 'user-agent': 'ImageService-Webhooks/1.0' };
  for (const [name, value] of Object.entries(signed.headers)) headers[name.toLowerCase()] = value;
  return {
    kind: 'delivery',
    eventId: event.id,
    eventType: event.type,
    created: typeof event.created === 'number' ? event.created : undefined,
    deliveryId: headers['x-service-delivery'] as string,
    timestamp: Math.floor(at / 1000),
    at,
    body: new TextEncoder().encode(signed.body),
    headers,
    secretIndex: 0,
    mode: 'inline',
    status: 200,
    result: 'processed',
    ms: 4,
    runs: [{ handler: 'recordUpload', ms: 3, ok: true }],
    ...overrides,
  };
}

const TYPES = ['image.created', 'image.deleted', 'quota.exceeded'] as const;

/** What was seeded, newest first (the inbox's order). */
export interface Seeded {
  id: string;
  type: string;
  outcome: 'processed' | 'failed';
  at: number;
}

/**
 * `count` events, one a second ending at `end`, types in turn, every fifth failed (its handler
 * threw); newest first in the answer, as the inbox lists them.
 */
export async function seedEvents(archive: WebhookArchive, count: number, end = Date.now()): Promise<Seeded[]> {
  const seeded: Seeded[] = [];
  for (let i = 0; i < count; i++) {
    const type = TYPES[i % TYPES.length] as string;
    const event = createTestEvent(type as 'image.created') as AnyEvent;
    const at = end - (count - i) * 1_000;
    const failed = i % 5 === 0;
    await archive.record(
      delivery(
        event,
        at,
        failed
          ? {
              status: 500,
              result: 'failed',
              code: 'HANDLER_FAILED',
              runs: [{ handler: 'recordUpload', ms: 7, ok: false, error: 'Error: the billing API is down' }],
            }
          : {},
      ),
    );
    seeded.push({ id: event.id, type, outcome: failed ? 'failed' : 'processed', at });
  }
  return seeded.reverse();
}

/** Text an attacker controls: markup, and a right-to-left override that would reorder what follows. */
export const HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> \u202Egnp.exe';

/**
 * One event whose body and a header hold hostile text, delivered (a handler failed), then replayed
 * (processed): newer than `at`.
 */
export async function seedHostile(archive: WebhookArchive, at: number) {
  const event = createTestEvent('image.created', {
    id: 'img_hostile',
    filename: HOSTILE,
    bytes: 1,
  }) as AnyEvent;
  const signed = delivery(event, at, {
    status: 500,
    result: 'failed',
    code: 'HANDLER_FAILED',
    runs: [{ handler: 'thumbnail', ms: 12, ok: false, error: `TypeError: ${HOSTILE}` }],
  });
  const first = { ...signed, headers: { ...signed.headers, 'x-forwarded-for': `203.0.113.9 ${HOSTILE}` } };
  await archive.record(first);
  const replay: ArchivedStep = {
    kind: 'replay',
    eventId: event.id,
    eventType: event.type,
    at: at + 500,
    result: 'processed',
    ms: 9,
    runs: [{ handler: 'thumbnail', ms: 8, ok: true }],
  };
  await archive.record(replay);
  return { event, body: first.body, headers: first.headers };
}

/** An event whose body is not UTF-8 (bytes a client sent, verified as they are). */
export async function seedBinary(archive: WebhookArchive, at: number) {
  const event = createTestEvent('image.deleted') as AnyEvent;
  const body = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x80, 0x7d]);
  await archive.record(delivery(event, at, { body }));
  return { event, body };
}

/** A handler that fails while `broken` says so, and the runs it saw. */
export function failingHandler() {
  const state = { broken: true, runs: [] as string[] };
  const handler = (event: AnyEvent) => {
    state.runs.push(event.id);
    if (state.broken) throw new Error(`the billing API is down <b>${HOSTILE}</b>`);
  };
  return { state, handler };
}

/** Signed deliveries of fresh events. */
function requests(count: number) {
  return Array.from({ length: count }, () => {
    const event = createTestEvent('quota.exceeded') as AnyEvent;
    const { headers, body } = createSignedRequest(event, { secret: SECRET });
    return { event, request: { method: 'POST', headers, body } };
  });
}

export interface DeadLetterQueue<Q> {
  queue: Q;
  /** Event ids of the dead letters made, oldest first. */
  eventIds: string[];
  /** Every handler run, by event id. */
  runs: string[];
  /** While true the handler fails; set it false to let retries succeed. */
  setBroken(broken: boolean): void;
  close(): Promise<void>;
}

/** A BullMQQueue named `name` with `count` dead letters (one attempt each), and its worker still running. */
export async function bullmqDeadLetters(
  port: number,
  name: string,
  count: number,
): Promise<DeadLetterQueue<BullMQQueue>> {
  const queue = new BullMQQueue({
    connection: { host: '127.0.0.1', port, retryStrategy: () => 50 },
    name,
    attempts: 1,
    backoff: { type: 'fixed', delayMs: 0 },
  });
  return withDeadLetters(queue, count, (webhooks) => {
    queue.startWorker(webhooks);
    return () => queue.close();
  });
}

/** A PgBossQueue named `name` on `boss` with `count` dead letters, and its worker still running. */
export async function pgBossDeadLetters(
  boss: PgBoss,
  name: string,
  count: number,
): Promise<DeadLetterQueue<PgBossQueue>> {
  const queue = new PgBossQueue(boss, { name, attempts: 1, backoff: { type: 'fixed', delayMs: 0 } });
  return withDeadLetters(queue, count, (webhooks) => {
    queue.startWorker(webhooks, { pollingIntervalMs: 100 });
    return () => queue.close();
  });
}

async function withDeadLetters<Q extends BullMQQueue | PgBossQueue>(
  queue: Q,
  count: number,
  start: (webhooks: Webhooks) => () => Promise<void>,
): Promise<DeadLetterQueue<Q>> {
  const { state, handler } = failingHandler();
  const webhooks = new Webhooks({ secret: SECRET, queue });
  webhooks.onAny(handler);
  webhooks.onError(() => {});
  const close = start(webhooks);
  const made = requests(count);
  for (const { request } of made) {
    const answer = await webhooks.handle(request);
    if (answer.status !== 202) throw new Error(`enqueue answered ${answer.status}`);
  }
  await until(async () => (await queue.countDeadLetters()) === count, `${count} dead letters`);
  return {
    queue,
    eventIds: made.map(({ event }) => event.id),
    runs: state.runs,
    setBroken: (broken) => {
      state.broken = broken;
    },
    close,
  };
}
