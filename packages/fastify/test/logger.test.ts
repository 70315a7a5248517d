// Fastify's own pino logger as pixhook's `logger`: the lines arrive as pino JSON, with the cause
// serialized by pino's `err` serializer, and no secret or signature in them.
import { Writable } from 'node:stream';
import { Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import pixhook from '@pixhook/fastify';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

describe('logger: fastify.log', () => {
  it("writes an unheard handler failure as one pino line at error level, with the cause's stack", async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const app = Fastify({ logger: { level: 'warn', stream } });
    const webhooks = new Webhooks({ secret: SECRET, logger: app.log });
    webhooks.on('image.created', () => {
      throw new TypeError('the image index is down');
    });
    await app.register(pixhook, { webhooks });
    const event = createTestEvent('image.created', {}, { id: 'evt_pino_1' });
    const request = delivery(event);
    const answer = await app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: request.headers,
      payload: request.body,
    });
    await app.close();
    expect(answer.statusCode).toBe(500);
    const ours = lines.filter((line) => line.code !== undefined);
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({
      level: 50,
      code: 'HANDLER_FAILED',
      status: 500,
      eventType: 'image.created',
      eventId: 'evt_pino_1',
      err: { type: 'TypeError', message: 'the image index is down' },
    });
    expect(String(ours[0]?.msg)).toMatch(/^pixhook: HANDLER_FAILED: A handler for image\.created failed/);
    expect(String((ours[0]?.err as { stack?: string } | undefined)?.stack)).toContain(
      'TypeError: the image index is down',
    );
    const text = JSON.stringify(lines);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(request.headers['x-service-signature']);
  });
});
