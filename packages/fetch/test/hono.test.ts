/**
 * A real Hono app routing to the fetch handler, as the README shows it: `app.post(path, (c) =>
 * handler(c.req.raw))`, or `app.mount(path, handler)`. The app's other routes keep parsing JSON.
 */
import { type HandlerContext, Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { createFetchHandler } from '@pixhook/fetch';
import { delivery, nowSeconds, SECRET } from '@pixhook/test-helpers/deliveries';
import { fromResponse } from '@pixhook/test-helpers/fetch-client';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';

function honoApp() {
  const webhooks = new Webhooks<Record<string, object>, Request>({ secret: SECRET, maxBodyBytes: 4096 });
  const seen: { id: string; context: HandlerContext<Request> }[] = [];
  webhooks.onAny((event, context) => void seen.push({ id: event.id, context }));
  // Told here rather than logged: the failures these tests cause on purpose stay out of the output.
  const errors: string[] = [];
  webhooks.onError((error) => void errors.push(error.code));
  const handler = createFetchHandler(webhooks);
  const raws: Request[] = [];

  const app = new Hono();
  app.post('/webhooks', (c) => {
    raws.push(c.req.raw);
    return handler(c.req.raw);
  });
  app.mount('/mounted/webhooks', handler);
  app.post('/api/echo', async (c) => c.json({ echoed: await c.req.json() }));
  // A route that reads the body before pixhook, as a validator middleware would.
  app.post('/parsed/webhooks', async (c) => {
    await c.req.json();
    return handler(c.req.raw);
  });
  const send = async (path: string, request: { method?: string; headers: Record<string, string>; body?: string }) =>
    fromResponse(
      await app.request(path, { method: request.method ?? 'POST', headers: request.headers, body: request.body }),
    );
  return { app, send, seen, raws, errors };
}

const codeOf = (json: unknown) => (json as { error?: { code?: string } })?.error?.code;

describe('@pixhook/fetch in a Hono app', () => {
  it('a valid delivery → 200; the handler gets the Request Hono received as context.request', async () => {
    const { send, seen, raws } = honoApp();
    const request = delivery();
    const res = await send('/webhooks', request);
    expect([res.status, res.json]).toEqual([200, { received: true }]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.context.request).toBe(raws[0]);
    expect(seen[0]?.context.deliveryId).toBe(request.headers['x-service-delivery']);
  });

  it('bad signature, stale timestamp, duplicate and 413 answer as the contract says', async () => {
    const { send, seen } = honoApp();
    const event = createTestEvent('image.deleted');
    const big = delivery(createTestEvent('image.created', { blob: 'x'.repeat(8192) }));
    const answers = [
      await send('/webhooks', delivery(undefined, { secret: 'whsec_someone_else' })),
      await send('/webhooks', delivery(undefined, { timestamp: nowSeconds() - 301 })),
      await send('/webhooks', delivery(event)),
      await send('/webhooks', delivery(event)),
      await send('/webhooks', { ...big, headers: { ...big.headers, 'content-length': String(big.body.length) } }),
    ].map((res) => [res.status, codeOf(res.json) ?? res.json]);
    expect(answers).toEqual([
      [400, 'SIGNATURE_MISMATCH'],
      [400, 'TIMESTAMP_OUT_OF_TOLERANCE'],
      [200, { received: true }],
      [200, { received: true, duplicate: true }],
      [413, 'PAYLOAD_TOO_LARGE'],
    ]);
    expect(seen.map((s) => s.id)).toEqual([event.id]);
  });

  it('app.mount(path, handler) works too, and answers 405 to other methods', async () => {
    const { send, seen } = honoApp();
    expect((await send('/mounted/webhooks', delivery())).status).toBe(200);
    const get = await send('/mounted/webhooks', { method: 'GET', headers: {} });
    expect([get.status, codeOf(get.json), get.headers.allow]).toEqual([405, 'METHOD_NOT_ALLOWED', 'POST']);
    expect(seen).toHaveLength(1);
  });

  it("the app's other routes keep parsing JSON", async () => {
    const { send } = honoApp();
    const res = await send('/api/echo', { headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect([res.status, res.json]).toEqual([200, { echoed: { a: 1 } }]);
  });

  it('a route that parsed the body first → 500 RAW_BODY_UNAVAILABLE, handlers not run', async () => {
    const { send, seen, errors } = honoApp();
    const res = await send('/parsed/webhooks', delivery());
    expect([res.status, codeOf(res.json)]).toEqual([500, 'RAW_BODY_UNAVAILABLE']);
    expect(seen).toHaveLength(0);
    expect(errors).toEqual(['RAW_BODY_UNAVAILABLE']);
  });
});
