/**
 * With @opentelemetry/instrumentation-http on, the receive span is a child of the HTTP server span
 * it creates: a real Express 5 app on a real socket.
 */
import { SpanKind } from '@opentelemetry/api';
import { Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS } from '@pixhook/test-helpers/adapters';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { afterAll, expect, it, vi } from 'vitest';
import { startHttpInstrumentation, startOtel } from './helpers/otel.js';

const otel = startOtel();
const http = startHttpInstrumentation(otel);
afterAll(async () => {
  http.disable();
  await otel.shutdown();
});

it('the receive span is a child of the HTTP server span (same trace), and the handler span its child', async () => {
  const express = ADAPTERS.find((adapter) => adapter.name === 'express@5');
  if (!express) throw new Error('the test helpers no longer list express@5');
  const webhooks = new Webhooks({ secret: SECRET });
  webhooks.on('image.created', function storeImage() {});
  const client = await express.create(webhooks);
  try {
    const request = delivery(createTestEvent('image.created'));
    expect((await client.send(request)).status).toBe(200);
    const { server, receive, handler } = await vi.waitFor(
      () => {
        const spans = otel.spans();
        const receive = spans.find(
          (span) =>
            span.name.startsWith('receive') &&
            span.attributes['pixhook.delivery.id'] === request.headers['x-service-delivery'],
        );
        const server = spans.find(
          (span) => span.kind === SpanKind.SERVER && span.spanContext().traceId === receive?.spanContext().traceId,
        );
        const handler = spans.find((span) => span.name === 'handler storeImage');
        expect(receive).toBeDefined();
        expect(server).toBeDefined();
        expect(handler).toBeDefined();
        return { server, receive, handler };
      },
      { timeout: 10_000, interval: 10 },
    );
    expect(server?.instrumentationScope.name).toBe('@opentelemetry/instrumentation-http');
    expect(server?.attributes['http.response.status_code'] ?? server?.attributes['http.status_code']).toBe(200);
    expect(receive?.spanContext().traceId).toBe(server?.spanContext().traceId);
    expect(receive?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(handler?.parentSpanContext?.spanId).toBe(receive?.spanContext().spanId);
  } finally {
    await client.close();
  }
});
