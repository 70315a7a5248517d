import { createTestEvent } from '@pixhook/core/testing';
import { httpSend, type TestRequest, type TestResponse } from '@pixhook/test-helpers/adapters';
import { delivery, nowSeconds } from '@pixhook/test-helpers/deliveries';
import { expect, it } from 'vitest';
import { sendUnfinishedBody } from './chunked-send.js';

/** The app in test/fixtures/app.ts, running in some runtime and reached over HTTP. */
export interface RuntimeApp {
  send(request: TestRequest): Promise<TestResponse>;
  /** POSTs `size` bytes without Content-Length and never ends the body. */
  sendUnfinished(headers: Record<string, string>, size: number): Promise<TestResponse>;
  state(): Promise<{ runs: { id: string; deliveryId: string; requestIsRequest: boolean }[]; nodeCrypto: boolean }>;
}

/** Sends over HTTP to the app listening on 127.0.0.1:`port`. */
export function runtimeClient(port: number): RuntimeApp {
  return {
    send: (request) => httpSend(port, request),
    sendUnfinished: (headers, size) => sendUnfinishedBody(port, '/webhooks', headers, size),
    state: async () => JSON.parse((await httpSend(port, { method: 'GET', path: '/state' })).text),
  };
}

/** maxBodyBytes the runtimes' app is started with. */
export const RUNTIME_MAX_BODY_BYTES = 64 * 1024;

const codeOf = (res: TestResponse) => (res.json as { error?: { code?: string } } | undefined)?.error?.code;

/**
 * Representative rows of the contract, for a real runtime: valid, bad signature, stale
 * timestamp, duplicate, 413 (declared, and streamed without an end), 405. `app()` is read when the tests run.
 */
export function representativeRows(app: () => RuntimeApp): void {
  it('a valid delivery → 200, the handler runs once with the Request', async () => {
    const request = delivery(createTestEvent('image.created'));
    const res = await app().send(request);
    expect([res.status, res.json]).toEqual([200, { received: true }]);
    const { runs } = await app().state();
    expect(runs.filter((run) => run.deliveryId === request.headers['x-service-delivery'])).toEqual([
      expect.objectContaining({ requestIsRequest: true }),
    ]);
  });

  it('a bad signature → 400 SIGNATURE_MISMATCH, handler not run', async () => {
    const request = delivery(undefined, { secret: 'whsec_someone_else' });
    const res = await app().send(request);
    expect([res.status, codeOf(res)]).toEqual([400, 'SIGNATURE_MISMATCH']);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { runs } = await app().state();
    expect(runs.some((run) => run.deliveryId === request.headers['x-service-delivery'])).toBe(false);
  });

  it('a stale timestamp → 400 TIMESTAMP_OUT_OF_TOLERANCE', async () => {
    const res = await app().send(delivery(undefined, { timestamp: nowSeconds() - 301 }));
    expect([res.status, codeOf(res)]).toEqual([400, 'TIMESTAMP_OUT_OF_TOLERANCE']);
  });

  it('the same event twice → 200 then 200 duplicate, handler run once', async () => {
    const event = createTestEvent('quota.warned');
    const first = await app().send(delivery(event));
    const second = await app().send(delivery(event));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.json).toEqual({ received: true, duplicate: true });
    const { runs } = await app().state();
    expect(runs.filter((run) => run.id === event.id)).toHaveLength(1);
  });

  it('a body over maxBodyBytes with Content-Length → 413 PAYLOAD_TOO_LARGE', async () => {
    const request = delivery(createTestEvent('image.created', { blob: 'x'.repeat(RUNTIME_MAX_BODY_BYTES) }));
    const res = await app().send(request);
    expect([res.status, codeOf(res)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it('a body streamed without Content-Length → 413 once past maxBodyBytes, before the body ends', async () => {
    // Just past the limit: the server has read every byte sent when it answers, so closing the
    // connection afterwards (workerd does) cannot reset the answer away.
    const res = await app().sendUnfinished(delivery().headers, RUNTIME_MAX_BODY_BYTES + 1000);
    expect([res.status, codeOf(res)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it('another method → 405 with Allow: POST', async () => {
    const res = await app().send({ ...delivery(), method: 'GET', body: undefined });
    expect([res.status, codeOf(res), res.headers.allow]).toEqual([405, 'METHOD_NOT_ALLOWED', 'POST']);
  });
}
