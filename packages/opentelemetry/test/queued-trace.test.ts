/**
 * One trace across two processes, on BullMQ (a real redis-server) and pg-boss (a real Postgres):
 * a signed delivery over real HTTP to Express, traced here by the HTTP instrumentation and
 * PixhookInstrumentation (receive, send), is run by a worker in a child process with its own
 * OpenTelemetry SDK (fixtures/traced-worker.mjs, on the built packages), whose process span continues
 * the request's trace: its parent is the send span and it links to it, and the handler span is its
 * child. The trace context travels in the job only.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { BullMQQueue } from '@pixhook/bullmq';
import { type WebhookQueue, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { PgBossQueue } from '@pixhook/pg-boss';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { ensureBuilt } from '@pixhook/test-helpers/cli';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startHttpInstrumentation, startOtel } from './helpers/otel.js';

const WORKER = fileURLToPath(new URL('./fixtures/traced-worker.mjs', import.meta.url));
const SECRET = 'whsec_queued_trace_5c7e19';
/** How long the worker may take to print what the test waits for: generous, for a busy machine. */
const CEILING_MS = 30_000;

// The receiving side: this process's SDK, with the HTTP server spans the receive span hangs under.
const otel = startOtel();
const http = startHttpInstrumentation(otel);

const workers: ChildProcess[] = [];
beforeAll(() => ensureBuilt('@pixhook/opentelemetry'), 300_000);
afterAll(async () => {
  for (const child of workers) child.kill('SIGKILL');
  http.disable();
  await otel.shutdown();
});

/** A span as the worker's exporter printed it. */
interface WorkerSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
  status: { code: SpanStatusCode };
  scope: string;
}

