/**
 * Handler, transaction, send and process spans, the metrics beside them, and what is never
 * recorded: the real SDK, deliveries over real HTTP to an Express 5 app.
 */
import { setImmediate as tick } from 'node:timers/promises';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  type BegunEvent,
  type EventTransactions,
  estimateAttempt,
  type QueuedDelivery,
  type QueuedRun,
  SERVICE_ATTEMPTS,
  type WebhookQueue,
  Webhooks,
  type WebhooksOptions,
} from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { DURATION_BUCKETS } from '@pixhook/opentelemetry';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { delivery, OLD_SECRET, SECRET, signedBody } from '@pixhook/test-helpers/deliveries';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { counted, recorded, startOtel } from './helpers/otel.js';

const otel = startOtel();
afterAll(() => otel.shutdown());

const express = ADAPTERS.find((adapter) => adapter.name === 'express@5');
if (!express) throw new Error('the test helpers no longer list express@5');

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function mount(options: Partial<WebhooksOptions> = {}, setup: (webhooks: Webhooks) => void = () => {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const errors: string[] = [];
  webhooks.onError((error) => void errors.push(error.code));
  setup(webhooks);
  const client = await (express as NonNullable<typeof express>).create(webhooks);
  clients.push(client);
  return { webhooks, client, errors };
}

/** The ended spans of one trace, once `count` of them have ended (generous ceiling). */
async function spansOf(traceOf: (span: ReadableSpan) => boolean, count: number): Promise<ReadableSpan[]> {
  return vi.waitFor(
    () => {
      const spans = otel.spans().filter(traceOf);
      expect(spans).toHaveLength(count);
      return spans;
    },
    { timeout: 10_000, interval: 10 },
  );
}

/** The spans of the trace whose receive span carries this delivery id. */
async function traceOfDelivery(deliveryId: string | undefined, count: number): Promise<Map<string, ReadableSpan>> {
  const receive = await vi.waitFor(
    () => {
      const found = otel
        .spans()
        .find((span) => span.attributes['pixhook.delivery.id'] === deliveryId && span.name.startsWith('receive'));
      expect(found).toBeDefined();
      return found as ReadableSpan;
    },
    { timeout: 10_000, interval: 10 },
  );
  const traceId = receive.spanContext().traceId;
  const spans = await spansOf((span) => span.spanContext().traceId === traceId, count);
  return new Map(spans.map((span) => [span.name, span]));
}

const parentOf = (span: ReadableSpan | undefined) => span?.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan | undefined) => span?.spanContext().spanId;

