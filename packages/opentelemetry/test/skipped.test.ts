/**
 * Skipped handlers: one the ordering guard skipped (a late older event) and one its schema refused.
 * Their spans say why (`pixhook.handler.skipped`) and `pixhook.handler.skipped` counts them by
 * reason, event type and handler: the real SDK, deliveries over real HTTP to an Express 5 app.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { type StandardSchemaV1, Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type Client } from '@pixhook/test-helpers/adapters';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
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

async function mount(setup: (webhooks: Webhooks) => void, ordering = true) {
  const webhooks = new Webhooks({
    secret: SECRET,
    ...(ordering ? { ordering: { key: (event) => `image:${event.data.object.id}` } } : {}),
  });
  const errors: string[] = [];
  webhooks.onError((error) => void errors.push(error.code));
  setup(webhooks);
  const client = await (express as NonNullable<typeof express>).create(webhooks);
  clients.push(client);
  return { client, errors };
}

/** The ended span of the handler `name` for the event `eventId`, once it has ended (generous ceiling). */
async function handlerSpan(name: string, eventId: string): Promise<ReadableSpan> {
  return vi.waitFor(
    () => {
      const found = otel
        .spans()
        .find((span) => span.name === `handler ${name}` && span.attributes['pixhook.event.id'] === eventId);
      expect(found).toBeDefined();
      return found as ReadableSpan;
    },
    { timeout: 10_000, interval: 10 },
  );
}

/** A Standard Schema v1 validator written here: `bytes` must be a number. */
const needsBytes: StandardSchemaV1<Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      typeof (value as { bytes?: unknown }).bytes === 'number'
        ? { value: value as Record<string, unknown> }
        : { issues: [{ message: 'bytes must be a number', path: ['bytes'] }] },
  },
};

describe('skipped handlers', () => {
  it('stale: the handler span says so and is no error; counted by reason, event type and handler; no run recorded', async () => {
    const applied: string[] = [];
    const { client, errors } = await mount((webhooks) => {
      webhooks.on(['image.created', 'image.deleted'], function applyImage(event) {
        applied.push(event.id);
      });
    });
    const image = { id: 'img_stale_1' };
    const deleted = createTestEvent('image.deleted', image, { created: 1_700_000_060 });
    const created = createTestEvent('image.created', image, { created: 1_700_000_000 });
    expect((await client.send(delivery(deleted))).status).toBe(200);
    expect((await client.send(delivery(created))).status).toBe(200);
    expect(applied).toEqual([deleted.id]);
    expect(errors).toEqual(['STALE_EVENT']);

    const ran = await handlerSpan('applyImage', deleted.id);
    expect(ran.attributes['pixhook.handler.skipped']).toBeUndefined();
    const skipped = await handlerSpan('applyImage', created.id);
    expect(skipped.attributes).toMatchObject({
      'pixhook.handler.skipped': 'stale',
      'code.function.name': 'applyImage',
      'pixhook.event.type': 'image.created',
    });
    expect(skipped.status.code).toBe(SpanStatusCode.UNSET);
    expect(skipped.attributes['error.type']).toBeUndefined();
    // A child of its delivery's receive span, as a handler that ran is.
    const receive = otel
      .spans()
      .find((span) => span.name === 'receive image.created' && span.attributes['pixhook.event.id'] === created.id);
    expect(skipped.parentSpanContext?.spanId).toBe(receive?.spanContext().spanId);

    const points = await otel.collect();
    expect(
      counted(points, 'pixhook.handler.skipped', {
        'pixhook.skip.reason': 'stale',
        'pixhook.event.type': 'image.created',
        'code.function.name': 'applyImage',
      }),
    ).toBe(1);
    expect(counted(points, 'pixhook.handler.skipped', { 'pixhook.skip.reason': 'schema' })).toBe(0);
    expect(points.find((point) => point.name === 'pixhook.handler.skipped')?.unit).toBe('{run}');
    // The handler ran once: one duration, and nothing left active.
    const runs = { 'code.function.name': 'applyImage', 'pixhook.handler.outcome': 'ok', 'pixhook.queued': false };
    expect(recorded(points, 'pixhook.handler.duration', { ...runs, 'pixhook.event.type': 'image.deleted' })).toBe(1);
    expect(recorded(points, 'pixhook.handler.duration', { ...runs, 'pixhook.event.type': 'image.created' })).toBe(0);
    expect(counted(points, 'pixhook.handler.active')).toBe(0);
  });

  it('schema: the refused handler is counted with reason schema, its span an error typed SCHEMA_MISMATCH; the others run', async () => {
    const others: string[] = [];
    const { client, errors } = await mount((webhooks) => {
      webhooks.on('quota.warned', { schema: needsBytes }, function chargeBytes() {});
      webhooks.on('quota.warned', function notifyBilling(event) {
        others.push(event.id);
      });
    }, false);
    const refused = createTestEvent('quota.warned', { bytes: 'many' });
    const res = await client.send(delivery(refused));
    expect([res.status, res.json]).toEqual([200, { received: true }]);
    expect(errors).toEqual(['SCHEMA_MISMATCH']);
    expect(others).toEqual([refused.id]);

    const span = await handlerSpan('chargeBytes', refused.id);
    expect(span.attributes).toMatchObject({ 'pixhook.handler.skipped': 'schema', 'error.type': 'SCHEMA_MISMATCH' });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(JSON.stringify([span.attributes, span.events, span.status])).not.toContain('many');
    const ran = await handlerSpan('notifyBilling', refused.id);
    expect(ran.attributes['pixhook.handler.skipped']).toBeUndefined();

    const points = await otel.collect();
    expect(
      counted(points, 'pixhook.handler.skipped', {
        'pixhook.skip.reason': 'schema',
        'pixhook.event.type': 'quota.warned',
        'code.function.name': 'chargeBytes',
      }),
    ).toBe(1);
    // A handler that threw is a failure, not a skip.
    const { client: failing } = await mount((webhooks) => {
      webhooks.on('quota.warned', function throwsPlain() {
        throw new TypeError('not a skip');
      });
    }, false);
    const thrown = createTestEvent('quota.warned');
    expect((await failing.send(delivery(thrown))).status).toBe(500);
    const failed = await handlerSpan('throwsPlain', thrown.id);
    expect(failed.attributes['pixhook.handler.skipped']).toBeUndefined();
    expect(failed.attributes['error.type']).toBe('TypeError');
    expect(
      counted(await otel.collect(), 'pixhook.handler.skipped', {
        'pixhook.skip.reason': 'schema',
        'pixhook.event.type': 'quota.warned',
        'code.function.name': 'throwsPlain',
      }),
    ).toBe(0);
  });
});
