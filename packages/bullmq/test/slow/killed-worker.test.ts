/**
 * A worker process killed with SIGKILL in the middle of a handler: its job's lock expires, and the
 * job runs again on another worker, and completes. Nothing is lost, and it runs once to the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ErrorContext } from '@pixhook/core';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, testQueueOptions, until } from '../helpers/queues.js';

const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url));
const BUILT = ['../../dist/index.js', '../../../core/dist/index.js'].map((path) =>
  fileURLToPath(new URL(path, import.meta.url)),
);

/** The fixture worker's lock and stall check (fixtures/worker.mjs), and this test's in-process worker's. */
const LOCK_DURATION_MS = 1_000;
const STALLED_INTERVAL_MS = 300;
/**
 * What the README promises for a lost job to start again: lockDurationMs + stalledIntervalMs, plus
 * up to a second for a worker to take it. The test allows 3 s more for a loaded machine.
 */
const RERUN_BOUND_MS = LOCK_DURATION_MS + STALLED_INTERVAL_MS + 1_000;
const LOADED_MACHINE_MARGIN_MS = 3_000;

function startChild(port: number, name: string, mode: 'hang' | 'work') {
  const child: ChildProcess = spawn(process.execPath, [WORKER, String(port), name, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

describeWithRedis('a worker killed mid-handler', () => {
  let server: RedisServer;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    for (const file of BUILT) {
      if (!existsSync(file)) throw new Error(`${file} is missing: build first (pnpm build; pnpm test:slow does it).`);
    }
    server = await startRedisServer();
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await server?.close();
  });

  it('runs the job again on another worker process, where it completes', { timeout: 60_000 }, async () => {
    const options = testQueueOptions(server.port);
    const { queue, webhooks, runs } = queuedWebhooks(options);
    try {
      const doomed = startChild(server.port, options.name!, 'hang');
      children.push(doomed.child);
      await until(() => doomed.output().includes('READY'), 'the first worker');
      const request = signed();
      expect((await webhooks.handle(request)).status).toBe(202);
      await until(() => doomed.output().includes(`RUNNING ${request.event.id}`), 'the handler to start');
      const exited = new Promise((resolve) => doomed.child.once('exit', resolve));
      doomed.child.kill('SIGKILL');
      await exited;
      expect(await queue.bullQueue.getJobState(request.event.id)).toBe('active');

      const survivor = startChild(server.port, options.name!, 'work');
      children.push(survivor.child);
      await until(() => survivor.output().includes(`DONE ${request.event.id}`), 'the job to run again', 20_000);
      await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
      expect(doomed.output()).not.toContain('DONE');
      expect(survivor.output().match(/RUNNING /g)).toHaveLength(1);
      expect(runs).toEqual([]);
      expect(await queue.countDeadLetters()).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it('tells onError JOB_STALLED with the job and its event, and runs it again within the documented bound', {
    timeout: 60_000,
  }, async () => {
    const options = testQueueOptions(server.port);
    const { queue, webhooks, runs } = queuedWebhooks(options);
    const reports: ErrorReport[] = [];
    webhooks.onError((error, context) => void reports.push({ code: error.code, context }));
    try {
      const doomed = startChild(server.port, options.name!, 'hang');
      children.push(doomed.child);
      await until(() => doomed.output().includes('READY'), 'the first worker');
      const request = signed();
      expect((await webhooks.handle(request)).status).toBe(202);
      await until(() => doomed.output().includes(`RUNNING ${request.event.id}`), 'the handler to start');
      // Idle until the job is lost: it takes the job once the stall check gives it back.
      queue.startWorker(webhooks, { lockDurationMs: LOCK_DURATION_MS, stalledIntervalMs: STALLED_INTERVAL_MS });
      const exited = new Promise((resolve) => doomed.child.once('exit', resolve));
      doomed.child.kill('SIGKILL');
      await exited;
      const killedAt = performance.now();
      await until(() => runs.length === 1, 'the job to run again', 20_000);
      const rerunAfterMs = (runs[0]?.at ?? Number.NaN) - killedAt;
      console.log(`a lost job ran again ${Math.round(rerunAfterMs)} ms after its worker was killed`);
      expect(rerunAfterMs).toBeLessThan(RERUN_BOUND_MS + LOADED_MACHINE_MARGIN_MS);

      await until(() => reports.some((report) => report.code === 'JOB_STALLED'), 'the JOB_STALLED report');
      const stalled = reports.find((report) => report.code === 'JOB_STALLED');
      expect(stalled?.context.event?.id).toBe(request.event.id);
      expect(stalled?.context.deliveryId).toBe(request.headers['x-service-delivery']);
      expect(stalled?.context.job).toMatchObject({
        engine: 'bullmq',
        jobId: request.event.id,
        attempt: 1,
        maxAttempts: 3,
      });
      // The README's onError line: `error.code, job?.jobId ?? ''` logs the real id.
      expect(stalled?.context.job?.jobId ?? '').not.toBe('');
      await until(async () => (await queue.bullQueue.getJobState(request.event.id)) === 'completed', 'completion');
    } finally {
      await queue.close();
    }
  });
});

interface ErrorReport {
  code: string;
  context: ErrorContext;
}
