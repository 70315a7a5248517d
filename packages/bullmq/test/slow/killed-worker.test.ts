/**
 * A worker process killed with SIGKILL in the middle of a handler: its job's lock expires, and the
 * job runs again on another worker, and completes. Nothing is lost, and it runs once to the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queuedWebhooks, signed, testQueueOptions, until } from '../helpers/queues.js';

const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url));
const BUILT = ['../../dist/index.js', '../../../core/dist/index.js'].map((path) =>
  fileURLToPath(new URL(path, import.meta.url)),
);

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
});
