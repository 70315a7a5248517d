/**
 * An instance dies in the middle of a handler (a real child process, SIGKILLed): its claim stays
 * until inFlightTtlMs has passed, retries meanwhile answer 409 on every other instance, and the
 * first retry after that processes the event. What it had completed before dying stays completed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import type { TestResponse } from '@pixhook/test-helpers/adapters';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/clients.js';
import { type Fleet, SECRET, startFleet } from '../helpers/instances.js';

const IN_FLIGHT_TTL_MS = 1_500;
const INSTANCE = fileURLToPath(new URL('./fixtures/instance.mjs', import.meta.url));
const BUILT = [
  new URL('../../dist/index.js', import.meta.url),
  new URL('../../../core/dist/index.js', import.meta.url),
].map((url) => fileURLToPath(url));

/** One delivery to the child; rejects when the connection dies without an answer. */
function post(port: number, request: { headers: Record<string, string>; body: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/webhooks', headers: request.headers, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(request.body);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the child instance; resolves with its port and a way to wait for a line it prints. */
async function startChild(redisPort: number, prefix: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    [INSTANCE, String(redisPort), prefix, String(IN_FLIGHT_TTL_MS), SECRET],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  const waiters: { pattern: string; resolve: () => void }[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    for (const waiter of waiters.filter((w) => output.includes(w.pattern))) waiter.resolve();
  });
  const waitFor = (pattern: string) =>
    new Promise<void>((resolve, reject) => {
      if (output.includes(pattern)) return resolve();
      const timer = setTimeout(() => reject(new Error(`child never printed ${pattern}; output: ${output}`)), 10_000);
      waiters.push({
        pattern,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  await waitFor('LISTENING ');
  const port = Number(/LISTENING (\d+)/.exec(output)![1]);
  return { child, port, waitFor };
}

describeWithRedis('an instance killed mid-handler', () => {
  let server: RedisServer;
  let survivors: Fleet;
  let child: ChildProcess | undefined;
  const prefix = uniquePrefix('killed');

  beforeAll(async () => {
    for (const file of BUILT) {
      if (!existsSync(file)) throw new Error(`${file} is missing: build first (pnpm build; pnpm test:slow does it).`);
    }
    server = await startRedisServer();
    survivors = await startFleet(server.port, { prefix, inFlightTtlMs: IN_FLIGHT_TTL_MS });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await survivors?.close();
    await server?.close();
  });

  it('leaves a claim that expires after inFlightTtlMs; a later retry processes the event', {
    timeout: 60_000,
  }, async () => {
    const started = await startChild(server.port, prefix);
    child = started.child;
    const stuck = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const stuckId = JSON.parse(stuck.body).id as string;
    const done = createSignedRequest(createTestEvent('image.deleted'), { secret: SECRET });
    const doneId = JSON.parse(done.body).id as string;

    expect(await post(started.port, done)).toBe(200);
    await started.waitFor(`DONE ${doneId}`);
    const first = post(started.port, stuck).catch((error: Error) => error);
    await started.waitFor(`RUNNING ${stuckId}`);
    const exited = new Promise((resolve) => started.child.once('exit', resolve));
    started.child.kill('SIGKILL');
    await exited;
    // The service saw no answer: a failed attempt, retried later.
    expect(await first).toBeInstanceOf(Error);

    const retries: TestResponse[] = [];
    for (const instance of survivors.instances) retries.push(await instance.send({ method: 'POST', ...stuck }));
    expect(
      retries.map((answer) => [answer.status, (answer.json as { error?: { code?: string } }).error?.code]),
    ).toEqual(survivors.instances.map(() => [409, 'IN_FLIGHT']));
    expect(survivors.runs).toEqual([]);

    let answer: TestResponse | undefined;
    for (let attempt = 0; attempt < 40 && answer?.status !== 200; attempt += 1) {
      await sleep(IN_FLIGHT_TTL_MS / 5);
      answer = await survivors.instances[attempt % survivors.instances.length]!.send({ method: 'POST', ...stuck });
      expect([200, 409]).toContain(answer.status);
    }
    expect(answer?.json).toEqual({ received: true });
    expect(survivors.runs.map((run) => run.eventId)).toEqual([stuckId]);

    // What the dead instance had completed stays completed everywhere.
    for (const instance of survivors.instances) {
      expect((await instance.send({ method: 'POST', ...done })).json).toEqual({ received: true, duplicate: true });
      expect((await instance.send({ method: 'POST', ...stuck })).json).toEqual({ received: true, duplicate: true });
    }
    expect(survivors.runs).toHaveLength(1);
  });
});
