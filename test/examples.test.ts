// The runnable examples in examples/ are what users copy: each is started as its own process (on
// the built packages, as a user would run it), sent a signed and a forged delivery, and stopped.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { httpSend } from '@pixhook/test-helpers/adapters';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));
const SECRET = 'whsec_examples_test_4d2c1b';

interface RunningExample extends Output {
  child: ChildProcess;
  port: number;
}

const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

function start(file: string, env: Record<string, string>): ChildProcess {
  const { NODE_OPTIONS: _, ...inherited } = process.env;
  const child = spawn(process.execPath, [file], { cwd: EXAMPLES, env: { ...inherited, ...env } });
  running.add(child);
  return child;
}

/** How long a child may take to print what a test waits for: generous, for a busy machine. */
const PRINT_CEILING_MS = 30_000;
/** A test that starts processes and waits for several of their lines. */
const PROCESS_TEST_MS = 90_000;

interface Output {
  stdout: () => string;
  stderr: () => string;
  /** Resolves once `text` is in the child's `stream` (waiting for its output, not a guessed time). */
  printed: (text: string, stream?: 'stdout' | 'stderr') => Promise<void>;
}

function collect(child: ChildProcess): Output {
  const text = { stdout: '', stderr: '' };
  child.stdout?.on('data', (chunk) => {
    text.stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    text.stderr += chunk;
  });
  const printed = (wanted: string, stream: 'stdout' | 'stderr' = 'stdout') =>
    new Promise<void>((resolve, reject) => {
      const source = child[stream];
      const check = () => {
        if (!text[stream].includes(wanted)) return false;
        done();
        resolve();
        return true;
      };
      const onExit = () => {
        // 'close' comes after the last output: a final check, then the child is gone.
        if (!check()) {
          done();
          reject(new Error(`the child ended without printing ${JSON.stringify(wanted)}:\n${text.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`not printed within ${PRINT_CEILING_MS} ms: ${JSON.stringify(wanted)}\n${text[stream]}`));
      }, PRINT_CEILING_MS);
      const done = () => {
        clearTimeout(timer);
        source?.off('data', check);
        child.off('close', onExit);
      };
      if (check()) return;
      // Registered after collect's own listener, so the text already holds this chunk.
      source?.on('data', check);
      child.once('close', onExit);
    });
  return { stdout: () => text.stdout, stderr: () => text.stderr, printed };
}

/** Starts an example on a free port (PORT=0) and waits for the line that gives its address. */
async function startExample(file: string, env: Record<string, string> = {}): Promise<RunningExample> {
  const child = start(file, { SIGNING_SECRET: SECRET, PORT: '0', ...env });
  const output = collect(child);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${file} did not start within ${PRINT_CEILING_MS} ms:\n${output.stderr()}`)),
      PRINT_CEILING_MS,
    );
    child.stdout?.on('data', () => {
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)\/webhooks/.exec(output.stdout());
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`${file} exited ${code}:\n${output.stderr()}`)));
  });
  return { child, port, ...output };
}

async function stop(child: ChildProcess): Promise<number | null> {
  // 'close' comes after 'exit' and after the last output.
  const exited = once(child, 'close');
  child.kill('SIGTERM');
  const [code] = await exited;
  running.delete(child);
  return code as number | null;
}

describe.each(['express.mjs', 'fastify.mjs', 'koa.mjs'])('examples/%s', (file) => {
  it(
    'answers a signed delivery 200 and runs its handler, a forged one 400, and stops on SIGTERM',
    async () => {
      const example = await startExample(file);

      const event = createTestEvent('image.created');
      const signed = createSignedRequest(event, { secret: SECRET });
      const good = await httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      expect(good.status).toBe(200);
      // The child's output arrives on another pipe than the answer: wait for it.
      await example.printed(`image.created ${event.data.object.id}`);
      expect(example.stdout()).toContain(signed.headers['x-service-delivery']);

      const forged = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_attacker_guess' });
      const bad = await httpSend(example.port, { path: '/webhooks', headers: forged.headers, body: forged.body });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({ error: { code: 'SIGNATURE_MISMATCH' } });
      await example.printed('pixhook SIGNATURE_MISMATCH', 'stderr');

      const health = await httpSend(example.port, { method: 'GET', path: '/health' });
      expect(health.json).toEqual({ ok: true });

      expect(await stop(example.child)).toBe(0);
      expect(example.stdout() + example.stderr()).not.toContain(SECRET);
    },
    PROCESS_TEST_MS,
  );

  it('refuses to start without SIGNING_SECRET and says what to set', async () => {
    const child = start(file, { SIGNING_SECRET: '', PORT: '0' });
    const output = collect(child);
    const [code] = await once(child, 'close');
    expect(code).toBe(1);
    expect(output.stderr()).toContain('Set SIGNING_SECRET');
  });
});

