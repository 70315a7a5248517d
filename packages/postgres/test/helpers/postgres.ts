/** Pools, tables and deliveries on a real Postgres, for the tests of @pixhook/postgres. */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AnyEvent } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { migrate } from '@pixhook/postgres';
import pg from 'pg';

export const SECRET = 'whsec_postgres_tests_3c4d5e';

/** A table name no other test uses, so tests sharing one server never see each other's rows. */
export function uniqueTable(label = 'events'): string {
  return `pixhook_${label}_${globalThis.crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`;
}

/** A pool on `url` that the test ends; its `error` events are collected, not thrown. */
export function testPool(url: string, options: pg.PoolConfig = {}) {
  const pool = new pg.Pool({ connectionString: url, max: 10, ...options });
  const poolErrors: Error[] = [];
  pool.on('error', (error) => void poolErrors.push(error));
  return Object.assign(pool, { poolErrors });
}

/** A migrated events table and a business table (`id text primary key`-free: duplicates would show). */
export async function freshTables(pool: pg.Pool): Promise<{ table: string; business: string }> {
  const table = uniqueTable();
  const business = uniqueTable('rows');
  await migrate(pool, { table });
  await pool.query(`CREATE TABLE ${business} (event_id text NOT NULL, written_at timestamptz DEFAULT now())`);
  return { table, business };
}

/** How many rows `business` holds for each event id. */
export async function rowCounts(pool: pg.Pool, business: string): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ event_id: string; n: number }>(
    `SELECT event_id, count(*)::int AS n FROM ${business} GROUP BY event_id`,
  );
  return new Map(rows.map((row) => [row.event_id, row.n]));
}

/** A signed delivery of a fresh event (or of `event`). */
export function signed(event: AnyEvent = createTestEvent('image.created') as AnyEvent) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return { method: 'POST', headers, body, event };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check()` is true, polling; throws with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

/** A receiving instance in its own process (test/fixtures/receiver.mjs), on the built packages. */
export interface Receiver {
  readonly port: number;
  /** What it printed, one entry per line. */
  readonly lines: string[];
  /** SIGKILL: the process dies at once, as a crashed instance; resolves once it has exited. */
  kill(): Promise<void>;
}

const RECEIVER = fileURLToPath(new URL('../fixtures/receiver.mjs', import.meta.url));

export async function startReceiver(
  url: string,
  tables: { table: string; business: string },
  mode: 'hang' | 'flaky' | 'slow' | 'plain',
): Promise<Receiver> {
  const child = spawn(process.execPath, [RECEIVER, url, tables.table, tables.business, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2_000);
  });
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts);
  });
  let killing = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      // A receiver that dies by itself (a crash, an unhandled rejection) fails every request sent to
      // it afterwards: say why, or the test only sees connections refused.
      if (!killing) console.error(`the receiver exited by itself (code ${code}, signal ${signal}): ${stderr}`);
      resolve();
    }),
  );
  await until(() => lines.some((line) => line.startsWith('READY ')) || child.exitCode !== null, 'the receiver', 20_000);
  const ready = lines.find((line) => line.startsWith('READY '));
  if (!ready) throw new Error(`the receiver exited with ${child.exitCode}: ${stderr}`);
  return {
    port: Number(ready.slice('READY '.length)),
    lines,
    kill: async () => {
      killing = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
