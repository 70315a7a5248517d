/**
 * pg-boss workers killed with SIGKILL: one in the middle of a handler (its transaction is rolled
 * back with its connection), one right after its event's transaction committed but before the job
 * was marked complete. pg-boss's maintenance fails both jobs as expired, another worker process runs
 * them again, and with transactions the business table ends with exactly one row per event: the
 * first event's handler runs again to the end, the second's is not run again.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pgBossJobIdFor } from '@pixhook/pg-boss';
import { migrate } from '@pixhook/postgres';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import pg from 'pg';
import type PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobState, queuedWebhooks, signed, startBoss, testQueueOptions, until } from '../helpers/pg-boss.js';

const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url));
const BUILT = ['../../dist/index.js', '../../../core/dist/index.js'].map((path) =>
  fileURLToPath(new URL(path, import.meta.url)),
);

function startChild(url: string, name: string, mode: 'hang' | 'crash-after-commit' | 'work') {
  const child: ChildProcess = spawn(process.execPath, [WORKER, url, name, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describeWithPostgres('pg-boss workers killed mid-job', () => {
  let server: PostgresServer;
  let boss: PgBoss;
  let pool: pg.Pool;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    for (const file of BUILT) {
      if (!existsSync(file)) throw new Error(`${file} is missing: build first (pnpm build; pnpm test:slow does it).`);
    }
    server = await startPostgresServer();
    ({ boss } = await startBoss(server.url));
    pool = new pg.Pool({ connectionString: server.url });
    pool.on('error', () => {});
    await migrate(pool);
    await pool.query('CREATE TABLE effects (event_id text NOT NULL, pid int NOT NULL)');
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await boss?.stop({ graceful: false, wait: true });
    await pool?.end();
    await server?.close();
  });

  it('another worker process runs the jobs again; one row per event in the business table', {
    timeout: 60_000,
  }, async () => {
    // The receiver: jobs expire 2 s after a run starts (the boss's maintenance runs every second).
    const options = testQueueOptions({ attempts: 5, expireInMs: 2_000 });
    const { queue, webhooks, runs, errors } = queuedWebhooks(boss, options);
    const rows = async (eventId: string) =>
      (await pool.query('SELECT pid FROM effects WHERE event_id = $1', [eventId])).rows.map((row) => row.pid);
    try {
      // The queue exists before the workers start (two instances creating it at the same moment
      // make Postgres report a deadlock inside pg-boss's createQueue(): retried, but slow).
      expect(await queue.countDeadLetters()).toBe(0);
      // 1. Killed in the middle of the handler, its insert not committed.
      const hung = startChild(server.url, options.name!, 'hang');
      children.push(hung.child);
      await until(() => hung.output().includes('READY'), 'the first worker', 15_000);
      const first = signed();
      expect(
        (await webhooks.handle(first)).status,
        errors.map(({ error }) => `${error.message} ${(error.cause as Error)?.stack}`).join('\n'),
      ).toBe(202);
      await until(() => hung.output().includes(`RUNNING ${first.event.id}`), 'the handler to start');
      hung.child.kill('SIGKILL');
      await hung.exited;
      expect(await jobState(boss, options.name!, first.event.id)).toBe('active');

      // 2. Killed right after its commit, before pg-boss heard the job completed.
      const crashing = startChild(server.url, options.name!, 'crash-after-commit');
      children.push(crashing.child);
      await until(() => crashing.output().includes('READY'), 'the second worker', 15_000);
      const second = signed();
      expect((await webhooks.handle(second)).status).toBe(202);
      await crashing.exited;
      expect(crashing.output()).toContain(`COMMITTED ${second.event.id}`);
      expect(await jobState(boss, options.name!, second.event.id)).toBe('active');
      expect(await rows(first.event.id)).toEqual([]);
      expect(await rows(second.event.id)).toEqual([crashing.child.pid]);

      // 3. A worker that lives: both jobs expire, and run again here.
      const survivor = startChild(server.url, options.name!, 'work');
      children.push(survivor.child);
      await until(
        async () =>
          (await jobState(boss, options.name!, first.event.id)) === 'completed' &&
          (await jobState(boss, options.name!, second.event.id)) === 'completed',
        'both jobs to complete on the surviving worker',
        30_000,
      );
      expect(survivor.output()).toContain(`DONE ${first.event.id}`);
      // The committed event's handler is not run again: its record is in the same transaction.
      expect(survivor.output()).not.toContain(`RUNNING ${second.event.id}`);
      expect(survivor.output().match(/RUNNING /g)).toHaveLength(1);
      // onError heard of both lost jobs.
      for (const event of [first.event, second.event]) {
        expect(survivor.output()).toContain(`STALLED ${pgBossJobIdFor(event.id)}`);
      }
      expect(await rows(first.event.id)).toEqual([survivor.child.pid]);
      expect(await rows(second.event.id)).toEqual([crashing.child.pid]);
      expect(runs).toEqual([]);
      expect(await queue.countDeadLetters()).toBe(0);
    } finally {
      await queue.close();
    }
  });
});