/** The fixture worker in a child process, and what it has printed. */
function startWorker(args: string[]) {
  const child = spawn(process.execPath, [WORKER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  workers.push(child);
  const spans: WorkerSpan[] = [];
  let ready = false;
  let exit: string | undefined;
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const listener of listeners) listener();
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (let end = stdout.indexOf('\n'); end >= 0; end = stdout.indexOf('\n')) {
      const line = stdout.slice(0, end);
      stdout = stdout.slice(end + 1);
      if (line === 'READY') ready = true;
      else if (line.startsWith('SPAN ')) spans.push(JSON.parse(line.slice('SPAN '.length)) as WorkerSpan);
    }
    changed();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = once(child, 'exit');
  child.once('exit', (code, signal) => {
    exit = `exited (${signal ?? code})`;
    changed();
  });

  /** Resolves with what `found()` returns once it is defined, checked again on every line printed. */
  const when = <T>(found: () => T | undefined, what: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = found();
        if (value !== undefined) return done(() => resolve(value));
        if (exit !== undefined) done(() => reject(new Error(`the worker ${exit} before ${what}; stderr: ${stderr}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`timed out waiting for ${what}; stderr: ${stderr}`))),
        CEILING_MS,
      );
      const done = (settle: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        settle();
      };
      listeners.add(check);
      check();
    });

  return {
    spans,
    when,
    ready: () => when(() => (ready ? true : undefined), 'READY'),
    /** SIGTERM (the worker closes its queue), then waits for the exit. */
    stop: async () => {
      if (exit === undefined) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** The first span here that `match` accepts, once it has ended. */
async function localSpan(what: string, match: (span: ReadableSpan) => boolean): Promise<ReadableSpan> {
  return vi.waitFor(
    () => {
      const span = otel.spans().find(match);
      if (!span) throw new Error(`no ${what} span yet`);
      return span;
    },
    { timeout: CEILING_MS, interval: 20 },
  );
}

/**
 * Sends one signed delivery over HTTP to an Express app that queues it on `queue`, while `worker`
 * (started on the same queue) runs it; checks the trace across both processes.
 */
async function oneTraceAcrossProcesses(
  queue: WebhookQueue & { engine: string; queueName: string },
  worker: ReturnType<typeof startWorker>,
): Promise<void> {
  const express = ADAPTERS.find((adapter) => adapter.name === 'express@5');
  if (!express) throw new Error('the test helpers no longer list express@5');
  const client = await express.create(new Webhooks({ secret: SECRET, queue }));
  try {
    await worker.ready();
    const event = createTestEvent('image.created');
    const { headers, body } = createSignedRequest(event, { secret: SECRET });
    expect((await client.send({ method: 'POST', headers, body })).status).toBe(202);

    // The worker's spans: the process span ends after its handler's.
    const processSpan = await worker.when(
      () =>
        worker.spans.find(
          (span) => span.name.startsWith('process ') && span.attributes['pixhook.event.id'] === event.id,
        ),
      "the worker's process span",
    );
    const handler = worker.spans.find((span) => span.name === 'handler resizeImage');

    // This process's spans: the HTTP server span, receive under it, send under receive.
    const receive = await localSpan(
      'receive',
      (span) => span.attributes['pixhook.event.id'] === event.id && span.name.startsWith('receive '),
    );
    const send = await localSpan(
      'send',
      (span) => span.kind === SpanKind.PRODUCER && span.attributes['pixhook.event.id'] === event.id,
    );
    const server = await localSpan(
      'HTTP server',
      (span) => span.kind === SpanKind.SERVER && span.spanContext().spanId === receive.parentSpanContext?.spanId,
    );

    const traceId = server.spanContext().traceId;
    expect(receive.name).toBe('receive image.created');
    expect(receive.spanContext().traceId).toBe(traceId);
    expect(receive.attributes['pixhook.outcome']).toBe('queued');
    expect(receive.attributes['http.response.status_code']).toBe(202);
    expect(send.name).toBe(`send ${queue.queueName}`);
    expect(send.spanContext().traceId).toBe(traceId);
    expect(send.parentSpanContext?.spanId).toBe(receive.spanContext().spanId);
    expect(send.attributes).toMatchObject({
      'messaging.system': queue.engine,
      'messaging.destination.name': queue.queueName,
      'messaging.operation.type': 'send',
      'messaging.message.id': event.id,
    });

    // In the worker: the same trace; process's parent is the send span, and it links to it.
    expect(processSpan).toMatchObject({
      name: `process ${queue.queueName}`,
      kind: SpanKind.CONSUMER,
      traceId,
      parentSpanId: send.spanContext().spanId,
      links: [{ traceId, spanId: send.spanContext().spanId }],
      scope: '@pixhook/opentelemetry',
    });
    expect(processSpan.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': queue.engine,
      'messaging.destination.name': queue.queueName,
      'messaging.operation.type': 'process',
      'messaging.message.id': event.id,
      'pixhook.event.type': 'image.created',
      'pixhook.job.attempt': 1,
    });
    expect(handler).toMatchObject({ traceId, parentSpanId: processSpan.spanId });
    // The trace context travelled in the job; it is not an attribute of any span.
    expect(JSON.stringify(worker.spans.map((span) => span.attributes))).not.toContain(send.spanContext().spanId);
  } finally {
    await client.close();
    await worker.stop();
  }
}

describeWithRedis('one trace from an HTTP request to a worker process on BullMQ', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('receive and send here, process and its handler in the worker: one trace, process under send and linked to it', {
    timeout: 90_000,
  }, async () => {
    const name = `pixhook-trace-${globalThis.crypto.randomUUID().slice(0, 8)}`;
    const queue = new BullMQQueue({ connection: { host: '127.0.0.1', port: redis.port }, name });
    try {
      await oneTraceAcrossProcesses(queue, startWorker(['bullmq', String(redis.port), name]));
    } finally {
      await queue.close();
    }
  });
});

describeWithPostgres('one trace from an HTTP request to a worker process on pg-boss', () => {
  let postgres: PostgresServer;
  let boss: PgBoss;
  beforeAll(async () => {
    postgres = await startPostgresServer();
    boss = new PgBoss({ connectionString: postgres.url, schedule: false, max: 4 });
    boss.on('error', () => {});
    await boss.start();
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false, wait: true });
    await postgres?.close();
  });

  it('receive and send here, process and its handler in the worker: one trace, process under send and linked to it', {
    timeout: 90_000,
  }, async () => {
    const name = `pixhook-trace-${globalThis.crypto.randomUUID().slice(0, 8)}`;
    const queue = new PgBossQueue(boss, { name });
    try {
      await oneTraceAcrossProcesses(queue, startWorker(['pg-boss', postgres.url, name]));
    } finally {
      await queue.close();
    }
  });
});
