/**
 * The instrumentation loaded and enabled with no SDK registered (OpenTelemetry's no-op providers):
 * every delivery is answered exactly as without it, and nothing is written into the queued job.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { CHANNELS, type QueuedDelivery, Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type TestRequest } from '@pixhook/test-helpers/adapters';
import { delivery, SECRET, signedBody } from '@pixhook/test-helpers/deliveries';
import { describe, expect, it } from 'vitest';
import { PixhookInstrumentation } from '../src/index.js';

const instrumentation = new PixhookInstrumentation();
const subscribed = () => diagnostics_channel.channel(`tracing:${CHANNELS.delivery}:start`).hasSubscribers;

/** The same deliveries each time (events made once), answered by a fresh app. */
const image = createTestEvent('image.created');
const failing = createTestEvent('api_key.revoked');
const queuedEvent = createTestEvent('image.deleted');
const requests: TestRequest[] = [
  delivery(image),
  delivery(image),
  delivery(failing),
  delivery(undefined, { secret: 'whsec_someone_else' }),
  signedBody('not json'),
  { ...delivery(), method: 'GET', body: undefined },
];

describe.each(ADAPTERS.filter((adapter) => ['express@5', 'fastify@5', 'fetch'].includes(adapter.name)))(
  'no SDK registered: $name',
  (adapter) => {
    async function answers() {
      const stored: QueuedDelivery[] = [];
      const webhooks = new Webhooks({ secret: SECRET });
      const runs: string[] = [];
      webhooks.onError(() => {});
      webhooks.on('image.created', (event, context) => void runs.push(`${event.id} ${context.deliveryId.length}`));
      webhooks.on('api_key.revoked', () => {
        throw new TypeError('no');
      });
      const queued = new Webhooks({
        secret: SECRET,
        queue: { enqueue: async (item: QueuedDelivery) => void stored.push(item) },
      });
      const client = await adapter.create(webhooks);
      const queuedClient = await adapter.create(queued);
      try {
        const results: unknown[] = [];
        for (const request of requests) {
          const { status, json } = await client.send(request);
          results.push({ status, json });
        }
        const { status, json } = await queuedClient.send(delivery(queuedEvent));
        results.push({ status, json });
        return { results, runs: runs.length, stored: stored.map((item) => Object.keys(item).sort()) };
      } finally {
        await Promise.all([client.close(), queuedClient.close()]);
      }
    }

    it('answers the same with the instrumentation enabled as without it', async () => {
      instrumentation.enable();
      expect(subscribed()).toBe(true);
      const traced = await answers();
      instrumentation.disable();
      expect(subscribed()).toBe(false);
      const plain = await answers();
      expect(traced).toEqual(plain);
      expect(traced.results.map((result) => (result as { status: number }).status)).toEqual([
        200, 200, 500, 400, 400, 405, 202,
      ]);
      expect(traced.runs).toBe(1);
      // No propagator registered: no trace context is stored with the job (`secret` is which one
      // matched, its index, never its value).
      expect(traced.stored).toEqual([['deliveryId', 'event', 'secret', 'timestamp']]);
    });
  },
);

describe('a tracer and a meter that throw', () => {
  it('change no answer and throw nothing out of a subscriber', async () => {
    const express = ADAPTERS.find((adapter) => adapter.name === 'express@5');
    if (!express) throw new Error('the test helpers no longer list express@5');
    const broken = new PixhookInstrumentation();
    const fail = () => {
      throw new Error('broken SDK');
    };
    broken.setTracerProvider({ getTracer: () => ({ startSpan: fail, startActiveSpan: fail }) } as never);
    broken.setMeterProvider({
      getMeter: () => ({
        createCounter: () => ({ add: fail }),
        createUpDownCounter: () => ({ add: fail }),
        createHistogram: () => ({ record: fail }),
        createObservableGauge: () => ({ addCallback() {}, removeCallback() {} }),
        createObservableCounter: () => ({ addCallback: fail, removeCallback() {} }),
        createObservableUpDownCounter: () => ({ addCallback: fail, removeCallback() {} }),
      }),
    } as never);
    broken.enable();
    try {
      const webhooks = new Webhooks({ secret: SECRET });
      webhooks.onError(() => {});
      const seen: string[] = [];
      webhooks.on('image.created', (event) => void seen.push(event.id));
      webhooks.on('api_key.revoked', () => {
        throw new TypeError('no');
      });
      const client = await express.create(webhooks);
      try {
        const event = createTestEvent('image.created');
        expect((await client.send(delivery(event))).status).toBe(200);
        expect((await client.send(delivery(event))).json).toEqual({ received: true, duplicate: true });
        expect((await client.send(delivery(createTestEvent('api_key.revoked')))).status).toBe(500);
        expect((await client.send(delivery(undefined, { secret: 'whsec_someone_else' }))).status).toBe(400);
        expect(seen).toEqual([event.id]);
      } finally {
        await client.close();
      }
    } finally {
      broken.disable();
    }
  });
});