// The local HTTP server the Lambda README documents for trying a handler with `pixhook send`.
describe('examples/lambda/local.mjs', () => {
  it(
    'serves examples/lambda/handler.mjs as a Function URL would: a signed delivery 200 with its handler run, a forged one 400; stops on SIGTERM',
    async () => {
      const example = await startExample('lambda/local.mjs');

      const event = createTestEvent('image.created');
      const signed = createSignedRequest(event, { secret: SECRET });
      const good = await httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      expect(good.status).toBe(200);
      expect(good.json).toEqual({ received: true });
      await example.printed(`image.created ${event.data.object.id}`);
      expect(example.stdout()).toContain(`delivery ${signed.headers['x-service-delivery']}`);

      const forged = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_attacker_guess' });
      const bad = await httpSend(example.port, { path: '/webhooks', headers: forged.headers, body: forged.body });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({ error: { code: 'SIGNATURE_MISMATCH' } });
      await example.printed('pixhook SIGNATURE_MISMATCH', 'stderr');

      expect(await stop(example.child)).toBe(0);
      expect(example.stdout() + example.stderr()).not.toContain(SECRET);
    },
    PROCESS_TEST_MS,
  );
});

describeWithRedis('examples/queued', () => {
  let redis: RedisServer;
  let env: Record<string, string>;
  beforeAll(async () => {
    redis = await startRedisServer();
    env = { REDIS_URL: `redis://127.0.0.1:${redis.port}` };
  });
  afterAll(async () => {
    await redis?.close();
  });

  it(
    'one-file.mjs answers 202 at once and its worker processes the event; stops on SIGTERM',
    async () => {
      const example = await startExample('queued/one-file.mjs', env);
      const signed = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
      const answer = await httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      expect(answer.status).toBe(202);
      expect(answer.json).toEqual({ received: true, queued: true });
      const { id } = JSON.parse(signed.body) as { id: string };
      await example.printed(`processed image.created ${id} (attempt 1 of 5)`);
      expect(await stop(example.child)).toBe(0);
    },
    PROCESS_TEST_MS,
  );

  it(
    'receiver.mjs queues, worker.mjs (another process) processes; both stop on SIGTERM',
    async () => {
      const receiver = await startExample('queued/receiver.mjs', env);
      const worker = start('queued/worker.mjs', { SIGNING_SECRET: SECRET, ...env });
      const output = collect(worker);
      await output.printed('worker started');
      const signed = createSignedRequest(createTestEvent('quota.warned'), { secret: SECRET });
      const answer = await httpSend(receiver.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      expect(answer.status).toBe(202);
      const { id } = JSON.parse(signed.body) as { id: string };
      await output.printed(`processed quota.warned ${id}`);
      expect(receiver.stdout()).not.toContain('processed');
      expect(await stop(worker)).toBe(0);
      expect(await stop(receiver.child)).toBe(0);
    },
    PROCESS_TEST_MS,
  );
});

describeWithPostgres('examples/postgres', () => {
  let postgres: PostgresServer;
  beforeAll(async () => {
    postgres = await startPostgresServer();
  });
  afterAll(async () => {
    await postgres?.close();
  });

  it(
    'receiver.mjs migrates, commits each event once with its row, and stops on SIGTERM',
    async () => {
      const example = await startExample('postgres/receiver.mjs', { DATABASE_URL: postgres.url });
      const event = createTestEvent('image.created', { id: 'img_example', url: 'https://cdn.example/img.png' });
      const signed = createSignedRequest(event, { secret: SECRET });
      const send = () => httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      const first = await send();
      expect(first.status).toBe(200);
      expect(first.json).toEqual({ received: true });
      expect((await send()).json).toEqual({ received: true, duplicate: true });
      // The child's output arrives on another pipe than the answer: wait for it.
      await example.printed(`stored image img_example for ${event.id}`);
      const pool = new pg.Pool({ connectionString: postgres.url });
      try {
        const { rows } = await pool.query('SELECT id, url FROM images');
        expect(rows).toEqual([{ id: 'img_example', url: 'https://cdn.example/img.png' }]);
        const recorded = await pool.query('SELECT state FROM pixhook_events WHERE event_id = $1', [event.id]);
        expect(recorded.rows).toEqual([{ state: 'completed' }]);
      } finally {
        await pool.end();
      }
      expect(await stop(example.child)).toBe(0);
    },
    PROCESS_TEST_MS,
  );
});
