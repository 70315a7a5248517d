/**
 * examples/lambda/handler.mjs is what users deploy: it runs here as the Lambda runtime runs it,
 * with plain node on the built packages (a child process imports it and invokes its handler), with
 * a signed and a forged delivery in Function URL events, and on two instances sharing Redis.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestEvent } from '@pixhook/core/testing';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventFor, readResult } from './helpers/events.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../../examples/lambda/handler.mjs', import.meta.url));
const RUNNER = fileURLToPath(new URL('./helpers/invoke-example.mjs', import.meta.url));

interface Invocation {
  code: number | null;
  results: ReturnType<typeof readResult>[];
  logs: string;
  stderr: string;
}

/** Node with the environment a Lambda function has: no NODE_OPTIONS from the test runner. */
function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _options, SIGNING_SECRET: _secret, REDIS_URL: _redis, ...inherited } = process.env;
  return { ...inherited, ...env };
}

/** One instance of the function: loads the example once and invokes it with each event in turn. */
function instance(env: Record<string, string>, events: unknown[]): Promise<Invocation> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUNNER, EXAMPLE], { cwd: ROOT, env: environment(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = stdout.split('\n');
      const results = lines
        .filter((line) => line.startsWith('RESULT '))
        .map((line) => readResult('function-url', JSON.parse(line.slice('RESULT '.length))));
      const logs = lines.filter((line) => !line.startsWith('RESULT ')).join('\n');
      resolve({ code, results, logs, stderr });
    });
    child.stdin.end(JSON.stringify(events));
  });
}

beforeAll(async () => {
  // `pnpm test` has built every package already; this builds only what is stale when run alone.
  const built = await new Promise<number | null>((resolve) => {
    spawn(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' }).on('close', resolve);
  });
  expect(built).toBe(0);
}, 180_000);

describe('examples/lambda/handler.mjs', () => {
  it('answers a signed delivery 200 and runs its handler, a forged one 400', async () => {
    const event = createTestEvent('image.created', { id: 'img_lambda', url: 'https://img.example/1.png' });
    const signed = delivery(event);
    const forged = delivery(createTestEvent('image.created'), { secret: 'whsec_forger' });
    const run = await instance({ SIGNING_SECRET: SECRET }, [
      eventFor('function-url', signed),
      eventFor('function-url', { ...forged, base64: true }),
    ]);
    expect(run.stderr).toContain('pixhook SIGNATURE_MISMATCH');
    expect(run.code).toBe(0);
    expect(run.results.map((result) => [result.status, result.json])).toEqual([
      [200, { received: true }],
      [400, { error: { code: 'SIGNATURE_MISMATCH', message: expect.any(String) } }],
    ]);
    expect(run.logs).toMatch(
      new RegExp(
        `image\\.created img_lambda \\(https://img\\.example/1\\.png\\) delivery ${signed.headers['x-service-delivery']} request [0-9a-f-]{36}`,
      ),
    );
  });

  it('without SIGNING_SECRET the function fails to start and says why', async () => {
    const run = await instance({}, []);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('Set SIGNING_SECRET to the endpoint signing secret');
  });
});

describeWithRedis('examples/lambda/handler.mjs on two instances', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });

  const twice = async (env: Record<string, string>) => {
    const event = createTestEvent('image.deleted', { id: `img_${Math.random().toString(36).slice(2)}` });
    // The service's retry of one event reaches another instance than the first attempt did.
    const first = await instance(env, [eventFor('function-url', delivery(event))]);
    const second = await instance(env, [eventFor('function-url', delivery(event))]);
    return [first, second].map((run) => ({
      json: run.results[0]?.json,
      ran: run.logs.includes(`image.deleted ${event.data.object.id}`),
    }));
  };

  it('with REDIS_URL the second instance answers the same event as a duplicate, without running it', async () => {
    const env = { SIGNING_SECRET: SECRET, REDIS_URL: `redis://127.0.0.1:${redis.port}` };
    expect(await twice(env)).toEqual([
      { json: { received: true }, ran: true },
      { json: { received: true, duplicate: true }, ran: false },
    ]);
  });

  it('without it each instance de-duplicates only what it saw itself: both run the event', async () => {
    expect(await twice({ SIGNING_SECRET: SECRET })).toEqual([
      { json: { received: true }, ran: true },
      { json: { received: true }, ran: true },
    ]);
  });
});