describe('handler spans', () => {
  it('one per handler, named after it, children of the receive span; a span made inside a handler with the global tracer is its child', async () => {
    const { client } = await mount({}, (webhooks) => {
      webhooks.on('image.created', function resizeImage() {
        trace.getTracer('app').startActiveSpan('app: resize', (span) => span.end());
      });
      webhooks.on('image.created', async function notifyOwner() {
        await tick();
        trace.getTracer('app').startSpan('app: notify after await').end();
      });
    });
    const request = delivery(createTestEvent('image.created'));
    expect((await client.send(request)).status).toBe(200);
    const spans = await traceOfDelivery(request.headers['x-service-delivery'], 5);
    const receive = spans.get('receive image.created');
    const first = spans.get('handler resizeImage');
    const second = spans.get('handler notifyOwner');
    expect(first?.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(first)).toBe(idOf(receive));
    expect(parentOf(second)).toBe(idOf(receive));
    expect(parentOf(spans.get('app: resize'))).toBe(idOf(first));
    expect(parentOf(spans.get('app: notify after await'))).toBe(idOf(second));
    expect(first?.attributes).toMatchObject({
      'code.function.name': 'resizeImage',
      'pixhook.handler.index': 0,
      'pixhook.event.type': 'image.created',
      'pixhook.delivery.id': request.headers['x-service-delivery'],
    });
    expect(second?.attributes['pixhook.handler.index']).toBe(1);
    expect(first?.status.code).toBe(SpanStatusCode.UNSET);
    expect(first?.instrumentationScope.name).toBe('@pixhook/opentelemetry');

    const points = await otel.collect();
    expect(
      recorded(points, 'pixhook.handler.duration', {
        'pixhook.event.type': 'image.created',
        'code.function.name': 'resizeImage',
        'pixhook.handler.outcome': 'ok',
        'pixhook.queued': false,
      }),
    ).toBeGreaterThanOrEqual(1);
    // Every run that started has ended.
    expect(counted(points, 'pixhook.handler.active')).toBe(0);
  });

  it('a failing handler: status ERROR without a message, error.type its class, no exception event, nothing of what it threw', async () => {
    const { client, errors } = await mount({}, (webhooks) => {
      webhooks.on('api_key.revoked', async function revokeKey() {
        throw new RangeError('db password hunter2 rejected');
      });
    });
    const request = delivery(createTestEvent('api_key.revoked'));
    expect((await client.send(request)).status).toBe(500);
    expect(errors).toEqual(['HANDLER_FAILED']);
    const spans = await traceOfDelivery(request.headers['x-service-delivery'], 2);
    const handler = spans.get('handler revokeKey');
    expect(handler?.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(handler?.attributes['error.type']).toBe('RangeError');
    expect(handler?.events).toEqual([]);
    expect(
      JSON.stringify([...spans.values()].map((span) => [span.attributes, span.events, span.status])),
    ).not.toContain('hunter2');
    const points = await otel.collect();
    expect(
      recorded(points, 'pixhook.handler.duration', {
        'pixhook.event.type': 'api_key.revoked',
        'code.function.name': 'revokeKey',
        'pixhook.handler.outcome': 'error',
        'pixhook.queued': false,
      }),
    ).toBe(1);
  });
});

/** EventTransactions on a Map, written in the test: the seam's contract, without a database. */
function mapTransactions(): EventTransactions<{ writes: string[] }> & { committed: Set<string> } {
  const committed = new Set<string>();
  const open = new Set<string>();
  return {
    committed,
    async begin(eventId: string): Promise<BegunEvent<{ writes: string[] }>> {
      if (committed.has(eventId)) return { state: 'completed' };
      if (open.has(eventId)) return { state: 'in-flight' };
      open.add(eventId);
      return {
        state: 'claimed',
        transaction: { writes: [] },
        commit: async () => {
          open.delete(eventId);
          committed.add(eventId);
        },
        rollback: async () => {
          open.delete(eventId);
        },
      };
    },
  };
}

describe('transactional mode', () => {
  it('a transaction span from BEGIN to COMMIT under the receive span, with the handler beside it; a failing handler rolls it back', async () => {
    const transactions = mapTransactions();
    const { client } = await mount({ transactions }, (webhooks) => {
      webhooks.on('image.created', function saveImage() {});
      webhooks.on('image.deleted', function deleteImage() {
        throw new Error('constraint violated');
      });
    });
    const ok = delivery(createTestEvent('image.created'));
    expect((await client.send(ok)).status).toBe(200);
    const spans = await traceOfDelivery(ok.headers['x-service-delivery'], 3);
    const receive = spans.get('receive image.created');
    const transaction = spans.get('transaction image.created');
    expect(receive?.attributes['pixhook.mode']).toBe('transactional');
    expect(parentOf(transaction)).toBe(idOf(receive));
    expect(transaction?.attributes).toMatchObject({ 'pixhook.transaction.result': 'committed' });
    expect(transaction?.status.code).toBe(SpanStatusCode.UNSET);
    expect(parentOf(spans.get('handler saveImage'))).toBe(idOf(receive));

    const failing = delivery(createTestEvent('image.deleted'));
    expect((await client.send(failing)).status).toBe(500);
    const failed = await traceOfDelivery(failing.headers['x-service-delivery'], 3);
    expect(failed.get('transaction image.deleted')?.attributes['pixhook.transaction.result']).toBe('rolled-back');
    expect(failed.get('handler deleteImage')?.status.code).toBe(SpanStatusCode.ERROR);
  });
});

/** A queue in memory, written in the test. */
class ArrayQueue implements WebhookQueue {
  readonly engine = 'memory';
  readonly queueName = 'memory-webhooks';
  readonly stored: QueuedDelivery[] = [];
  async enqueue(queued: QueuedDelivery): Promise<void> {
    // Stored as a queue would: serialised.
    this.stored.push(JSON.parse(JSON.stringify(queued)) as QueuedDelivery);
  }
}

const run = (attempt: number): QueuedRun => ({
  engine: 'memory',
  jobId: 'job-1',
  attempt,
  maxAttempts: 3,
  queuedAt: Date.now(),
});

describe('queued mode', () => {
  it('a send span under the receive span puts its trace context in the job; the worker’s process span continues that trace, linked, with the handler under it', async () => {
    const queue = new ArrayQueue();
    const { client } = await mount({ queue });
    const request = delivery(createTestEvent('image.created'));
    expect((await client.send(request)).status).toBe(202);
    const received = await traceOfDelivery(request.headers['x-service-delivery'], 2);
    const receive = received.get('receive image.created');
    const send = received.get('send memory-webhooks');
    expect(send?.kind).toBe(SpanKind.PRODUCER);
    expect(parentOf(send)).toBe(idOf(receive));
    expect(send?.attributes).toMatchObject({
      'messaging.system': 'memory',
      'messaging.destination.name': 'memory-webhooks',
      'messaging.operation.type': 'send',
      'messaging.message.id': receive?.attributes['pixhook.event.id'],
    });
    const stored = queue.stored[0] as QueuedDelivery;
    const traceId = receive?.spanContext().traceId;
    expect(stored.traceContext?.traceparent).toBe(`00-${traceId}-${idOf(send)}-01`);
    let points = await otel.collect();
    expect(
      recorded(points, 'pixhook.enqueue.duration', { 'messaging.system': 'memory', 'pixhook.outcome': 'queued' }),
    ).toBe(1);

    // The worker: another Webhooks, as in another process, runs the stored job.
    const worker = new Webhooks({ secret: SECRET });
    worker.onError(() => {});
    let fail = true;
    worker.on('image.created', function processImage() {
      trace.getTracer('app').startSpan('app: in the worker').end();
      if (fail) throw new TypeError('first run fails');
    });
    await expect(worker.process(stored, run(1))).rejects.toThrow('first run fails');
    fail = false;
    await worker.process(stored, run(2));
    const all = await spansOf((span) => span.spanContext().traceId === traceId, 2 + 2 * 3);
    const processes = all.filter((span) => span.name === 'process memory');
    expect(processes).toHaveLength(2);
    for (const [i, process] of processes.entries()) {
      expect(process.kind).toBe(SpanKind.CONSUMER);
      expect(parentOf(process)).toBe(idOf(send));
      expect(process.links.map((link) => link.context.spanId)).toEqual([idOf(send)]);
      expect(process.attributes).toMatchObject({
        'messaging.system': 'memory',
        'messaging.operation.type': 'process',
        'messaging.message.id': receive?.attributes['pixhook.event.id'],
        'pixhook.job.attempt': i + 1,
        'pixhook.job.max_attempts': 3,
      });
      const handler = all.find((span) => span.name === 'handler processImage' && parentOf(span) === idOf(process));
      expect(handler).toBeDefined();
      expect(all.find((span) => span.name === 'app: in the worker' && parentOf(span) === idOf(handler))).toBeDefined();
    }
    expect(processes[0]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(processes[0]?.attributes['error.type']).toBe('HANDLER_FAILED');
    expect(processes[1]?.status.code).toBe(SpanStatusCode.UNSET);
    points = await otel.collect();
    const job = { 'messaging.system': 'memory', 'pixhook.event.type': 'image.created' };
    expect(recorded(points, 'pixhook.job.duration', { ...job, 'pixhook.job.outcome': 'error' })).toBe(1);
    expect(recorded(points, 'pixhook.job.duration', { ...job, 'pixhook.job.outcome': 'ok' })).toBe(1);
    expect(
      recorded(points, 'pixhook.handler.duration', {
        'pixhook.event.type': 'image.created',
        'code.function.name': 'processImage',
        'pixhook.handler.outcome': 'ok',
        'pixhook.queued': true,
      }),
    ).toBe(1);
  });

  it('a job whose stored trace context is garbage starts a trace of its own, without a link', async () => {
    const worker = new Webhooks({ secret: SECRET });
    worker.on('image.created', () => {});
    const event = createTestEvent('image.created');
    await worker.process(
      { event, deliveryId: 'd-garbage', timestamp: 1, traceContext: { traceparent: '00-zz-not-a-trace-01' } },
      run(1),
    );
    const [process] = await spansOf(
      (span) => span.name === 'process memory' && span.attributes['pixhook.event.id'] === event.id,
      1,
    );
    expect(process?.parentSpanContext).toBeUndefined();
    expect(process?.links).toEqual([]);
  });
});

describe('metrics of verification', () => {
  it('pixhook.secret.matches counts the index of the secret that matched (rotation), pixhook.verify.duration whether it verified', async () => {
    const { client } = await mount({ secret: [SECRET, OLD_SECRET] });
    const before = await otel.collect();
    for (const secret of [OLD_SECRET, OLD_SECRET, SECRET]) {
      expect((await client.send(delivery(undefined, { secret }))).status).toBe(200);
    }
    expect((await client.send(delivery(undefined, { secret: 'whsec_someone_else' }))).status).toBe(400);
    const after = await otel.collect();
    const delta = (name: string, attributes: Record<string, unknown>, measure = counted) =>
      measure(after, name, attributes as never) - measure(before, name, attributes as never);
    expect(delta('pixhook.secret.matches', { 'pixhook.secret.index': 1 })).toBe(2);
    expect(delta('pixhook.secret.matches', { 'pixhook.secret.index': 0 })).toBe(1);
    expect(delta('pixhook.verify.duration', { 'pixhook.verified': true }, recorded)).toBe(3);
    expect(delta('pixhook.verify.duration', { 'pixhook.verified': false }, recorded)).toBe(1);
  });

  it('the duration histograms have buckets in seconds from 0.1 ms to 60 s without any view', async () => {
    const { client } = await mount({});
    expect((await client.send(delivery())).status).toBe(200);
    const points = await otel.collect();
    const verify = points.find((point) => point.name === 'pixhook.verify.duration');
    const value = verify?.value as { buckets: { boundaries: number[] } } | undefined;
    expect(value?.buckets.boundaries).toEqual([...DURATION_BUCKETS]);
  });

  it('the last-chance alarm: a failure answered to the last attempt counts in pixhook.endpoint.at_risk and marks the receive span', async () => {
    const t = 1_800_000_000;
    const logged: string[] = [];
    const logger = { error: (_fields: object, message: string) => void logged.push(message), warn: () => {} };
    const { client, errors } = await mount({ now: () => t * 1000, logger }, (webhooks) => {
      webhooks.on('image.deleted', function deleteImage() {
        throw new Error('down');
      });
    });
    const created = t - 117_360;
    const { attempt } = estimateAttempt(created, t);
    expect(attempt).toBe(SERVICE_ATTEMPTS);
    const before = await otel.collect();
    const failing = delivery(createTestEvent('image.deleted', undefined, { created }), { timestamp: t });
    expect((await client.send(failing)).status).toBe(500);
    // The same attempt answered 200 raises nothing.
    expect(
      (await client.send(delivery(createTestEvent('image.created', undefined, { created }), { timestamp: t }))).status,
    ).toBe(200);
    // An early attempt that fails raises nothing either.
    const early = delivery(createTestEvent('image.deleted', undefined, { created: t - 60 }), { timestamp: t });
    expect((await client.send(early)).status).toBe(500);
    expect(errors).toEqual(['HANDLER_FAILED', 'ENDPOINT_AT_RISK', 'HANDLER_FAILED']);
    // Core's error-level line (to the logger given here, instead of the console).
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('ENDPOINT_AT_RISK');
    const after = await otel.collect();
    const atRisk = {
      'pixhook.event.type': 'image.deleted',
      'error.type': 'HANDLER_FAILED',
      'pixhook.delivery.attempt': SERVICE_ATTEMPTS,
    };
    expect(
      counted(after, 'pixhook.endpoint.at_risk', atRisk) - counted(before, 'pixhook.endpoint.at_risk', atRisk),
    ).toBe(1);
    expect(counted(after, 'pixhook.endpoint.at_risk') - counted(before, 'pixhook.endpoint.at_risk')).toBe(1);
    const spans = await traceOfDelivery(failing.headers['x-service-delivery'], 2);
    const receive = spans.get('receive image.deleted');
    expect(receive?.attributes).toMatchObject({
      'pixhook.last_chance': true,
      'pixhook.delivery.attempt': SERVICE_ATTEMPTS,
    });
    expect(receive?.status.code).toBe(SpanStatusCode.ERROR);
    const earlySpans = await traceOfDelivery(early.headers['x-service-delivery'], 2);
    expect(earlySpans.get('receive image.deleted')?.attributes).not.toHaveProperty('pixhook.last_chance');
  });
});

describe('what is never recorded', () => {
  it('no secret, signature or body byte in any exported span or metric', async () => {
    const MARKER = 'body-marker-7f3e9a1c';
    otel.exporter.reset();
    const queue = new ArrayQueue();
    const inline = await mount({ secret: [SECRET, OLD_SECRET] }, (webhooks) => {
      webhooks.on('image.created', function echo(event) {
        throw new Error(`failed on ${JSON.stringify(event)} ${MARKER}`);
      });
    });
    const queued = await mount({ queue, secret: SECRET });
    const requests = [
      delivery(createTestEvent('image.created', { note: MARKER })),
      delivery(createTestEvent('image.deleted', { note: MARKER }), { secret: OLD_SECRET }),
      delivery(createTestEvent('image.deleted', { note: MARKER }), { secret: 'whsec_someone_else' }),
      signedBody(`{"note":"${MARKER}"`),
      delivery(createTestEvent('quota.warned', { note: MARKER }), { headers: { 'x-service-event': MARKER } }),
    ];
    for (const request of requests) await inline.client.send(request);
    const queuedRequest = delivery(createTestEvent('image.created', { note: MARKER }));
    expect((await queued.client.send(queuedRequest)).status).toBe(202);
    const worker = new Webhooks({ secret: SECRET });
    worker.onError(() => {});
    worker.on('image.created', () => {
      throw new Error(MARKER);
    });
    await expect(worker.process(queue.stored[0] as QueuedDelivery, run(1))).rejects.toThrow(MARKER);

    const spans = await vi.waitFor(
      () => {
        const ended = otel.spans();
        expect(ended.filter((span) => span.name.startsWith('receive'))).toHaveLength(requests.length + 1);
        expect(ended.filter((span) => span.name.startsWith('process'))).toHaveLength(1);
        return ended;
      },
      { timeout: 10_000, interval: 10 },
    );
    const exported = JSON.stringify({
      spans: spans.map((span) => ({
        name: span.name,
        attributes: span.attributes,
        events: span.events,
        links: span.links,
        status: span.status,
      })),
      metrics: await otel.collect(),
    });
    const signatures = [...requests, queuedRequest].map((request) => request.headers['x-service-signature'] as string);
    const secrets = [SECRET, OLD_SECRET, 'whsec_someone_else'];
    for (const forbidden of [
      ...secrets,
      ...signatures,
      ...signatures.map((header) => header.split('v1=')[1] as string),
      MARKER,
    ]) {
      expect(exported).not.toContain(forbidden);
    }
    // The scan saw the deliveries themselves.
    expect(exported).toContain(requests[0]?.headers['x-service-delivery']);
  });
});

describe('untrusted text', () => {
  it('the unsigned delivery id is cut to 128 characters; a request that did not verify carries nothing else of what it sent', async () => {
    const { client } = await mount();
    const long = `d${'x'.repeat(299)}`;
    const request = delivery(createTestEvent('image.created'), {
      secret: 'whsec_someone_else',
      headers: { 'x-service-delivery': long },
    });
    expect((await client.send(request)).status).toBe(400);
    const [receive] = await spansOf(
      (span) => span.name === 'receive webhook' && String(span.attributes['pixhook.delivery.id']).startsWith('dxxx'),
      1,
    );
    expect(receive?.attributes['pixhook.delivery.id']).toBe(long.slice(0, 128));
    expect(Object.keys(receive?.attributes ?? {}).sort()).toEqual(
      [
        'error.type',
        'http.response.status_code',
        'messaging.operation.type',
        'messaging.system',
        'pixhook.delivery.id',
        'pixhook.mode',
        'pixhook.outcome',
        'pixhook.verify.duration',
      ].sort(),
    );
  });
});

describe('enable and disable', () => {
  it('disable() stops spans and metrics, the answers stay the same; enable() resumes', async () => {
    const { client } = await mount({}, (webhooks) => {
      webhooks.on('image.created', function handle() {});
    });
    otel.instrumentation.disable();
    try {
      otel.exporter.reset();
      const before = await otel.collect();
      const off = delivery();
      const answer = await client.send(off);
      expect({ status: answer.status, json: answer.json }).toEqual({ status: 200, json: { received: true } });
      expect((await client.send({ ...delivery(), method: 'GET', body: undefined })).status).toBe(405);
      const after = await otel.collect();
      expect(counted(after, 'pixhook.deliveries')).toBe(counted(before, 'pixhook.deliveries'));
      expect(otel.spans()).toEqual([]);
    } finally {
      otel.instrumentation.enable();
    }
    const on = delivery();
    expect((await client.send(on)).status).toBe(200);
    await traceOfDelivery(on.headers['x-service-delivery'], 2);
  });
});
