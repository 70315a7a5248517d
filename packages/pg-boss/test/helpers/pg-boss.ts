/** pg-boss queues, receivers and workers on a real Postgres, with test-sized delays. */

import { type AnyEvent, type HandlerContext, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue, type PgBossQueueOptions, pgBossJobIdFor } from '@pixhook/pg-boss';
import PgBoss from 'pg-boss';

export const SECRET = 'whsec_pgboss_tests_4d5e6f';

/** A queue name no other test uses, so tests sharing one database never see each other's jobs. */
export function uniqueName(label = 'test'): string {
  return `pixhook-test-${label}-${globalThis.crypto.randomUUID().slice(0, 8)}`;
}

/**
 * A started boss for tests: maintenance every second (it fails expired jobs, so a lost job runs
 * again quickly), no cron scheduling. Its `error` events are collected in `bossErrors`.
 */
export async function startBoss(url: string, options: Partial<PgBoss.ConstructorOptions> = {}) {
  const config = { connectionString: url, schedule: false, maintenanceIntervalSeconds: 1, max: 20, ...options };
  const boss = config.schedule === false ? withoutCronWarning(() => new PgBoss(config)) : new PgBoss(config);
  const bossErrors: Error[] = [];
  boss.on('error', (error) => void bossErrors.push(error));
  await boss.start();
  return { boss, bossErrors };
}

/**
 * pg-boss warns (`pg-boss-w03`, once per process, when built) that an archive interval under 60 s
 * disables its cron processing. These bosses run no cron (`schedule: false`) and the archive test
 * needs jobs archived after a second, so that one expected warning is not printed: every other
 * warning still is.
 */
function withoutCronWarning<T>(build: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (rest.includes('pg-boss-w03')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return build();
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** Queue options for tests: 3 attempts retried at once, short expiration. */
export function testQueueOptions(options: Partial<PgBossQueueOptions> = {}): PgBossQueueOptions {
  return {
    name: uniqueName(),
    attempts: 3,
    backoff: { type: 'fixed', delayMs: 0 },
    ...options,
  };
}

/** Worker options for tests: an idle worker polls every 100 ms. */
export const QUICK = { pollingIntervalMs: 100 } as const;

/** One handler run, as a worker saw it. */
export interface Run {
  eventId: string;
  type: string;
  context: HandlerContext;
  at: number;
}

/**
 * A queue on `boss` and the `Webhooks` given it, with a handler on every event that records each
 * run and then does what `act` says (throw, wait…), and every `onError`.
 */
export function queuedWebhooks(
  boss: PgBoss,
  options: PgBossQueueOptions,
  act: (event: AnyEvent, context: HandlerContext, run: number) => unknown = () => {},
) {
  const queue = new PgBossQueue(boss, options);
  const webhooks = new Webhooks({ secret: SECRET, queue });
  const runs: Run[] = [];
  const errors: { error: WebhookVerificationError; attempt?: number }[] = [];
  webhooks.onAny((event, context) => {
    runs.push({ eventId: event.id, type: event.type, context, at: performance.now() });
    return act(event, context, runs.filter((run) => run.eventId === event.id).length);
  });
  webhooks.onError((error, context) => void errors.push({ error, attempt: context.job?.attempt }));
  return { queue, webhooks, runs, errors };
}

/** A signed delivery of a fresh event (or of `event`). */
export function signed(event: AnyEvent = createTestEvent('image.created') as AnyEvent) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return { method: 'POST', headers, body, event };
}

/** The state of an event's job in pg-boss's job table (undefined: none there). */
export async function jobState(boss: PgBoss, queue: string, eventId: string): Promise<string | undefined> {
  return (await boss.getJobById(queue, pgBossJobIdFor(eventId)))?.state;
}

/** How many jobs of `queue` are in each state, in pg-boss's job table. */
export async function jobCounts(boss: PgBoss, queue: string, schema = 'pgboss'): Promise<Record<string, number>> {
  const result = await boss
    .getDb()
    .executeSql(`SELECT state::text, count(*)::int AS n FROM ${schema}.job WHERE name = $1 GROUP BY state`, [queue]);
  return Object.fromEntries(result.rows.map((row: { state: string; n: number }) => [row.state, row.n]));
}

/** Waits until `check()` is true, polling; throws with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
